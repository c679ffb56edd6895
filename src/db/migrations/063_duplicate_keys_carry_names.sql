-- Possible duplicates at 5M customers (issue 25): the candidate search looked up each candidate's name in
-- duplicate_profiles' primary key (one random probe per candidate, into an index that outgrows shared_buffers at
-- 5M). Each blocking key now carries its bearer's folded name, in duplicate_keys' primary key (INCLUDE): the probe
-- that finds a candidate returns its name from the leaf it reads anyway, and only the candidates that pass the name
-- sift are read whole (src/crm/duplicates/store.ts, candidates). The refresher writes a customer's keys with its
-- name, and writes them again when the name changes (refresh.ts). Measured: the fold 21% faster into 1.25M and into
-- 5M alike (docs/duplicates.md); what grows with the base is the candidates themselves, not these probes.
-- The table is rebuilt with the names of the profiles (a new table filled in one statement, its indexes built once:
-- an UPDATE of every row would write each row twice and leave the table half dead). Under the refresher's advisory
-- lock, as migrations 058, 061 and 062: the refresher waits, customer writes only queue; nothing else reads keys.
SELECT pg_advisory_xact_lock(740213517);

ALTER TABLE duplicate_keys RENAME TO duplicate_keys_before_063;
ALTER INDEX duplicate_keys_pkey RENAME TO duplicate_keys_before_063_pkey;
ALTER INDEX duplicate_keys_customer RENAME TO duplicate_keys_before_063_customer;

CREATE TABLE duplicate_keys (
  key         text NOT NULL,   -- e:<email> | p:<E.164> | n:<name word>|z:<postal code> | … | w:<word of the name>
  customer_id bigint NOT NULL,
  name        text NOT NULL    -- the bearer's folded name (duplicate_profiles.name), for the candidate search's sift
);
-- Every stored key has its profile (the refresher writes and drops both together); one without would be dropped.
INSERT INTO duplicate_keys (key, customer_id, name)
SELECT k.key, k.customer_id, p.name FROM duplicate_keys_before_063 k JOIN duplicate_profiles p ON p.customer_id = k.customer_id;
DROP TABLE duplicate_keys_before_063;

ALTER TABLE duplicate_keys ADD CONSTRAINT duplicate_keys_pkey PRIMARY KEY (key, customer_id) INCLUDE (name);
CREATE INDEX duplicate_keys_customer ON duplicate_keys (customer_id);

-- The counts' triggers (migrations 049, 061) went with the old table.
CREATE TRIGGER duplicate_keys_count_insert AFTER INSERT ON duplicate_keys
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_keys_counted();
CREATE TRIGGER duplicate_keys_count_delete AFTER DELETE ON duplicate_keys
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_keys_counted();

ANALYZE duplicate_keys;
