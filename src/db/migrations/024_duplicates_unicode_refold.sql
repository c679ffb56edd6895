-- Possible duplicates: names and cities are now folded further (ø, ł, ß, æ, þ … written as o, l, ss, ae, th …)
-- and a name word of one Han character is a blocking key (src/crm/duplicates/normalize.ts). The active
-- customers whose profile or keys can change by that (a name or an address with a non-ASCII character) go
-- back on the refresher's queue; the others keep theirs.
INSERT INTO duplicate_dirty (customer_id)
SELECT id FROM customers
WHERE status = 'active' AND (coalesce(first_name, '') || coalesce(last_name, '') || addresses::text) ~ '[^[:ascii:]]'
ON CONFLICT DO NOTHING;
