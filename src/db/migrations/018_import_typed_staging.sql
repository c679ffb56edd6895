-- Typed import staging: a staged line carries the customer's columns instead of the whole item as jsonb,
-- so a chunk is applied by INSERT … SELECT / UPDATE … FROM straight out of import_rows (no jsonb
-- round trip, no rows through the worker). `fields` says which fields the line carries (2026-11 patch
-- semantics: a field it does not carry is kept on an existing customer); a carried null is stored as NULL
-- and means "clear". Bits: 1 firstName, 2 lastName, 4 emails, 8 phones, 16 addresses, 32 socialProfiles,
-- 64 loyaltyTier. email_keys are the lower-cased emails when the line carries emails. A refused line has
-- only errors.
ALTER TABLE import_rows
  ADD COLUMN external_id     text,
  ADD COLUMN fields          smallint,
  ADD COLUMN first_name      text,
  ADD COLUMN last_name       text,
  ADD COLUMN emails          jsonb,
  ADD COLUMN phones          jsonb,
  ADD COLUMN addresses       jsonb,
  ADD COLUMN social_profiles jsonb,
  ADD COLUMN loyalty_tier    text,
  ADD COLUMN email_keys      text[];

-- Lines of imports still in flight when this runs keep their meaning.
UPDATE import_rows SET
  external_id = item->>'externalId',
  fields = (CASE WHEN item ? 'firstName' THEN 1 ELSE 0 END) | (CASE WHEN item ? 'lastName' THEN 2 ELSE 0 END)
    | (CASE WHEN item ? 'emails' THEN 4 ELSE 0 END) | (CASE WHEN item ? 'phones' THEN 8 ELSE 0 END)
    | (CASE WHEN item ? 'addresses' THEN 16 ELSE 0 END) | (CASE WHEN item ? 'socialProfiles' THEN 32 ELSE 0 END)
    | (CASE WHEN item ? 'loyaltyTier' THEN 64 ELSE 0 END),
  first_name = item->>'firstName',
  last_name = item->>'lastName',
  emails = nullif(item->'emails', 'null'),
  phones = nullif(item->'phones', 'null'),
  addresses = nullif(item->'addresses', 'null'),
  social_profiles = nullif(item->'socialProfiles', 'null'),
  loyalty_tier = item->>'loyaltyTier',
  email_keys = CASE WHEN item ? 'emails' THEN ARRAY(
    SELECT k FROM (SELECT lower(e->>'email') AS k, min(o) AS o
                   FROM jsonb_array_elements(coalesce(nullif(item->'emails', 'null'), '[]')) WITH ORDINALITY AS x(e, o) GROUP BY 1) y
    ORDER BY o) END
WHERE item IS NOT NULL;

ALTER TABLE import_rows DROP COLUMN item;
