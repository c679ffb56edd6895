// SQL of what follows from attempt results (SPEC §11; the health counters are written with the results, by
// queue-store.ts's recordResults): automatic disabling, and the operational events with their fan-out (never
// to the subscription they are about).
import type { Queryable } from '../db/db.ts';
import type { SubOutcome } from './queue-store.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { eventOfDelivery } from '../partitions/keys.ts';

/**
 * Disables (isActive false, with a reason) every active subscription among `outs` that has had no successful
 * attempt for `hours` while its attempts kept failing, or whose endpoint answered 410 Gone since its last success
 * (at once: the receiver says to stop sending). Returns the ids disabled now.
 */
export async function disableFailing(db: Queryable, outs: SubOutcome[], hours: number): Promise<string[]> {
  const failing = outs.filter((o) => (o.failures > 0 && o.lastOkAt === null) || o.goneAt !== null);
  if (failing.length === 0) return [];
  const r = await db.query<{ id: string }>(
    `UPDATE webhook_subscriptions s SET is_active = false, updated_at = clock_timestamp(),
       disabled_reason = CASE WHEN x.gone_at IS NOT NULL
         THEN format('the endpoint answered 410 Gone at %s: Bulb stopped sending to it (re-activate it to resume)',
           to_char(x.gone_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
         ELSE format('no successful delivery attempt for %s hours while attempts kept failing (failing since %s; last error: %s)',
           $3::int, to_char(s.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), coalesce(x.last_error, 'unknown')) END
     FROM unnest($1::bigint[], $2::text[], $4::timestamptz[]) AS x(sub, last_error, gone_at)
     WHERE s.id = x.sub AND s.is_active AND s.deleted_at IS NULL
       AND (x.gone_at IS NOT NULL OR (s.consecutive_failures > 0 AND s.failing_since <= clock_timestamp() - $3 * interval '1 hour'))
     RETURNING s.id`,
    [failing.map((o) => o.subscriptionId), failing.map((o) => o.lastError), hours, failing.map((o) => o.goneAt)],
  );
  return r.rows.map((x) => x.id);
}

/** A delivery and its partition's key (docs/partitioning.md). */
export interface FailedDelivery {
  id: string;
  createdAt: string;
}

/**
 * Writes the operational events of one batch, each delivered to every active subscription listening to its
 * type except the subscription it is about: `webhookDeliveryFailed` for each delivery among `failed` that is
 * failed after its schedule (none for a failed delivery of a webhookDeliveryFailed event: no loops; none again when a
 * manual retry or recover of a failed delivery fails, schedule_pos ≥ manualPos), `webhookSubscriptionDisabled`
 * for each of `disabledIds`. Wakes the workers on commit. Returns how many events were written.
 */
export async function emitOperational(db: Queryable, failed: FailedDelivery[], disabledIds: string[], source: string, manualPos: number): Promise<number> {
  if (failed.length === 0 && disabledIds.length === 0) return 0;
  const r = await db.query<{ events: string }>(
    `WITH src AS (
       SELECT 'webhookDeliveryFailed'::text AS event_type, 'WebhookDelivery'::text AS resource_type, d.uuid AS resource_uuid,
         d.subscription_id AS about, d.id AS ord
       -- Each delivery by its primary key, in its partition (LATERAL … LIMIT 1: joined, the planner, which does not
       -- count the partitions the executor prunes, scanned every partition's failed ones).
       FROM unnest($1::bigint[], $6::timestamptz[]) AS x(id, created_at)
         CROSS JOIN LATERAL (SELECT * FROM webhook_deliveries d WHERE d.id = x.id AND d.created_at = x.created_at LIMIT 1) d
         JOIN events e ON ${eventOfDelivery('d', 'e')}
       WHERE d.status = 'failed' AND e.event_type <> 'webhookDeliveryFailed' AND d.schedule_pos < $5
       UNION ALL
       SELECT 'webhookSubscriptionDisabled', 'WebhookSubscription', s.uuid, s.id, s.id FROM webhook_subscriptions s WHERE s.id = ANY($2::bigint[])
     ), ev AS (
       INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
       SELECT event_type, resource_type, resource_uuid, NULL, $3 FROM src ORDER BY event_type, ord
       RETURNING id, event_type, resource_uuid, created_at
     ), d AS (
       INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id)
       SELECT ev.id, ev.created_at, s.id FROM ev JOIN src ON src.event_type = ev.event_type AND src.resource_uuid = ev.resource_uuid
         JOIN webhook_subscriptions s ON s.event_types @> ARRAY[ev.event_type] AND s.is_active AND s.deleted_at IS NULL AND s.id <> src.about
       ORDER BY ev.id, s.id
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM ev) AS events, CASE WHEN (SELECT count(*) FROM d) > 0 THEN pg_notify($4, '') END AS woke`,
    [failed.map((f) => f.id), disabledIds, source, WEBHOOK_CHANNEL, manualPos, failed.map((f) => f.createdAt)],
  );
  return Number(r.rows[0]?.events ?? 0);
}

/** What an operator's log says of a batch's ends (docs/operations.md, Logs): a line each, with the ids the API shows. */
export interface Notice {
  message: string;
  fields: Record<string, unknown>;
}

/**
 * The log lines of the deliveries among `failed` that are failed now (their schedule used up, or a manual retry's one
 * attempt failed) and of the subscriptions disabled (`disabledIds`), with their uuids; `lastError` by delivery id.
 * Read only in a batch that has either, in its transaction.
 */
export async function noticesOf(db: Queryable, failed: FailedDelivery[], disabledIds: string[], lastError: Map<string, string>): Promise<Notice[]> {
  if (failed.length === 0 && disabledIds.length === 0) return [];
  const r = await db.query<{ kind: string; id: string; uuid: string; subscription_uuid: string; detail: string | null }>(
    `SELECT 'failed' AS kind, d.id, d.uuid, s.uuid AS subscription_uuid, e.event_type AS detail
       FROM unnest($1::bigint[], $2::timestamptz[]) AS x(id, created_at)
         CROSS JOIN LATERAL (SELECT * FROM webhook_deliveries d WHERE d.id = x.id AND d.created_at = x.created_at LIMIT 1) d
         JOIN webhook_subscriptions s ON s.id = d.subscription_id
         JOIN events e ON ${eventOfDelivery('d', 'e')}
      WHERE d.status = 'failed'
     UNION ALL
     SELECT 'disabled', s.id, s.uuid, s.uuid, s.disabled_reason FROM webhook_subscriptions s WHERE s.id = ANY($3::bigint[])`,
    [failed.map((f) => f.id), failed.map((f) => f.createdAt), disabledIds],
  );
  return r.rows.map((x) =>
    x.kind === 'failed'
      ? { message: 'delivery failed: no attempts left', fields: { deliveryUuid: x.uuid, subscriptionUuid: x.subscription_uuid, eventType: x.detail, lastError: lastError.get(String(x.id)) ?? null } }
      : { message: 'subscription disabled', fields: { subscriptionUuid: x.uuid, reason: x.detail } },
  );
}
