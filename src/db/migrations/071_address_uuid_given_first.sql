-- An address sent without a uuid takes a current address's uuid (by externalId, else by identical content), but never
-- one another address of the same list names: every uuid the list gives is taken before any is matched. The list
-- [{…the address U as stored…}, {"uuid": U, …another…}] gave U to both (migration 068 counted as taken only the uuids of
-- the addresses before), and the customer was stored with two addresses of one uuid, through PUT, PATCH, bulk and
-- imports alike (found by a probe, 2026-11-29): sent back as read, the list was then refused. Uuids are compared
-- lower-cased, as a current address stored before migration 068 may keep another spelling.
CREATE OR REPLACE FUNCTION bulb_address_uuids(incoming jsonb, current jsonb) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  result jsonb := '[]';
  taken  text[];
  a      jsonb;
  u      text;
BEGIN
  IF incoming IS NULL THEN
    RETURN NULL;
  END IF;
  taken := ARRAY(SELECT lower(e->>'uuid') FROM jsonb_array_elements(incoming) AS x(e) WHERE nullif(e->>'uuid', '') IS NOT NULL);
  FOR a IN SELECT e FROM jsonb_array_elements(incoming) WITH ORDINALITY AS x(e, o) ORDER BY o LOOP
    u := lower(nullif(a->>'uuid', ''));
    IF u IS NULL AND nullif(a->>'externalId', '') IS NOT NULL THEN
      SELECT c->>'uuid' INTO u FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE c->>'externalId' = a->>'externalId' AND c->>'uuid' IS NOT NULL AND NOT (lower(c->>'uuid') = ANY (taken)) ORDER BY o LIMIT 1;
    END IF;
    IF u IS NULL THEN
      SELECT c->>'uuid' INTO u FROM jsonb_array_elements(coalesce(current, '[]')) WITH ORDINALITY AS y(c, o)
      WHERE (c - 'uuid') = (a - 'uuid') AND c->>'uuid' IS NOT NULL AND NOT (lower(c->>'uuid') = ANY (taken)) ORDER BY o LIMIT 1;
    END IF;
    IF u IS NULL THEN
      u := gen_random_uuid()::text;
    END IF;
    taken := taken || lower(u);
    result := result || jsonb_build_array(a || jsonb_build_object('uuid', u));
  END LOOP;
  RETURN result;
END
$$;
