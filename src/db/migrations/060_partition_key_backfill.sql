-- The partition keys of rows written before the conversion (migrations 054, 055): a delivery's event_created_at and
-- an attempt's delivery_created_at are null there, so their joins search the whole legacy range. The partitions'
-- backfill job (src/partitions/backfill.ts) fills them in batches, walking each legacy partition by id; this table
-- holds where each walk stands (one row, committed with each batch) and when it finished. Cheap on any table size:
-- no row of the partitioned tables is read here.
CREATE TABLE IF NOT EXISTS partition_backfills (
  name text PRIMARY KEY,
  after_id bigint NOT NULL DEFAULT 0,
  done_at timestamptz
);
INSERT INTO partition_backfills (name) VALUES ('webhook_deliveries_legacy'), ('webhook_attempts_legacy') ON CONFLICT (name) DO NOTHING;
