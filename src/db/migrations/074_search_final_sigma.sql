-- bulb:outside-transaction (see src/db/migrate.ts: the index is built while customers go on being written)
-- The customer search folds a Greek final sigma (ς) into σ, on both sides: PostgreSQL's lower() makes a capital Σ
-- σ wherever it stands, so "ΝΙΚΌΛΑΟΣ" did not find "Νικόλαος" (stored with ς), nor "νικολαος" a name stored in
-- capitals. customer_search_fold is the one fold of the index's text and of the query's terms and exact conditions
-- (src/crm/customers/store.ts); the index of migrations 038 and 069 (a customer without an externalId has one too) is
-- built again on the folded text, then the old one dropped.
CREATE OR REPLACE FUNCTION customer_search_fold(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN translate(lower(t), 'ς', 'σ');
CREATE OR REPLACE FUNCTION customer_search_folded(first_name text, last_name text, external_id text, email_keys text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN customer_search_fold(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) || E'\n' || customer_search_fold(coalesce(external_id, '')) || E'\n' || customer_search_fold(array_to_string(email_keys, ' '));
CREATE INDEX CONCURRENTLY IF NOT EXISTS customers_search_folded ON customers
  USING gin (customer_search_folded(first_name, last_name, external_id, email_keys) gin_trgm_ops) WITH (gin_pending_list_limit = 256);
DROP INDEX CONCURRENTLY IF EXISTS customers_search;
