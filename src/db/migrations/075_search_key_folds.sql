-- bulb:outside-transaction (see src/db/migrate.ts: the index is built while customers go on being written)
-- The customer search's fold, again, under new names, so that every database ends with one definition:
--  - a Turkish dotless ı is i and a German ß (and capital ẞ) ss, on both sides, as 074 made a final ς σ: "IŞIK" (lower
--    case "işik") did not find "Işık" ("ışık"), nor "GROSSMANN" "Großmann" (found by a probe, 2026-11-29);
--  - a database that ran 074 as first released (2026-11-29 15:12–15:31) folded a customer without an externalId to a
--    null text, so no search found one: 074 was corrected in place, which such a database never runs again.
-- New names rather than CREATE OR REPLACE: the old index holds what the old functions computed, and replaced under it
-- it would answer with stale keys until dropped. The old functions stay for processes of the previous version during
-- an upgrade (their searches walk the table once the old index is dropped, and find the same rows).
CREATE OR REPLACE FUNCTION customer_search_key(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN replace(translate(lower(t), 'ςı', 'σi'), 'ß', 'ss');
CREATE OR REPLACE FUNCTION customer_search_keys(first_name text, last_name text, external_id text, email_keys text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN customer_search_key(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) || E'\n' || customer_search_key(coalesce(external_id, '')) || E'\n' || customer_search_key(array_to_string(email_keys, ' '));
CREATE INDEX CONCURRENTLY IF NOT EXISTS customers_search_keys ON customers
  USING gin (customer_search_keys(first_name, last_name, external_id, email_keys) gin_trgm_ops) WITH (gin_pending_list_limit = 256);
DROP INDEX CONCURRENTLY IF EXISTS customers_search_folded;
