-- A customer written while it was already on the duplicates queue locks its queue row (ON CONFLICT DO UPDATE), and
-- the refresher skips locked rows (claimDirty: FOR UPDATE SKIP LOCKED): it takes the customer once the write has
-- committed, and reads it as written. With DO NOTHING the write left the committed queue row as it was, took no
-- lock, and the refresher could claim that row and read the customer before the write committed: the change was
-- never folded in, and pendingCustomers said 0 (found by a probe on PostgreSQL, 2026-11-29: 5 of 1,200 customers
-- patched twice in a row kept pairs built from an email they no longer had).
CREATE OR REPLACE FUNCTION duplicate_mark_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO duplicate_dirty (customer_id)
  SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
  WHERE (n.first_name, n.last_name, n.emails, n.phones, n.addresses, n.status)
    IS DISTINCT FROM (o.first_name, o.last_name, o.emails, o.phones, o.addresses, o.status)
  ORDER BY n.id
  ON CONFLICT (customer_id) DO UPDATE SET customer_id = excluded.customer_id;
  RETURN NULL;
END $$;
