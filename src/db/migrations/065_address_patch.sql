-- A partial update's addresses (a TGEN customers partial update, an NDJSON or CSV import line for an existing
-- customer): the list given is the customer's new list, and an address in it that names one of the customer's
-- current addresses by uuid (else, sent without a uuid, by externalId) patches that address: the fields it gives
-- replace (null clears), the others are kept (docs.tulip.com/tgen/customers_partialupdate: "addresses[0].uuid …
-- Required for patching"). Until this release such an address replaced the current one: a patch of its city emptied
-- its street, postal code and country. The same rule as patchAddresses in src/crm/customers/wire.ts (the API's PATCH
-- and bulk); this is the import's set-based apply (src/imports/store.ts, applyChunk), which stages addresses as
-- given since this release. Every address returned has every key (null, false for the booleans) but a uuid it has
-- not been given yet, which bulb_address_uuids (migration 027) assigns next. Each current address is patched once.
CREATE FUNCTION bulb_address_patch(incoming jsonb, current jsonb) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  blank  CONSTANT jsonb := '{"externalId": null, "address1": null, "address2": null, "city": null, "countryCode": null,
    "zoneCode": null, "postCode": null, "firstName": null, "lastName": null, "phone": null, "emailAddress": null,
    "type": null, "disabled": false, "isPrimary": false}';
  result jsonb := '[]';
  taken  bigint[] := '{}';
  a      jsonb;
  c      jsonb;
  o      bigint;
BEGIN
  IF incoming IS NULL THEN
    RETURN NULL;
  END IF;
  FOR a IN SELECT e FROM jsonb_array_elements(incoming) WITH ORDINALITY AS x(e, n) ORDER BY n LOOP
    c := NULL;
    o := NULL;
    IF nullif(a->>'uuid', '') IS NOT NULL THEN
      SELECT y.c, y.o INTO c, o FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE lower(y.c->>'uuid') = lower(a->>'uuid') AND NOT (y.o = ANY (taken)) ORDER BY y.o LIMIT 1;
    ELSIF nullif(a->>'externalId', '') IS NOT NULL THEN
      SELECT y.c, y.o INTO c, o FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE y.c->>'externalId' = a->>'externalId' AND NOT (y.o = ANY (taken)) ORDER BY y.o LIMIT 1;
    END IF;
    IF o IS NOT NULL THEN
      taken := taken || o;
    END IF;
    result := result || jsonb_build_array(blank || coalesce(c, '{}') || a);
  END LOOP;
  RETURN result;
END
$$;
