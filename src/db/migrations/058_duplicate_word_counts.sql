-- Possible duplicates (issue 25, precision at 1M): names one typo apart are two names, not a slip, when the
-- rarer of the two differing words is borne by many customers (alena/alina smith in one postal code scored 0.9).
-- Each word of 4+ letters of a stored profile's name becomes a counting key 'w:' || word in duplicate_keys (no
-- blocking key: src/crm/duplicates/normalize.ts, wordKeysOf), counted in duplicate_key_counts by the triggers of
-- migration 049 and walked by its index when the count changes step. Written here for the profiles already stored
-- (the refresher writes them from now on), under the refresher's advisory lock (refresh.ts): the refresher waits,
-- customer writes only queue. The stored pairs scored by the typo rule go back on the queue (one side each) to be
-- scored again; reads meanwhile serve them as they stand and say how many customers are still queued.
SELECT pg_advisory_xact_lock(740213517);

INSERT INTO duplicate_keys (key, customer_id)
SELECT DISTINCT 'w:' || w, p.customer_id
FROM duplicate_profiles p, unnest(string_to_array(p.name, ' ')) AS w
WHERE length(w) >= 4
ON CONFLICT DO NOTHING;

INSERT INTO duplicate_dirty (customer_id)
SELECT DISTINCT a FROM duplicate_pairs WHERE reasons::text LIKE '%one typo apart%'
ON CONFLICT DO NOTHING;
