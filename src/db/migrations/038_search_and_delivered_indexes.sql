-- bulb:outside-transaction (see src/db/migrate.ts: indexes built while customers and deliveries go on being written)
-- The customer search and the delivered deliveries list read what they find, not the table (issue 24, item 14;
-- test/crm/search-scale.test.ts and test/webhooks/delivered-scale.test.ts count their buffers at 1,000,000 rows).
--
-- GET /crm/customers?q=: q is a substring of the name, the externalId or an email (LIKE '%q%'), which no btree can
-- find: a page for a rare term walked the whole table (24,000 pages at 1M customers). A pg_trgm GIN index on one text
-- holding the three (name, externalId, emails, newline-separated) finds the rows whose text has the term's trigrams;
-- the query keeps its three exact conditions as a filter (src/crm/customers/store.ts). A common term still walks the
-- primary key and stops at a page's worth of matches: the statement is planned for its value (not prepared), so the
-- planner weighs the term against the index's statistics. The function names the expression, so that the index and
-- the query spell it alike (array_to_string is only stable in general; on text[] it is immutable).
-- Pending list (GIN fast update) bounded to 256 kB: inserts go on being batched into the index, and a search reads about
-- 32 pending pages at most until the next (auto)vacuum or analyze merges them.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE OR REPLACE FUNCTION customer_search_text(first_name text, last_name text, external_id text, email_keys text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN lower(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) || E'\n' || lower(external_id) || E'\n' || array_to_string(email_keys, ' ');
CREATE INDEX CONCURRENTLY IF NOT EXISTS customers_search ON customers
  USING gin (customer_search_text(first_name, last_name, external_id, email_keys) gin_trgm_ops) WITH (gin_pending_list_limit = 256);

-- GET …/webhooks/deliveries?status=delivered: migration 021 left delivered deliveries out of the status index (most
-- rows are), so their list walked the primary key newest first, through every pending delivery newer than them: the
-- whole backlog behind an endpoint that is down (24,000–26,500 pages for 900,000 pending). Their own partial index, in id
-- order: one entry more per delivery, written with its result (which rewrites the row's index entries anyway).
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_delivered ON webhook_deliveries (id) WHERE status = 'delivered';
