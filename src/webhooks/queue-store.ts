// SQL of the delivery queue: claim due deliveries under a lease, write attempt results in batches,
// release claims, find the next due time, queue gauges, retention.
import type { Queryable } from '../db/db.ts';
import type { SubscriptionRow } from './store.ts';
import { openSecret } from '../secrets/active.ts';

/** A claimed delivery, with what sending it needs of its event and subscription. */
export interface Claimed
  extends Pick<SubscriptionRow, 'url' | 'auth_method' | 'bearer_token' | 'basic_username' | 'basic_password' | 'webhook_version' | 'signing_secret'> {
  id: string;
  uuid: string;
  lock_token: string;
  attempt_count: number;
  schedule_pos: number;
  event_id: string;
  event_uuid: string;
  event_type: string;
  resource_type: string;
  resource_uuid: string;
  resource_external_id: string | null;
  source: string;
  event_created_at: string;
  subscription_id: string;
  subscription_uuid: string;
  /** Only while the rotated-out secret still signs (24 h). */
  previous_secret: string | null;
}

/**
 * Claims up to `limit` due deliveries. Subscriptions are visited in random order, each giving at most
 * its free in-flight room (max_in_flight minus its live leases), so one slow endpoint cannot take every
 * slot. SKIP LOCKED lets several workers claim at once without waiting on each other or double-claiming.
 */
export async function claimDue(db: Queryable, limit: number, leaseMs: number, token: string): Promise<Claimed[]> {
  const r = await db.query<Claimed>(
    `WITH subs AS (
       SELECT s.id, s.max_in_flight - (SELECT count(*) FROM webhook_deliveries l
           WHERE l.subscription_id = s.id AND l.status = 'pending' AND l.locked_until > now()) AS room
       FROM webhook_subscriptions s
       WHERE s.is_active AND s.deleted_at IS NULL
       ORDER BY random()
     ), picked AS (
       SELECT c.id FROM subs CROSS JOIN LATERAL (
         SELECT d.id FROM webhook_deliveries d
         WHERE d.subscription_id = subs.id AND d.status = 'pending' AND d.next_attempt_at <= now()
           AND (d.locked_until IS NULL OR d.locked_until <= now())
         ORDER BY d.next_attempt_at, d.id
         LIMIT greatest(subs.room, 0)
         FOR UPDATE OF d SKIP LOCKED
       ) c
       LIMIT $1
     )
     UPDATE webhook_deliveries d SET locked_until = now() + $2 * interval '1 millisecond', lock_token = $3
     FROM picked, events e, webhook_subscriptions s
     WHERE d.id = picked.id AND e.id = d.event_id AND s.id = d.subscription_id
     RETURNING d.id, d.uuid, d.lock_token, d.attempt_count, d.schedule_pos, e.id AS event_id, e.uuid AS event_uuid, e.event_type,
       e.resource_type, e.resource_uuid, e.resource_external_id, e.source, e.created_at AS event_created_at,
       s.id AS subscription_id, s.uuid AS subscription_uuid, s.url, s.auth_method, s.bearer_token, s.basic_username,
       s.basic_password, s.webhook_version, s.signing_secret,
       CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END AS previous_secret`,
    [limit, leaseMs, token],
  );
  // Secrets are stored sealed (SPEC §15): open them for signing and sending.
  return r.rows.map((c) => ({ ...c, signing_secret: openSecret(c.signing_secret), previous_secret: openSecret(c.previous_secret), bearer_token: openSecret(c.bearer_token), basic_password: openSecret(c.basic_password) }));
}

export interface AttemptResult {
  deliveryId: string;
  lockToken: string;
  subscriptionId: string;
  eventId: string;
  attemptNumber: number;
  url: string;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  errorCode: string | null;
  ok: boolean;
  /** Delay before the next attempt after a failure; null: no more attempts (failed). */
  retryDelayMs: number | null;
  requestHeaders: Record<string, string>;
  requestBody: string;
  responseBody: string | null;
}

/**
 * Writes a batch of attempt outcomes in one statement: the attempt rows, and each delivery's new state
 * (only if this claim still holds it and it was not cancelled meanwhile). Returns the new states.
 */
export async function recordResults(db: Queryable, rs: AttemptResult[]): Promise<{ id: string; status: string; next_attempt_at: string | null }[]> {
  if (rs.length === 0) return [];
  const r = await db.query<{ id: string; status: string; next_attempt_at: string | null }>(
    `WITH r AS (
       SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::bigint[], $4::bigint[], $5::int[], $6::text[], $7::timestamptz[], $8::int[],
         $9::int[], $10::text[], $11::boolean[], $12::float8[], $13::jsonb[], $14::text[], $15::text[])
         AS r(delivery_id, token, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code, error_code, ok,
              delay_ms, request_headers, request_body, response_body)
     ), upd AS (
       UPDATE webhook_deliveries d SET
         status = CASE WHEN r.ok THEN 'delivered' WHEN r.delay_ms IS NULL THEN 'failed' ELSE 'pending' END,
         attempt_count = d.attempt_count + 1,
         schedule_pos = CASE WHEN NOT r.ok AND r.delay_ms IS NOT NULL THEN d.schedule_pos + 1 ELSE d.schedule_pos END,
         next_attempt_at = CASE WHEN NOT r.ok AND r.delay_ms IS NOT NULL THEN clock_timestamp() + r.delay_ms * interval '1 millisecond' END,
         delivered_at = CASE WHEN r.ok THEN clock_timestamp() ELSE d.delivered_at END,
         locked_until = NULL, lock_token = NULL, updated_at = clock_timestamp()
       FROM r WHERE d.id = r.delivery_id AND d.lock_token = r.token AND d.status = 'pending'
       RETURNING d.id, d.status, d.next_attempt_at
     ), ins AS (
       INSERT INTO webhook_attempts (delivery_id, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code,
         error_code, outcome, next_attempt_at, request_headers, request_body, response_body)
       SELECT r.delivery_id, r.subscription_id, r.event_id, r.attempt_number, r.url, r.started_at, r.duration_ms, r.status_code,
         r.error_code, CASE WHEN r.ok THEN 'success' ELSE 'failure' END, upd.next_attempt_at, r.request_headers, r.request_body, r.response_body
       FROM r LEFT JOIN upd ON upd.id = r.delivery_id
     )
     SELECT id, status, next_attempt_at FROM upd`,
    [
      rs.map((x) => x.deliveryId),
      rs.map((x) => x.lockToken),
      rs.map((x) => x.subscriptionId),
      rs.map((x) => x.eventId),
      rs.map((x) => x.attemptNumber),
      rs.map((x) => x.url),
      rs.map((x) => x.startedAt),
      rs.map((x) => x.durationMs),
      rs.map((x) => x.statusCode),
      rs.map((x) => x.errorCode),
      rs.map((x) => x.ok),
      rs.map((x) => x.retryDelayMs),
      rs.map((x) => JSON.stringify(x.requestHeaders)),
      rs.map((x) => x.requestBody),
      rs.map((x) => (x.responseBody === null ? null : x.responseBody.replace(/\u0000/g, ''))),
    ],
  );
  return r.rows;
}

/** Gives claims back without an attempt (shutdown): they are due again at once for any worker. */
export async function releaseClaims(db: Queryable, ids: string[], token: string): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `UPDATE webhook_deliveries SET locked_until = NULL, lock_token = NULL WHERE id = ANY($1::bigint[]) AND lock_token = $2`,
    [ids, token],
  );
}

/** Milliseconds until the next pending delivery falls due (null: none scheduled in the future). */
export async function msUntilNextDue(db: Queryable): Promise<number | null> {
  const r = await db.query<{ ms: number | null }>(
    `SELECT extract(epoch FROM (min(next_attempt_at) - clock_timestamp())) * 1000 AS ms
     FROM (SELECT next_attempt_at FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > clock_timestamp()
           ORDER BY next_attempt_at LIMIT 1) x`,
  );
  const ms = r.rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.max(0, Number(ms));
}

/** Pending deliveries of live subscriptions, and the age of the oldest one already due. */
export async function queueStats(db: Queryable): Promise<{ depth: number; oldestDueSec: number }> {
  const r = await db.query<{ depth: string; oldest: number | null }>(
    `SELECT count(*) AS depth,
       extract(epoch FROM (clock_timestamp() - min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= clock_timestamp()))) AS oldest
     FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
     WHERE d.status = 'pending' AND s.deleted_at IS NULL AND s.is_active`,
  );
  return { depth: Number(r.rows[0]?.depth ?? 0), oldestDueSec: Math.max(0, Number(r.rows[0]?.oldest ?? 0)) };
}

/** Deletes attempt rows older than the retention, in bounded batches. Returns how many. */
export async function purgeAttempts(db: Queryable, retentionDays: number, batch = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await db.query(
      `DELETE FROM webhook_attempts WHERE id IN (
         SELECT id FROM webhook_attempts WHERE started_at < clock_timestamp() - $1 * interval '1 day' LIMIT $2)`,
      [retentionDays, batch],
    );
    total += r.rowCount;
    if (r.rowCount < batch) return total;
  }
}
