-- An address uuid is stored in its canonical, lower-case form, whatever case the writer sent it in (RFC 9562: UUIDs
-- are output in lower case). Matching a current address by uuid was already case-insensitive (patchAddresses,
-- bulb_address_patch), but the uuid as given was kept: a PATCH naming an address as C8B22309-… stored that spelling,
-- and every later read served a different string for the same address. The same function as migration 027, but for
-- lower(). Addresses stored before keep their spelling.
CREATE OR REPLACE FUNCTION bulb_address_uuids(incoming jsonb, current jsonb) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
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
    u := lower(nullif(a->>'uuid', ''));
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
