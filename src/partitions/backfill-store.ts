// SQL of the partition keys' backfill (docs/partitioning.md, migration 060): a batch of a legacy partition's rows,
// walked by id from where the walk stands, each given its joined row's created_at, and the walk's new place, in one
// statement (one short transaction: a batch's row locks only).
import type { Queryable } from '../db/db.ts';

export interface Backfill {
  /** The legacy partition walked (its row in partition_backfills). */
  name: string;
  /** Its partition key. */
  key: string;
  /** The column filled and where it comes from: `src` is the batch's row. */
  column: string;
  from: string;
}

export const BACKFILLS: Backfill[] = [
  // A delivery's event is no newer than the delivery (a replay's is older): the events up to its time.
  {
    name: 'webhook_deliveries_legacy', key: 'created_at', column: 'event_created_at',
    from: `SELECT created_at FROM events j WHERE j.id = src.event_id AND j.created_at <= src.created_at LIMIT 1`,
  },
  // An attempt's delivery is older than the attempt (started_at is the worker's clock: a day of margin).
  {
    name: 'webhook_attempts_legacy', key: 'started_at', column: 'delivery_created_at',
    from: `SELECT created_at FROM webhook_deliveries j WHERE j.id = src.delivery_id AND j.created_at <= src.started_at + interval '1 day' LIMIT 1`,
  },
];

/** The backfills not finished yet. */
export async function unfinished(db: Queryable): Promise<Backfill[]> {
  const r = await db.query<{ name: string }>(`SELECT name FROM partition_backfills WHERE done_at IS NULL`);
  return BACKFILLS.filter((b) => r.rows.some((x) => x.name === b.name));
}

/** Marks a backfill finished (its partition is gone: dropped by retention). */
export async function finish(db: Queryable, b: Backfill): Promise<void> {
  await db.query(`UPDATE partition_backfills SET done_at = clock_timestamp() WHERE name = $1`, [b.name]);
}

/**
 * One batch: the next `size` rows of the partition by id, those whose key is null given it. The walk's row is locked
 * SKIP LOCKED (another worker's batch in progress: `mine` false, nothing done). Returns whether the batch ran, how
 * many rows it walked and filled, and whether the walk is done (the batch was short: rows written since carry the
 * key).
 */
export async function backfillBatch(db: Queryable, b: Backfill, size: number): Promise<{ mine: boolean; walked: number; filled: number; done: boolean }> {
  if ((await db.query<{ ok: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS ok`, [b.name])).rows[0].ok === false) {
    await finish(db, b);
    return { mine: true, walked: 0, filled: 0, done: true };
  }
  const r = await db.query<{ mine: boolean; walked: number; filled: number }>(
    `WITH w AS (
       SELECT after_id FROM partition_backfills WHERE name = $1 AND done_at IS NULL FOR UPDATE SKIP LOCKED
     ), src AS (
       SELECT p.* FROM ${b.name} p WHERE p.id > (SELECT after_id FROM w) ORDER BY p.id LIMIT $2
     ), upd AS (
       UPDATE ${b.name} p SET ${b.column} = k.created_at
       FROM src CROSS JOIN LATERAL (${b.from}) k
       WHERE p.id = src.id AND p.${b.key} = src.${b.key} AND p.${b.column} IS NULL
       RETURNING 1
     ), mark AS (
       UPDATE partition_backfills SET after_id = coalesce((SELECT max(id) FROM src), after_id),
         done_at = CASE WHEN (SELECT count(*) FROM src) < $2 THEN clock_timestamp() END
       WHERE name = $1 AND EXISTS (SELECT 1 FROM w)
       RETURNING 1
     )
     SELECT EXISTS (SELECT 1 FROM mark) AS mine, (SELECT count(*) FROM src)::int AS walked, (SELECT count(*) FROM upd)::int AS filled`,
    [b.name, size],
  );
  const x = r.rows[0];
  return { mine: x.mine, walked: x.walked, filled: x.filled, done: x.mine && x.walked < size };
}
