-- bulb:outside-transaction (see src/db/migrate.ts: indexes built while deliveries go on being written)
-- The admin lists of deliveries (GET …/webhooks/deliveries) read what they list (src/webhooks/store.ts,
-- test/webhooks/log-lists.test.ts). A subscription's deliveries, whatever their status, had no index leading
-- with the subscription (webhook_deliveries_due holds only pending ones), so a page for a subscription walked
-- the primary key through every other subscription's deliveries: the whole table for one with few.
--
-- Every index on webhook_deliveries is written again at each status change (a result is not a heap-only
-- update), so the status index is reshaped rather than a whole index added: it keeps the statuses that are
-- few (pending, failed, cancelled), and a delivered one, most rows, no longer gets an entry when its result is
-- written. A list of delivered deliveries walks the primary key instead, where nearly every row is one.
-- Per delivered delivery the count of entries is as before: one more in webhook_deliveries_sub when it is inserted,
-- one fewer in webhook_deliveries_next (below).
-- (The new status index is built under a name of its own, then takes the old one's name: run again from any
-- statement, these end the same.)
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_sub ON webhook_deliveries (subscription_id, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_status_few ON webhook_deliveries (status, id) WHERE status <> 'delivered';
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_status;
ALTER INDEX webhook_deliveries_status_few RENAME TO webhook_deliveries_status;

-- webhook_deliveries_next (next_attempt_at, pending only) had no reader left: the claim and the sweep read
-- webhook_deliveries_due, and the queue gauge counts pending rows through any pending index. Dropped, it gives back
-- the entry webhook_deliveries_sub adds when a delivery is written (and one per retry).
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_next;
