-- Possible duplicates: a word of the name with a street address (address line and postal code) is now a
-- blocking key (src/crm/duplicates/normalize.ts), the one that still brings a duplicate together once its
-- name's keys with a big city or postal code are past their cap. Active customers with an address line go
-- back on the refresher's queue to gain it; reads meanwhile serve the pairs as they stand and say how many
-- customers are still queued.
INSERT INTO duplicate_dirty (customer_id)
SELECT id FROM customers
WHERE status = 'active' AND addresses::text LIKE '%"address1"%'
ON CONFLICT DO NOTHING;
