// SQL of the webhook stats (GET /integrations/webhooks/stats, the console's chart): attempts and successes per
// subscription and hour.
import type { Queryable } from '../db/db.ts';

export interface StatsRow {
  subscription_uuid: string;
  hour: string;
  attempts: number;
  successes: number;
}

/** Attempts and successes per live subscription and hour since `since` (one query, the attempts' time index). */
export async function attemptStats(db: Queryable, since: string): Promise<StatsRow[]> {
  const r = await db.query<StatsRow>(
    `SELECT s.uuid AS subscription_uuid, date_trunc('hour', a.started_at) AS hour, count(*)::int AS attempts,
       (count(*) FILTER (WHERE a.outcome = 'success'))::int AS successes
     FROM webhook_attempts a JOIN webhook_subscriptions s ON s.id = a.subscription_id
     WHERE a.started_at >= $1 AND s.deleted_at IS NULL
     GROUP BY 1, 2 ORDER BY 1, 2`,
    [since],
  );
  return r.rows;
}
