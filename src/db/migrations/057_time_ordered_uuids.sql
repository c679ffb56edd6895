-- New rows of the tables that grow with the data get time-ordered uuids (version 7, RFC 9562: 48 bits of Unix
-- milliseconds, then 74 random bits) instead of random ones (version 4). Each of these tables has a unique index
-- on uuid; a random uuid lands on a random leaf of it, so once the indexes together outgrow shared_buffers every
-- insert reads a leaf from the OS cache or the disk and dirties it, and the first change of a page after each
-- checkpoint writes the whole page to the WAL. A time-ordered uuid lands on the rightmost leaves, which stay in
-- memory (docs/scaling.md "Time-ordered uuids"). Existing uuids keep their values; a uuid's first 48 bits now
-- tell when the row was made (as its createdAt already does).
CREATE FUNCTION bulb_uuid7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
    PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
    52, 1), 53, 1), 'hex')::uuid
$$;

-- A default is catalog data: no rewrite, a brief lock per table.
DO $$
DECLARE t text;
BEGIN
  FOR t IN SELECT c.table_name FROM information_schema.columns c
    WHERE c.table_schema = current_schema() AND c.column_name = 'uuid' AND c.column_default = 'gen_random_uuid()'
      AND c.table_name = ANY (ARRAY['customers', 'events', 'webhook_deliveries', 'webhook_attempts', 'orders', 'follow_ups',
        'notes', 'messages', 'preferences', 'product_shares', 'customer_associates'])
  LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN uuid SET DEFAULT bulb_uuid7()', t);
  END LOOP;
END $$;
