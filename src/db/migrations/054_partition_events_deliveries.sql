-- bulb:outside-transaction
-- events and webhook_deliveries partitioned by created_at (docs/partitioning.md), online: the indexes the
-- partitioned tables need are built concurrently on the old tables, the cutover CHECK validated without stopping
-- writes, and each swap (bulb_partition_swap, migration 053) is catalog work under a brief lock.
-- Foreign keys to a partitioned table need its key: deliveries → events and attempts → deliveries go (the code keeps
-- those guarantees, see docs/partitioning.md); deliveries → subscriptions stays.
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_event_id_fkey;
-- A delivery carries its event's partition key, an attempt its delivery's: joins prune to one partition
-- (src/partitions/keys.ts). Null on older rows (metadata only: no rewrite).
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS event_created_at timestamptz;
ALTER TABLE webhook_attempts ADD COLUMN IF NOT EXISTS delivery_created_at timestamptz;
ALTER TABLE webhook_attempts DROP CONSTRAINT IF EXISTS webhook_attempts_delivery_id_fkey;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS events_legacy_id_key ON events (id, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_legacy_uuid ON events (uuid);
SELECT bulb_partition_check('events', 'created_at');
SELECT bulb_partition_validate('events');
SELECT bulb_partition_swap('events', 'created_at', '{}');
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_legacy_id_key ON webhook_deliveries (id, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_legacy_uuid ON webhook_deliveries (uuid);
SELECT bulb_partition_check('webhook_deliveries', 'created_at');
SELECT bulb_partition_validate('webhook_deliveries');
SELECT bulb_partition_swap('webhook_deliveries', 'created_at',
  ARRAY['CONSTRAINT webhook_deliveries_subscription_id_fkey FOREIGN KEY (subscription_id) REFERENCES webhook_subscriptions(id) ON DELETE CASCADE']);
