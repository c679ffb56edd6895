-- Marking a customer for the duplicates refresher never waits (found by a probe on PostgreSQL, 2026-11-30: an import
-- beside two loops of bulk upserts of its customers applied no line in 5 minutes; 24 deadlocks). With one queue row per
-- customer (a primary key), a write re-queuing a customer whose row the refresher had claimed (deleted, not committed)
-- waited for the refresher's whole batch, holding its customers; and the refresher, re-queuing the bearers of a key or
-- name that changed step, waited for a write's uncommitted queue row: a deadlock (bulk upserts against the refresher
-- every few seconds). Now the queue may hold a customer more than once. A write locks the customer's committed queue
-- rows it can lock at once (FOR KEY SHARE SKIP LOCKED: the refresher's claim, FOR UPDATE SKIP LOCKED, then leaves them
-- until the write has committed, as migration 070 asks), and inserts a row of its own for a customer with none it could
-- lock (none queued, or claimed by a refresher batch in progress, which may read the customer before this write
-- commits: the new row brings it back). Nothing conflicts on a key, so neither a write nor the refresher waits on the queue.
ALTER TABLE duplicate_dirty DROP CONSTRAINT duplicate_dirty_pkey;
CREATE INDEX duplicate_dirty_customer ON duplicate_dirty (customer_id);

CREATE OR REPLACE FUNCTION duplicate_mark_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH changed AS MATERIALIZED (
    SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE (n.first_name, n.last_name, n.emails, n.phones, n.addresses, n.status)
      IS DISTINCT FROM (o.first_name, o.last_name, o.emails, o.phones, o.addresses, o.status)
  ), held AS MATERIALIZED (
    SELECT q.customer_id FROM duplicate_dirty q WHERE q.customer_id IN (SELECT id FROM changed) FOR KEY SHARE OF q SKIP LOCKED
  )
  INSERT INTO duplicate_dirty (customer_id)
  SELECT id FROM changed WHERE id NOT IN (SELECT customer_id FROM held) ORDER BY id;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION duplicate_mark_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO duplicate_dirty (customer_id) SELECT id FROM new_rows;
  RETURN NULL;
END $$;
