-- Several lines of one import chunk for one customer are folded into one write (src/imports/store.ts, applyChunk).
-- Their address lists must fold as if applied one after another: each list patches the addresses the one before left
-- (bulb_address_patch, migration 065), and gets its uuids against them (bulb_address_uuids, migration 027). Until this
-- release the last line's list was patched onto the stored addresses alone, so an earlier line's change to an address
-- that a later line also named (`{"uuid":U,"city":"Boston"}` then `{"uuid":U,"address2":"Apt 2"}`) was lost.
-- `lists`: a JSON array of the lines' lists in line order (a null element, a line clearing its addresses, is []).
CREATE FUNCTION bulb_address_fold(lists jsonb, current jsonb) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  l jsonb;
  r jsonb := current;
BEGIN
  FOR l IN SELECT e FROM jsonb_array_elements(lists) WITH ORDINALITY AS x(e, o) ORDER BY o LOOP
    l := CASE WHEN jsonb_typeof(l) = 'array' THEN l ELSE '[]' END;
    r := bulb_address_uuids(bulb_address_patch(l, r), r);
  END LOOP;
  RETURN r;
END
$$;
