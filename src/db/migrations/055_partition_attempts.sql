-- bulb:outside-transaction
-- webhook_attempts partitioned by started_at (docs/partitioning.md), online, as events and deliveries were in 054:
-- the primary key's index built concurrently, the cutover CHECK validated without stopping writes, the swap a
-- catalog change under a brief lock. No index on uuid: lean rows leave it null (migration 051) and nothing looks
-- an attempt up by it; the old unique constraint goes with the swap.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS webhook_attempts_legacy_id_key ON webhook_attempts (id, started_at);
SELECT bulb_partition_check('webhook_attempts', 'started_at');
SELECT bulb_partition_validate('webhook_attempts');
SELECT bulb_partition_swap('webhook_attempts', 'started_at', '{}', false);
-- The conversion is done: its functions go.
DROP FUNCTION IF EXISTS bulb_partition_swap(text, text, text[], boolean);
DROP FUNCTION IF EXISTS bulb_partition_validate(text);
DROP FUNCTION IF EXISTS bulb_partition_check(text, text);
