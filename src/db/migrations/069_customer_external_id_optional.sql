-- A customer's externalId is optional, as Tulip documents it (docs.tulip.com/tgen/customers: "externalId … Required:
-- No"; docs.tulip.com/integrating/webhooks/automatingexternalidassignment: a customer is created, its uuid sent by
-- webhook, and the integrator's system sets the externalId afterwards). A create without one was a 400. The column's
-- UNIQUE constraint stays: any number of customers may have none (NULLs are distinct), no two share one.
-- Dropping NOT NULL changes the catalogue only (no rewrite, no scan): a brief lock, as any ALTER.
ALTER TABLE customers ALTER COLUMN external_id DROP NOT NULL;

-- The search text of migration 038 was NULL for a customer without an externalId (lower(NULL) nulls the whole
-- concatenation), which no search could find. For every customer stored so far (each has one) the text is unchanged,
-- so the index built from the old definition stays true without a rebuild.
CREATE OR REPLACE FUNCTION customer_search_text(first_name text, last_name text, external_id text, email_keys text[]) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN lower(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) || E'\n' || lower(coalesce(external_id, '')) || E'\n' || array_to_string(email_keys, ' ');
