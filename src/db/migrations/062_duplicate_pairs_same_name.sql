-- Possible duplicates at 5M customers (issue 25): when a name becomes a step more common (commonNameFloor), the
-- stored pairs of two bearers of it are re-scored in place (refresh.ts, rescoreCommoner). They were found by walking
-- every bearer of the name (its index, then each bearer's profile and pairs): a step of a name borne by thousands
-- walked thousands of profiles for the few pairs among them, 230 µs per customer of a 300,000-customer import into
-- 5,000,000 (as much as the candidate search) and more the larger the import (more names step). A pair of two
-- equal names now says which (same_name), indexed where set: a step reads the name's pairs, however many bear it.
-- Kept by the refresher, which writes every pair (insertPairs); a customer whose name changes is refreshed, its
-- pairs dropped and written again. Under the refresher's advisory lock, as migrations 058 and 061.
SELECT pg_advisory_xact_lock(740213517);

ALTER TABLE duplicate_pairs ADD COLUMN same_name text;

UPDATE duplicate_pairs d SET same_name = pa.name
FROM duplicate_profiles pa, duplicate_profiles pb
WHERE pa.customer_id = d.a AND pb.customer_id = d.b AND pa.name = pb.name;

CREATE INDEX duplicate_pairs_same_name ON duplicate_pairs (same_name) WHERE same_name IS NOT NULL;
