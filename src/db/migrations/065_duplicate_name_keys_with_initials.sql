-- Possible duplicates at 5M customers (issue 25): a name key was one word of the name with a place
-- (`n:maria|z:28001`), so every Maria at a postal code was a candidate of every other, and their number grew with
-- the base (6.3 candidate rows per customer at 1.25M on the bench's data, 12.6 at 5M: the fold's cost grew 1.4×
-- for 4× the customers). A name key now carries, for each other word of the name, the sound class of its first
-- letter (`n:maria+j|z:28001` for Maria Garcia; a name of one word keeps `n:maria|z:…`): a typo in a word, a word
-- added or left out, or swapped first and last names still meet on the other word (src/crm/duplicates/normalize.ts,
-- keysOf and initialClass; docs/duplicates.md).
-- The stored name keys are rewritten here from the names the keys carry (migration 063), exactly as keysOf writes
-- them now: the words of a customer's name keys, in the name's order, the first five (NAME_KEY_WORDS); each with
-- the class of every other one. No customer is refolded. A new table filled in one statement, as 063 (an UPDATE
-- would write about half the rows twice and leave them dead), under the refresher's advisory lock: the refresher
-- waits, customer writes only queue; nothing else reads the keys. The pairs stay as they are: they were found
-- through a wider net, and are scored again whenever either customer is.
SELECT pg_advisory_xact_lock(740213517);

-- The same as initialClass() in normalize.ts (test/crm/duplicates.test.ts holds the two to each other).
CREATE FUNCTION duplicate_initial_class(w text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN w LIKE 'ph%' THEN 'f' ELSE CASE left(w, 1)
    WHEN 'a' THEN 'a' WHEN 'e' THEN 'a' WHEN 'i' THEN 'a' WHEN 'o' THEN 'a' WHEN 'u' THEN 'a' WHEN 'y' THEN 'a'
    WHEN 'c' THEN 'k' WHEN 'q' THEN 'k' WHEN 'z' THEN 's' WHEN 'g' THEN 'j' WHEN 'w' THEN 'v'
    ELSE left(w, 1) END END
$$;

ALTER TABLE duplicate_keys RENAME TO duplicate_keys_before_065;
ALTER INDEX duplicate_keys_pkey RENAME TO duplicate_keys_before_065_pkey;
ALTER INDEX duplicate_keys_customer RENAME TO duplicate_keys_before_065_customer;

CREATE TABLE duplicate_keys (
  key         text NOT NULL,   -- e:<email> | p:<E.164> | n:<name word>+<class>|z:<postal code> | … | w:<word of the name>
  customer_id bigint NOT NULL,
  name        text NOT NULL    -- the bearer's folded name (duplicate_profiles.name), for the candidate search's sift
);

INSERT INTO duplicate_keys (key, customer_id, name)
SELECT key, customer_id, name FROM duplicate_keys_before_065 WHERE key NOT LIKE 'n:%';

-- nk: each name key split into its word and its place (`|z:…`, `|s:…`, `|c:…`; folded words hold no `|`).
-- ws: each customer's key words in the order of its name, the first five.
INSERT INTO duplicate_keys (key, customer_id, name)
WITH nk AS MATERIALIZED (
  SELECT customer_id, name, substring(key FROM '^n:([^|]*)\|') AS w, substring(key FROM '^n:[^|]*(\|.*)$') AS place
  FROM duplicate_keys_before_065 WHERE key LIKE 'n:%'
), ws AS MATERIALIZED (
  SELECT customer_id, (array_agg(w ORDER BY array_position(string_to_array(name, ' '), w)))[1:5] AS words
  FROM (SELECT DISTINCT customer_id, name, w FROM nk) d GROUP BY customer_id
)
SELECT DISTINCT 'n:' || nk.w || coalesce('+' || duplicate_initial_class(o.w), '') || nk.place, nk.customer_id, nk.name
FROM nk JOIN ws ON ws.customer_id = nk.customer_id
CROSS JOIN LATERAL unnest(CASE WHEN cardinality(ws.words) = 1 THEN ARRAY[NULL::text] ELSE array_remove(ws.words, nk.w) END) AS o(w)
WHERE nk.w = ANY (ws.words);

DROP TABLE duplicate_keys_before_065;

ALTER TABLE duplicate_keys ADD CONSTRAINT duplicate_keys_pkey PRIMARY KEY (key, customer_id) INCLUDE (name);
CREATE INDEX duplicate_keys_customer ON duplicate_keys (customer_id);

-- The counts' triggers (migrations 049, 061) went with the old table. The counts themselves ('w:' keys and names)
-- are unchanged: the 'w:' rows were copied as they were.
CREATE TRIGGER duplicate_keys_count_insert AFTER INSERT ON duplicate_keys
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_keys_counted();
CREATE TRIGGER duplicate_keys_count_delete AFTER DELETE ON duplicate_keys
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_keys_counted();

ANALYZE duplicate_keys;
