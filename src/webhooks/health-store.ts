// SQL of endpoint health (SPEC §11): per-subscription counters from attempt results, automatic disabling,
// and the operational events with their fan-out (never to the subscription they are about).
import type { Queryable } from '../db/db.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';

/** What one batch of results says about one subscription (its results in time order). */
export interface SubOutcome {
  subscriptionId: string;
  /** Time of the last successful attempt in the batch (null: none). */
  lastOkAt: string | null;
  /** Failures after that success (or all of them when none succeeded). */
  failures: number;
  /** The first of those failures. */
  firstFailureAt: string | null;
  /** e.g. "HTTP_STATUS 500", "TIMEOUT": the last failure's error. */
  lastError: string | null;
}

/**
 * Locks the subscriptions in id order (so that workers recording results for the same subscriptions at once
 * never deadlock, and before any delivery row, as the API's delete does), then folds the outcomes into their
 * health counters.
 */
export async function updateHealth(db: Queryable, outs: SubOutcome[]): Promise<void> {
  if (outs.length === 0) return;
  const ids = outs.map((o) => o.subscriptionId);
  await db.query(`SELECT id FROM webhook_subscriptions WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE`, [ids], 'webhook_health_lock');
  await db.query(
    `UPDATE webhook_subscriptions s SET
       last_success_at = CASE WHEN x.last_ok IS NULL THEN s.last_success_at ELSE greatest(s.last_success_at, x.last_ok) END,
       consecutive_failures = CASE WHEN x.last_ok IS NULL THEN s.consecutive_failures + x.fails ELSE x.fails END,
       failing_since = CASE WHEN x.last_ok IS NULL THEN coalesce(s.failing_since, x.first_fail) ELSE x.first_fail END
     FROM unnest($1::bigint[], $2::timestamptz[], $3::int[], $4::timestamptz[]) AS x(sub, last_ok, fails, first_fail)
     WHERE s.id = x.sub`,
    [ids, outs.map((o) => o.lastOkAt), outs.map((o) => o.failures), outs.map((o) => o.firstFailureAt)],
    'webhook_health',
  );
}

/**
 * Disables (isActive false, with a reason) every active subscription among `outs` that has had no successful
 * attempt for `hours` while its attempts kept failing. Returns the ids disabled now.
 */
export async function disableFailing(db: Queryable, outs: SubOutcome[], hours: number): Promise<string[]> {
  const failing = outs.filter((o) => o.failures > 0 && o.lastOkAt === null);
  if (failing.length === 0) return [];
  const r = await db.query<{ id: string }>(
    `UPDATE webhook_subscriptions s SET is_active = false, updated_at = clock_timestamp(),
       disabled_reason = format('no successful delivery attempt for %s hours while attempts kept failing (failing since %s; last error: %s)',
         $3::int, to_char(s.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), coalesce(x.last_error, 'unknown'))
     FROM unnest($1::bigint[], $2::text[]) AS x(sub, last_error)
     WHERE s.id = x.sub AND s.is_active AND s.deleted_at IS NULL AND s.consecutive_failures > 0
       AND s.failing_since <= clock_timestamp() - $3 * interval '1 hour'
     RETURNING s.id`,
    [failing.map((o) => o.subscriptionId), failing.map((o) => o.lastError), hours],
  );
  return r.rows.map((x) => x.id);
}

/**
 * Writes the operational events of one batch, each delivered to every active subscription listening to its
 * type except the subscription it is about: `webhookDeliveryFailed` for each delivery among `failedIds` that is
 * failed after its schedule (none for a failed delivery of a webhookDeliveryFailed event: no loops; none again when a
 * manual retry or recover of a failed delivery fails, schedule_pos ≥ manualPos), `webhookSubscriptionDisabled`
 * for each of `disabledIds`. Wakes the workers on commit. Returns how many events were written.
 */
export async function emitOperational(db: Queryable, failedIds: string[], disabledIds: string[], source: string, manualPos: number): Promise<number> {
  if (failedIds.length === 0 && disabledIds.length === 0) return 0;
  const r = await db.query<{ events: string }>(
    `WITH src AS (
       SELECT 'webhookDeliveryFailed'::text AS event_type, 'WebhookDelivery'::text AS resource_type, d.uuid AS resource_uuid,
         d.subscription_id AS about, d.id AS ord
       FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
       WHERE d.id = ANY($1::bigint[]) AND d.status = 'failed' AND e.event_type <> 'webhookDeliveryFailed' AND d.schedule_pos < $5
       UNION ALL
       SELECT 'webhookSubscriptionDisabled', 'WebhookSubscription', s.uuid, s.id, s.id FROM webhook_subscriptions s WHERE s.id = ANY($2::bigint[])
     ), ev AS (
       INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
       SELECT event_type, resource_type, resource_uuid, NULL, $3 FROM src ORDER BY event_type, ord
       RETURNING id, event_type, resource_uuid
     ), d AS (
       INSERT INTO webhook_deliveries (event_id, subscription_id)
       SELECT ev.id, s.id FROM ev JOIN src ON src.event_type = ev.event_type AND src.resource_uuid = ev.resource_uuid
         JOIN webhook_subscriptions s ON s.event_types @> ARRAY[ev.event_type] AND s.is_active AND s.deleted_at IS NULL AND s.id <> src.about
       ORDER BY ev.id, s.id
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM ev) AS events, CASE WHEN (SELECT count(*) FROM d) > 0 THEN pg_notify($4, '') END AS woke`,
    [failedIds, disabledIds, source, WEBHOOK_CHANNEL, manualPos],
  );
  return Number(r.rows[0]?.events ?? 0);
}
