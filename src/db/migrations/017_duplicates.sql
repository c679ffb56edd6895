-- Possible duplicates (SPEC §14), kept current incrementally:
--   customers change → statement triggers mark them in duplicate_dirty (set-based, only when a field the
--   scoring reads changed) → the refresher (src/crm/duplicates/refresh.ts) recomputes their normalised
--   profile (emails, E.164 phones, name, postal codes, cities) and their candidate pairs.
-- A request never scans the customer base: it reads duplicate_pairs by index.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE duplicate_dirty (customer_id bigint PRIMARY KEY);

-- One row per active customer.
CREATE TABLE duplicate_profiles (
  customer_id  bigint PRIMARY KEY REFERENCES customers(id),
  name         text NOT NULL,      -- lower case, accents and punctuation removed, single spaces
  emails       text[] NOT NULL,    -- trimmed, lower case
  phones       text[] NOT NULL,    -- E.164
  postal_codes text[] NOT NULL,    -- upper case, no spaces or dashes
  cities       text[] NOT NULL     -- folded like the name
);
CREATE INDEX duplicate_profiles_name ON duplicate_profiles (name); -- how common a name is

-- Blocking keys: two customers are compared only when they share one (an email, a phone, or a word of
-- the name together with a postal code or a city), found by one btree join; the score then uses
-- pg_trgm's similarity() on the whole names. (GIN indexes were measured slower here: a pending list
-- scanned on every search after bulk inserts, and trigram searches re-checking hundreds of rows.)
CREATE TABLE duplicate_keys (
  key         text NOT NULL,       -- e:<email> | p:<E.164> | n:<name word>|z:<postal code> | n:<name word>|c:<city>
  customer_id bigint NOT NULL,
  PRIMARY KEY (key, customer_id)
);
CREATE INDEX duplicate_keys_customer ON duplicate_keys (customer_id);

-- Candidate pairs (a < b) scoring at least the stored floor; score in thousandths (0..1000).
CREATE TABLE duplicate_pairs (
  a       bigint NOT NULL REFERENCES customers(id),
  b       bigint NOT NULL REFERENCES customers(id),
  score   smallint NOT NULL,
  reasons jsonb NOT NULL,
  PRIMARY KEY (a, b)
);
CREATE INDEX duplicate_pairs_b ON duplicate_pairs (b);
CREATE INDEX duplicate_pairs_score ON duplicate_pairs (score DESC, a, b);

CREATE FUNCTION duplicate_mark_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO duplicate_dirty (customer_id) SELECT id FROM new_rows ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE FUNCTION duplicate_mark_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO duplicate_dirty (customer_id)
  SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
  WHERE (n.first_name, n.last_name, n.emails, n.phones, n.addresses, n.status)
    IS DISTINCT FROM (o.first_name, o.last_name, o.emails, o.phones, o.addresses, o.status)
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER customers_duplicates_insert AFTER INSERT ON customers
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_mark_inserted();
CREATE TRIGGER customers_duplicates_update AFTER UPDATE ON customers
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_mark_updated();

-- Customers that existed before this migration get their profiles on the first refresh.
INSERT INTO duplicate_dirty (customer_id) SELECT id FROM customers WHERE status = 'active';
