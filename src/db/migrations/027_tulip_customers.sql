-- Tulip's customer and address shapes (SPEC §16, docs/tulip-customers.md).
-- 1. The customer's Tulip fields. `disabled` is no column: it reads `status <> 'active'`; a customer
--    deactivated by `disabled: true` is status 'disabled' with merged_into NULL.
ALTER TABLE customers
  ADD COLUMN prefix                 text,
  ADD COLUMN suffix                 text,
  ADD COLUMN exclude_from_campaigns boolean NOT NULL DEFAULT false,
  ADD COLUMN image                  text,
  ADD COLUMN attributes             jsonb NOT NULL DEFAULT '[]';  -- [{attributeExternalId, value, languageExternalId}]

-- 2. Custom attributes (Tulip's /crm/customerAttributes): the keys a customer's attribute values name.
CREATE TABLE customer_attributes (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  external_id text NOT NULL UNIQUE,
  type        text NOT NULL DEFAULT 'string',
  description text,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- 3. Every address has its own uuid, kept across writes. Given the addresses a write sends and the customer's
--    current ones, returns the addresses to store: one sent with a uuid keeps it; else the current address with
--    the same externalId, else the first current one with the same content, gives its uuid (each current uuid
--    once); else a new uuid. The one rule of every writer (API, bulk, imports).
CREATE FUNCTION bulb_address_uuids(incoming jsonb, current jsonb) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  result jsonb := '[]';
  taken  text[] := '{}';
  a      jsonb;
  u      text;
BEGIN
  IF incoming IS NULL THEN
    RETURN NULL;
  END IF;
  FOR a IN SELECT e FROM jsonb_array_elements(incoming) WITH ORDINALITY AS x(e, o) ORDER BY o LOOP
    u := nullif(a->>'uuid', '');
    IF u IS NULL AND nullif(a->>'externalId', '') IS NOT NULL THEN
      SELECT c->>'uuid' INTO u FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE c->>'externalId' = a->>'externalId' AND c->>'uuid' IS NOT NULL AND NOT (c->>'uuid' = ANY (taken)) ORDER BY o LIMIT 1;
    END IF;
    IF u IS NULL THEN
      SELECT c->>'uuid' INTO u FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE (c - 'uuid') = (a - 'uuid') AND c->>'uuid' IS NOT NULL AND NOT (c->>'uuid' = ANY (taken)) ORDER BY o LIMIT 1;
    END IF;
    IF u IS NULL THEN
      u := gen_random_uuid()::text;
    END IF;
    taken := taken || u;
    result := result || jsonb_build_array(a || jsonb_build_object('uuid', u));
  END LOOP;
  RETURN result;
END
$$;

-- 4. Stored addresses move from Bulb's earlier names (line1, line2, city, region, postalCode, country, type,
--    isPrimary) to Tulip's, every key present, nothing dropped: a 2-letter country becomes its upper-case
--    countryCode; any other country value (a name, a 3-letter code) is kept as it was under countryCode (a
--    write that sends it back is refused until it is corrected); a region of 1-3 letters/digits beside a
--    2-letter country becomes the ISO 3166-2 form (CA with US: US-CA), any other region is kept as zoneCode.
--    `withUuid`: stored customers get a uuid per address; staged import lines get theirs when applied.
CREATE FUNCTION bulb_tulip_address(a jsonb, with_uuid boolean) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT jsonb_build_object(
    'uuid', CASE WHEN with_uuid THEN to_jsonb(gen_random_uuid()::text) ELSE 'null'::jsonb END,
    'externalId', NULL,
    'address1', coalesce(a->'line1', 'null'),
    'address2', coalesce(a->'line2', 'null'),
    'city', coalesce(a->'city', 'null'),
    'countryCode', CASE WHEN a->>'country' ~ '^[A-Za-z]{2}$' THEN to_jsonb(upper(a->>'country')) ELSE coalesce(a->'country', 'null') END,
    'zoneCode', CASE WHEN a->>'country' ~ '^[A-Za-z]{2}$' AND a->>'region' ~ '^[A-Za-z0-9]{1,3}$'
                     THEN to_jsonb(upper(a->>'country') || '-' || upper(a->>'region'))
                     ELSE coalesce(a->'region', 'null') END,
    'postCode', coalesce(a->'postalCode', 'null'),
    'firstName', NULL, 'lastName', NULL, 'phone', NULL, 'emailAddress', NULL,
    'type', coalesce(a->'type', 'null'),
    'disabled', false,
    'isPrimary', coalesce(a->'isPrimary', 'false'))
$$;

CREATE FUNCTION bulb_tulip_addresses(list jsonb, with_uuid boolean) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT CASE WHEN jsonb_typeof(list) <> 'array' THEN list ELSE
    (SELECT coalesce(jsonb_agg(bulb_tulip_address(e, with_uuid) ORDER BY o), '[]') FROM jsonb_array_elements(list) WITH ORDINALITY AS x(e, o)) END
$$;

UPDATE customers SET addresses = bulb_tulip_addresses(addresses, true) WHERE addresses <> '[]';
UPDATE import_rows SET addresses = bulb_tulip_addresses(addresses, false) WHERE addresses IS NOT NULL AND addresses <> '[]';

DROP FUNCTION bulb_tulip_addresses(jsonb, boolean);
DROP FUNCTION bulb_tulip_address(jsonb, boolean);
