-- A partial update's address named by externalId patches the current address with that externalId, unless another
-- address of the list names that one by its uuid: the uuid claims it first. Both patched it until now (migration 065),
-- so both carried its uuid, and the customer was stored with two addresses of one uuid through imports and bulk
-- (`[{"externalId":"work",…}, {"uuid":<work's uuid>,"externalId":"other",…}]`; found in review, 2026-11-29, after
-- migration 071 had closed the same hole for addresses matched by content). The address named by externalId is then a
-- new one (bulb_address_uuids gives it a new uuid). patchAddresses (wire.ts) is the same rule for the API's PATCH.
CREATE OR REPLACE FUNCTION bulb_address_patch(incoming jsonb, current jsonb) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  blank  CONSTANT jsonb := '{"externalId": null, "address1": null, "address2": null, "city": null, "countryCode": null,
    "zoneCode": null, "postCode": null, "firstName": null, "lastName": null, "phone": null, "emailAddress": null,
    "type": null, "disabled": false, "isPrimary": false}';
  result jsonb := '[]';
  taken  bigint[] := '{}';
  named  text[];
  a      jsonb;
  c      jsonb;
  o      bigint;
BEGIN
  IF incoming IS NULL THEN
    RETURN NULL;
  END IF;
  named := ARRAY(SELECT lower(e->>'uuid') FROM jsonb_array_elements(incoming) AS x(e) WHERE nullif(e->>'uuid', '') IS NOT NULL);
  FOR a IN SELECT e FROM jsonb_array_elements(incoming) WITH ORDINALITY AS x(e, n) ORDER BY n LOOP
    c := NULL;
    o := NULL;
    IF nullif(a->>'uuid', '') IS NOT NULL THEN
      SELECT y.c, y.o INTO c, o FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE lower(y.c->>'uuid') = lower(a->>'uuid') AND NOT (y.o = ANY (taken)) ORDER BY y.o LIMIT 1;
    ELSIF nullif(a->>'externalId', '') IS NOT NULL THEN
      SELECT y.c, y.o INTO c, o FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE y.c->>'externalId' = a->>'externalId' AND NOT (y.o = ANY (taken))
        AND NOT (coalesce(lower(y.c->>'uuid'), '') = ANY (named)) ORDER BY y.o LIMIT 1;
    END IF;
    IF o IS NOT NULL THEN
      taken := taken || o;
    END IF;
    result := result || jsonb_build_array(blank || coalesce(c, '{}') || a);
  END LOOP;
  RETURN result;
END
$$;
