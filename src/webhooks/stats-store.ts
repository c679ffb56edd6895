// SQL of the webhook stats (GET /integrations/webhooks/stats, the console's chart): attempts and successes per
// subscription and hour, read from the hourly rollup (webhook_attempt_hours, migration 078) for the hours it holds
// and counted from webhook_attempts for the others; and the rollup's own statements (its job: stats-rollup.ts).
import type { Queryable } from '../db/db.ts';

export interface StatsRow {
  subscription_uuid: string;
  hour: string;
  attempts: number;
  successes: number;
}

/** The hours the rollup holds: [from, until); both null until a first pass. */
export interface Rolled {
  from: Date | null;
  until: Date | null;
}

const dateOrNull = (t: Date | string | null | undefined) => (t === null || t === undefined ? null : new Date(t));

export async function rolledHours(db: Queryable): Promise<Rolled> {
  const r = await db.query<{ rolled_from: Date | string | null; rolled_until: Date | string | null }>(
    `SELECT rolled_from, rolled_until FROM webhook_attempt_hours_rolled`, [], 'webhook_stats_rolled');
  const w = r.rows[0];
  return { from: dateOrNull(w?.rolled_from), until: dateOrNull(w?.rolled_until) };
}

/**
 * Attempts and successes per live subscription and hour: the rollup's rows for the hours in [rolledFrom,
 * rolledUntil) (an empty range when it is not used), and the attempts started at or after `liveFrom`, counted (their
 * time index: the partitions from that time only, and in them the BRIN range). One statement, one snapshot.
 */
export async function attemptStats(db: Queryable, liveFrom: string, rolled?: { from: string; until: string }): Promise<StatsRow[]> {
  const r = await db.query<StatsRow>(
    `SELECT s.uuid AS subscription_uuid, x.hour, x.attempts, x.successes
     FROM (
       SELECT h.subscription_id, h.hour, h.attempts, h.successes FROM webhook_attempt_hours h WHERE h.hour >= $2 AND h.hour < $3
       UNION ALL
       SELECT a.subscription_id, date_trunc('hour', a.started_at), count(*)::int, (count(*) FILTER (WHERE a.outcome = 'success'))::int
       FROM webhook_attempts a WHERE a.started_at >= $1 GROUP BY 1, 2
     ) x JOIN webhook_subscriptions s ON s.id = x.subscription_id
     WHERE s.deleted_at IS NULL
     ORDER BY 1, 2`,
    [liveFrom, rolled?.from ?? liveFrom, rolled?.until ?? liveFrom],
  );
  return r.rows;
}

// ---- the rollup's job (stats-rollup.ts) ----

/**
 * The rollup's row, locked for this transaction, with the database's clock; null while another worker's pass holds
 * it (that pass does the work: this one skips).
 */
export async function lockRolled(tx: Queryable): Promise<(Rolled & { now: Date }) | null> {
  const r = await tx.query<{ rolled_from: Date | string | null; rolled_until: Date | string | null; now: Date | string }>(
    `SELECT rolled_from, rolled_until, clock_timestamp() AS now FROM webhook_attempt_hours_rolled FOR UPDATE SKIP LOCKED`);
  const w = r.rows[0];
  if (!w) return null;
  return { from: dateOrNull(w.rolled_from), until: dateOrNull(w.rolled_until), now: new Date(w.now) };
}

/**
 * Counts the attempts started in [from, to) (whole hours) into the rollup, per hour and subscription: a row already
 * there (an hour rolled up again) takes the new counts. Attempts are never deleted but with their partition (past
 * the rollup's hours) or a subscription's hard delete (its rows are left out by the stats' join), so the hours' rows
 * only grow: no row needs deleting here.
 */
export async function rollHours(tx: Queryable, from: Date, to: Date): Promise<number> {
  const r = await tx.query(
    `INSERT INTO webhook_attempt_hours AS h (hour, subscription_id, attempts, successes)
     SELECT date_trunc('hour', a.started_at), a.subscription_id, count(*)::int, (count(*) FILTER (WHERE a.outcome = 'success'))::int
     FROM webhook_attempts a WHERE a.started_at >= $1 AND a.started_at < $2
     GROUP BY 1, 2
     ON CONFLICT (hour, subscription_id) DO UPDATE SET attempts = excluded.attempts, successes = excluded.successes
       WHERE (h.attempts, h.successes) IS DISTINCT FROM (excluded.attempts, excluded.successes)`,
    [from.toISOString(), to.toISOString()],
  );
  return r.rowCount;
}

/** The rollup's hours past the stats' longest window, deleted; returns how many rows went. */
export async function deleteHoursBefore(tx: Queryable, before: Date): Promise<number> {
  return (await tx.query(`DELETE FROM webhook_attempt_hours WHERE hour < $1`, [before.toISOString()])).rowCount;
}

export async function setRolled(tx: Queryable, w: { from: Date; until: Date }): Promise<void> {
  await tx.query(`UPDATE webhook_attempt_hours_rolled SET rolled_from = $1, rolled_until = $2`, [w.from.toISOString(), w.until.toISOString()]);
}
