// SQL for subscriptions, and the read side of deliveries (lists, manual retry, recover); the logs API's attempts
// are read by attempts-store.ts with the page shapes exported here.
import { fetchSize, statementName, type Queryable } from '../db/db.ts';
import { walked, walkSql, type Walked } from '../db/budgeted-walk.ts';
import { eventOfDelivery, uuidTimeBound } from '../partitions/keys.ts';

export interface SubscriptionRow {
  id: string;
  uuid: string;
  url: string;
  event_types: string[];
  is_active: boolean;
  auth_method: AuthMethodName;
  bearer_token: string | null;
  basic_username: string | null;
  basic_password: string | null;
  webhook_version: string;
  signing_secret: string;
  max_in_flight: number;
  /** Delays in seconds (null: the service's schedule), jitter in percent, rate cap (null: none): policy.ts. */
  retry_schedule: number[] | null;
  retry_jitter: number;
  max_per_second: number | null;
  /** Expiry of the newest rotated-out secret still signing (null: none). */
  retired_secret_expires_at: string | null;
  consecutive_failures: number;
  last_success_at: string | null;
  failing_since: string | null;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  /** OAuth2 client credentials (migration 044): set only with auth_method OAUTH2_CLIENT_CREDENTIALS. */
  oauth2_token_url: string | null;
  oauth2_client_id: string | null;
  oauth2_client_secret: string | null;
  oauth2_scope: string | null;
  oauth2_audience: string | null;
  /** Mutual TLS (migration 044), with any auth_method. */
  tls_client_certificate: string | null;
  tls_client_key: string | null;
  tls_ca_certificate: string | null;
  /**
   * Stored secrets of this row that cannot be opened (sealed under a key this process lacks, or altered), by API field
   * name, with why: those fields are null ('' for the signing secret). Empty for every row Bulb wrote with its key.
   */
  unreadable: Partial<Record<'signingSecret' | 'bearerToken' | 'basicPassword' | 'oauth2.clientSecret' | 'tls.clientKey', string>>;
}

export type AuthMethodName = 'NONE' | 'BASIC' | 'BEARER' | 'OAUTH2_CLIENT_CREDENTIALS';

import { EVENT_TYPES, WEBHOOK_CHANNEL } from '../events/emit.ts';
import { openSecret, sealSecret } from '../secrets/active.ts';
import { SecretError } from '../secrets/box.ts';
import { isoNN } from '../http/time.ts';

/**
 * Secrets are stored sealed (SPEC §15, src/secrets/): rows leave this file with them in clear. A value that cannot be
 * opened is left out and named in `unreadable` (a read of the subscription never fails for it).
 */
function clear<R extends SubscriptionRow | undefined>(r: R): R {
  if (!r) return r;
  const unreadable: SubscriptionRow['unreadable'] = {};
  const open = (stored: string | null, field: keyof SubscriptionRow['unreadable']): string | null => {
    const o = opened(stored);
    if ('why' in o) unreadable[field] = o.why;
    return 'value' in o ? o.value : null;
  };
  const signing = open(r.signing_secret, 'signingSecret') ?? '';
  return {
    ...r, signing_secret: signing, bearer_token: open(r.bearer_token, 'bearerToken'), basic_password: open(r.basic_password, 'basicPassword'),
    oauth2_client_secret: open(r.oauth2_client_secret, 'oauth2.clientSecret'), tls_client_key: open(r.tls_client_key, 'tls.clientKey'), unreadable,
  };
}

const SUB_COLS = `id, uuid, url, event_types, is_active, auth_method, bearer_token, basic_username, basic_password, webhook_version,
  signing_secret, max_in_flight, retry_schedule, retry_jitter, max_per_second, consecutive_failures, last_success_at, failing_since, disabled_reason, created_at, updated_at,
  oauth2_token_url, oauth2_client_id, oauth2_client_secret, oauth2_scope, oauth2_audience, tls_client_certificate, tls_client_key, tls_ca_certificate,
  (SELECT max(r.expires_at) FROM webhook_retired_secrets r WHERE r.subscription_id = webhook_subscriptions.id AND r.expires_at > clock_timestamp())
    AS retired_secret_expires_at`;

export interface SubscriptionWrite {
  url: string;
  eventTypes: string[];
  isActive: boolean;
  authMethod: AuthMethodName;
  bearerToken: string | null;
  basicUsername: string | null;
  basicPassword: string | null;
  webhookVersion: string;
  /** Ceiling of concurrent attempts (1–64); omitted: 16 on insert, unchanged on update. */
  maxInFlight?: number;
  /** Delivery policies (policy.ts); each omitted: its default on insert, unchanged on update. */
  retrySchedule?: number[] | null;
  retryJitter?: number;
  maxPerSecond?: number | null;
}

/** The policy columns as an update's parameters: for a nullable one, whether it is written and its value. */
const policyParams = (w: SubscriptionWrite) => [
  w.retrySchedule !== undefined, w.retrySchedule ?? null, w.retryJitter ?? null, w.maxPerSecond !== undefined, w.maxPerSecond ?? null,
];

export async function insertSubscription(db: Queryable, w: SubscriptionWrite, secret: string): Promise<SubscriptionRow> {
  const r = await db.query<SubscriptionRow>(
    `INSERT INTO webhook_subscriptions (url, event_types, is_active, auth_method, bearer_token, basic_username, basic_password, webhook_version, signing_secret, max_in_flight,
       retry_schedule, retry_jitter, max_per_second)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, coalesce($10, 16), $11::int[], coalesce($12::int, 0), $13::int) RETURNING ${SUB_COLS}`,
    [w.url, w.eventTypes, w.isActive, w.authMethod, sealSecret(w.bearerToken), w.basicUsername, sealSecret(w.basicPassword), w.webhookVersion, sealSecret(secret), w.maxInFlight ?? null,
      w.retrySchedule ?? null, w.retryJitter ?? null, w.maxPerSecond ?? null],
  );
  return clear(r.rows[0]);
}

/**
 * Writes a subscription's fields. Activating it (inactive → active) clears the automatic disabling and
 * starts its health afresh, so that one more failure does not disable it again at once.
 */
export async function updateSubscription(db: Queryable, id: string, w: SubscriptionWrite): Promise<SubscriptionRow> {
  const r = await db.query<SubscriptionRow>(
    `UPDATE webhook_subscriptions SET url = $2, event_types = $3, auth_method = $5, bearer_token = $6,
       basic_username = $7, basic_password = $8, webhook_version = $9, max_in_flight = coalesce($10, max_in_flight), updated_at = clock_timestamp(),
       retry_schedule = CASE WHEN $11::boolean THEN $12::int[] ELSE retry_schedule END, retry_jitter = coalesce($13::int, retry_jitter),
       max_per_second = CASE WHEN $14::boolean THEN $15::int ELSE max_per_second END,
       disabled_reason = CASE WHEN $4 THEN NULL ELSE disabled_reason END,
       consecutive_failures = CASE WHEN $4 AND NOT is_active THEN 0 ELSE consecutive_failures END,
       failing_since = CASE WHEN $4 AND NOT is_active THEN NULL ELSE failing_since END,
       is_active = $4
     WHERE id = $1 RETURNING ${SUB_COLS}`,
    [id, w.url, w.eventTypes, w.isActive, w.authMethod, sealSecret(w.bearerToken), w.basicUsername, sealSecret(w.basicPassword), w.webhookVersion, w.maxInFlight ?? null,
      ...policyParams(w)],
  );
  return clear(r.rows[0]);
}

/** A stored secret in clear, or why it cannot be opened (sealed under a key this process lacks, or altered). */
function opened(stored: string | null): { value: string | null } | { why: string } {
  try {
    return { value: openSecret(stored) };
  } catch (err) {
    if (!(err instanceof SecretError)) throw err;
    return { why: err.message };
  }
}

/** A subscription's stored URL password in clear (null: none), or why it cannot be opened. */
export async function destinationPassword(db: Queryable, id: string): Promise<{ value: string | null } | { why: string }> {
  const stored = (await db.query<{ p: string | null }>(`SELECT destination_password AS p FROM webhook_subscriptions WHERE id = $1`, [id])).rows[0]?.p ?? null;
  return opened(stored);
}

/** Why a subscription's stored URL password cannot be opened, or null. */
export async function destinationPasswordUnreadable(db: Queryable, id: string): Promise<string | null> {
  const o = await destinationPassword(db, id);
  return 'why' in o ? o.why : null;
}

/** Puts back when a subscription was last written: a PATCH that changed nothing of it leaves it as it was. */
export async function keepUpdatedAt(db: Queryable, id: string, updatedAt: string): Promise<void> {
  await db.query(`UPDATE webhook_subscriptions SET updated_at = $2 WHERE id = $1`, [id, updatedAt]);
}

/** A broker destination's URL password (destinations/url.ts), sealed; null: none (an HTTP URL, or a broker URL without one). */
export async function setDestinationPassword(db: Queryable, id: string, password: string | null): Promise<void> {
  await db.query(`UPDATE webhook_subscriptions SET destination_password = $2 WHERE id = $1`, [id, sealSecret(password)]);
}

/** A subscription's OAuth2 client credentials and mutual TLS, in clear (each null: none). */
export interface ReceiverAuthWrite {
  oauth2: { tokenUrl: string; clientId: string; clientSecret: string; scope: string | null; audience: string | null } | null;
  tls: { clientCertificate: string; clientKey: string; caCertificate: string | null } | null;
}

/** Writes a subscription's OAuth2 and mutual TLS settings (after insertSubscription / updateSubscription, same transaction). */
export async function writeReceiverAuth(db: Queryable, id: string, w: ReceiverAuthWrite): Promise<SubscriptionRow> {
  const o = w.oauth2;
  const t = w.tls;
  const r = await db.query<SubscriptionRow>(
    `UPDATE webhook_subscriptions SET oauth2_token_url = $2, oauth2_client_id = $3, oauth2_client_secret = $4, oauth2_scope = $5,
       oauth2_audience = $6, tls_client_certificate = $7, tls_client_key = $8, tls_ca_certificate = $9
     WHERE id = $1 RETURNING ${SUB_COLS}`,
    [id, o?.tokenUrl ?? null, o?.clientId ?? null, sealSecret(o?.clientSecret ?? null), o?.scope ?? null, o?.audience ?? null,
      t?.clientCertificate ?? null, sealSecret(t?.clientKey ?? null), t?.caCertificate ?? null],
  );
  return clear(r.rows[0]);
}

/** lock 'share': held against a delete or change, while the fan-out's foreign-key checks (KEY SHARE) go on. */
export async function findSubscription(db: Queryable, uuid: string, lock: boolean | 'share' = false): Promise<SubscriptionRow | undefined> {
  const r = await db.query<SubscriptionRow>(
    `SELECT ${SUB_COLS} FROM webhook_subscriptions WHERE uuid = $1 AND deleted_at IS NULL${lock === 'share' ? ' FOR SHARE' : lock ? ' FOR UPDATE' : ''}`,
    [uuid],
  );
  return clear(r.rows[0]);
}

export async function listSubscriptions(db: Queryable, q: { eventType?: string; isActive?: boolean; limit: number }, after: string | null): Promise<SubscriptionRow[]> {
  const r = await db.query<SubscriptionRow>(
    `SELECT ${SUB_COLS} FROM webhook_subscriptions
     WHERE deleted_at IS NULL AND ($1::text IS NULL OR event_types @> ARRAY[$1::text]) AND ($2::boolean IS NULL OR is_active = $2)
       AND ($3::bigint IS NULL OR id > $3)
     ORDER BY id LIMIT $4`,
    [q.eventType ?? null, q.isActive ?? null, after, q.limit + 1],
  );
  return r.rows.map(clear);
}

/** Soft-deletes and cancels every pending delivery (an attempt in flight finishes but changes nothing). */
export async function deleteSubscription(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE webhook_subscriptions SET deleted_at = clock_timestamp(), is_active = false, updated_at = clock_timestamp() WHERE id = $1`, [id]);
  await cancelPending(db, [id]);
}

/** Cancels the pending deliveries of these (deleted) subscriptions: at the delete, and those a sweep finds stranded. */
export async function cancelPending(db: Queryable, subscriptionIds: string[]): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, locked_until = NULL, lock_token = NULL, updated_at = clock_timestamp()
     WHERE status = 'pending' AND subscription_id = ANY($1::bigint[])`,
    [subscriptionIds],
  );
}

/**
 * Replaces the signing secret; the one it replaces keeps signing for graceSec after this rotation (its own
 * expiry, whatever rotations follow), unless `retire` is false (one that cannot be opened signs nothing: kept, it made
 * every attempt of the grace fail SECRET_UNREADABLE). Expired rotated-out secrets are deleted here.
 */
export async function rotateSecret(db: Queryable, id: string, secret: string, graceSec: number, retire = true): Promise<SubscriptionRow> {
  await db.query(`DELETE FROM webhook_retired_secrets WHERE subscription_id = $1 AND expires_at <= clock_timestamp()`, [id]);
  const live = (await db.query<{ n: number; first: string | null }>(
    `SELECT count(*)::int AS n, min(expires_at) AS first FROM webhook_retired_secrets WHERE subscription_id = $1`, [id])).rows[0];
  if (retire && live.n >= MAX_RETIRED_SECRETS) throw new TooManySecrets(live.n, isoNN(live.first!));
  if (retire) await db.query(
    `INSERT INTO webhook_retired_secrets (subscription_id, secret, expires_at)
     SELECT id, signing_secret, clock_timestamp() + $2 * interval '1 second' FROM webhook_subscriptions WHERE id = $1`,
    [id, graceSec],
  );
  const r = await db.query<SubscriptionRow>(
    `UPDATE webhook_subscriptions SET signing_secret = $2, updated_at = clock_timestamp() WHERE id = $1 RETURNING ${SUB_COLS}`,
    [id, sealSecret(secret)],
  );
  return clear(r.rows[0]);
}

/**
 * Rotated-out secrets that may sign at once (with the current one, MAX_RETIRED_SECRETS + 1 signatures in
 * webhook-signature, ~0.5 KiB). Unbounded, 400 rotations made a 19 KiB header that receivers refuse (431).
 */
export const MAX_RETIRED_SECRETS = 9;

export class TooManySecrets extends Error {
  constructor(readonly live: number, readonly firstExpiresAt: string) {
    super('too many rotated-out secrets');
  }
}

/** The rotated-out secrets still signing, oldest first (SQL expression over a subscription alias `s`). */
export const RETIRED_SECRETS_SQL = `ARRAY(SELECT rs.secret FROM webhook_retired_secrets rs
  WHERE rs.subscription_id = s.id AND rs.expires_at > now() ORDER BY rs.expires_at, rs.id)`;

/** A delivery (alias `d`) that waits: pending and not under a live lease (its attempt's result decides those). */
const WAITING_SQL = `d.status = 'pending' AND (d.locked_until IS NULL OR d.locked_until <= clock_timestamp())`;

/**
 * A re-activated subscription's waiting deliveries, due now (docs/delivery.md): a retry scheduled while it was
 * inactive comes forward, and its schedule goes on from there if it fails. One under a live lease is left to its
 * attempt's result. Each row made due notifies its lane (trigger of migration 019).
 */
export async function makeWaitingDue(db: Queryable, subscriptionId: string): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries d SET next_attempt_at = clock_timestamp(), updated_at = clock_timestamp()
     WHERE d.subscription_id = $1 AND ${WAITING_SQL} AND d.next_attempt_at > clock_timestamp()`,
    [subscriptionId],
  );
}

/**
 * An operator's act (a manual retry, a test, a recovery, a re-activation) is now: it lifts the subscription's
 * Retry-After pause, and the workers are told (on commit) to drop the pause they hold. Before, the act answered 202
 * and nothing was sent until the pause ended, up to an hour later (found by a probe). Run before any share lock
 * on the subscription in the transaction (the row lock first: two such acts at once wait, they do not deadlock).
 */
export async function liftPause(db: Queryable, subscriptionUuid: string): Promise<void> {
  // The deliveries the pause deferred (due at its end) are due now too:
  // the one that met the 429 or 503 stayed due at the old end, up to an hour, and went out last (a probe, 2026-11-29).
  const r = await db.query<{ id: string }>(
    `WITH was AS (
       SELECT id, paused_until FROM webhook_subscriptions WHERE uuid = $1 AND paused_until > clock_timestamp() FOR NO KEY UPDATE
     ), lifted AS (
       UPDATE webhook_subscriptions s SET paused_until = NULL FROM was WHERE s.id = was.id RETURNING s.id
     ), due AS (
       UPDATE webhook_deliveries d SET next_attempt_at = clock_timestamp(), updated_at = clock_timestamp()
       FROM was WHERE d.subscription_id = was.id AND ${WAITING_SQL}
         -- Due at the pause's end: those it deferred (recordResults gives them that end). Not those due before it on
         -- their own schedule (<= pulled them forward too, a retry step each; the review, 2026-11-29); one deferred
         -- to an earlier end before a longer Retry-After extended the pause goes at that earlier end.
         AND d.next_attempt_at = was.paused_until
     )
     SELECT id FROM lifted`,
    [subscriptionUuid],
  );
  if (r.rows.length > 0) await notifySubscriptionsChanged(db, [r.rows[0].id]);
}

/**
 * Waits until every transaction of this database that had written when this is called (held a transaction id) has
 * ended, or `maxMs` passed; true when they all ended. Polled in pg_stat_activity, by backend and transaction id: the
 * server-wide snapshot also waited for other databases' transactions (a probe's idle one in another database held
 * every re-activation for the whole wait).
 */
export async function writesBeforeNowEnded(db: Queryable, maxMs: number): Promise<boolean> {
  const writing = `SELECT pid, backend_xid::text AS xid FROM pg_stat_activity
    WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`;
  const before = new Set((await db.query<{ pid: number; xid: string }>(writing)).rows.map((r) => `${r.pid}:${r.xid}`));
  const until = Date.now() + maxMs;
  for (let wait = 10; before.size > 0; wait = Math.min(wait * 2, 200)) {
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, wait));
    const still = new Set((await db.query<{ pid: number; xid: string }>(writing)).rows.map((r) => `${r.pid}:${r.xid}`));
    for (const t of before) if (!still.has(t)) before.delete(t);
  }
  return true;
}

/** Wakes every dispatcher (delivered on commit when called inside a transaction). */
export async function notifyWorkers(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify($1, '')`, [WEBHOOK_CHANNEL]);
}

/**
 * Tells the workers (on commit) that these subscriptions changed or were deleted: what they claimed of them and have
 * not started is given back and claimed again as the subscriptions now are (dispatcher.ts `changed`).
 */
export async function notifySubscriptionsChanged(db: Queryable, ids: string[]): Promise<void> {
  // A payload is at most 8,000 bytes: ids in groups well under it.
  for (let i = 0; i < ids.length; i += 400) {
    await db.query(`SELECT pg_notify($1, $2)`, [WEBHOOK_CHANNEL, ids.slice(i, i + 400).map((id) => `-${id}`).join(',')]);
  }
}

/** A webhookTest event delivered to one subscription only. Returns the event and delivery uuids. */
export async function insertTestEvent(db: Queryable, sub: SubscriptionRow, source: string): Promise<{ eventUuid: string; deliveryUuid: string }> {
  const r = await db.query<{ event_uuid: string; delivery_uuid: string }>(
    `WITH ev AS (
       INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
       VALUES ('webhookTest', 'WebhookSubscription', $1, NULL, $2) RETURNING id, uuid, created_at
     ), d AS (
       INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id) SELECT ev.id, ev.created_at, $3 FROM ev RETURNING uuid
     )
     SELECT ev.uuid AS event_uuid, d.uuid AS delivery_uuid FROM ev, d`,
    [sub.uuid, source, sub.id],
  );
  await notifyWorkers(db);
  return { eventUuid: r.rows[0].event_uuid, deliveryUuid: r.rows[0].delivery_uuid };
}

// ---- deliveries ----

export interface DeliveryRow {
  id: string;
  uuid: string;
  event_uuid: string;
  subscription_uuid: string;
  event_type: string;
  status: string;
  attempt_count: number;
  next_attempt_at: string | null;
  created_at: string;
  delivered_at: string | null;
}

const DELIVERY_COLUMNS = `d.id, d.uuid, e.uuid AS event_uuid, s.uuid AS subscription_uuid, e.event_type, d.status, d.attempt_count,
  d.next_attempt_at, d.created_at, d.delivered_at`;
const DELIVERY_SELECT = `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON ${eventOfDelivery('d', 'e')}
  JOIN webhook_subscriptions s ON s.id = d.subscription_id`;
/**
 * A page's joins, one probe per row (LATERAL … LIMIT 1: the planner, which does not count the partitions the
 * executor prunes, would otherwise hash whole tables of a few partitions' rows).
 */
export const lateral = (table: string, alias: string, on: string) => `CROSS JOIN LATERAL (SELECT * FROM ${table} ${alias} WHERE ${on} LIMIT 1) ${alias}`;
const DELIVERY_JOINS = `${lateral('events', 'e', eventOfDelivery('d', 'e'))} JOIN webhook_subscriptions s ON s.id = d.subscription_id`;

/**
 * A list's page: the rows of `table` (alias `alias`) in order first, then their joins, when no filter needs a joined
 * table. Joined before the LIMIT, an underestimated filter (a status's share of a generic plan) made the planner
 * join and sort every matching row; and on partitioned tables (docs/partitioning.md) each join is a probe. A row
 * whose joined row went with an older partition (an attempt of a delivery past retention) is left out of its page.
 */
export function pageFirst(table: string, alias: string, where: string[], order: string, limit: number, columns: string, joins: string): string {
  return `SELECT ${columns} FROM (SELECT * FROM ${table} ${alias} WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${limit}) ${alias}
     ${joins} ORDER BY ${order}`;
}

/** The cursor when none is given: every id is below it, so each shape has one text with or without a cursor. */
const NO_CURSOR = '9223372036854775807';
const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'cancelled'];

/**
 * Below this many events of a type, a list filtered by that type starts from them (events_type_xid, then their
 * deliveries by webhook_deliveries_event); from this many on it walks its range (the ids, a subscription's, a
 * status's) in order, joining each row to its event, for at most LOG_SCAN.budget rows a page (scanEdge, below).
 */
export const FEW_EVENTS = 2000;

/**
 * A type's events as a literal (one of EVENT_TYPES; a statement per type), so that the planner estimates from the
 * statistics how many there are: a rare type is read from events_type_xid, a common one until enough are found.
 * With `event_type = $1` it assumes every type is as common as the average one, and may walk events_xid or the
 * table and filter, all of it for a rare type.
 */
const eventsOfType = (eventType: string) => `SELECT id FROM events WHERE event_type = '${eventType}'`;

/** How many events a type has, counted up to FEW_EVENTS (an unknown type has none). */
async function countEvents(db: Queryable, eventType: string): Promise<number> {
  if (!(EVENT_TYPES as readonly string[]).includes(eventType)) return 0;
  const sql = `SELECT count(*)::int AS n FROM (${eventsOfType(eventType)} LIMIT ${FEW_EVENTS}) few`;
  const r = await db.query<{ n: number }>(sql, [], statementName('webhook_log_type_count', sql));
  return r.rows[0].n;
}

/**
 * How many rows a page of a log list filtered by a common event type (FEW_EVENTS or more events) walks at most: its
 * rows carry no event type, so each is joined to its event to be kept or not, and a type the range holds few of
 * (a subscription's deliveries of a type it does not listen to) walked the whole range (5–6 s at 630,000 deliveries of
 * a subscription; a probe, 2026-11-29). An object, so that a test can make it small.
 */
export const LOG_SCAN = { budget: 5000 };

/** A page of a log list, and, when its walk read the whole budget, the id of the last row it read (go on after it). */
export type ScannedPage<R> = R[] & { scanEnd?: string };

/**
 * Where a budgeted walk of `table` (alias `alias`) stops: the id of the LOG_SCAN.budget-th row of its range (`walk`,
 * the conditions of an index range whose order ends with the id, `order`), or null when fewer are left. Read from
 * the index alone, in order; the page then reads that slice of the range (ids from the edge on) and nothing more,
 * whatever plan it gets. `params`: the list's so far, those the walk names first.
 */
export async function scanEdge(db: Queryable, table: string, alias: string, walk: string[], order: string, params: unknown[]): Promise<string | null> {
  // The offset a parameter: planned not knowing it, the planner takes the first rows of an ordered scan to be what
  // counts (10% of its estimate), not a sort of the whole range, which a literal 4,999 of a small table could get.
  const text = `${walk.join(' AND ')} ORDER BY ${order}`;
  // The walk's own: the parameters it names, the first n of the list's (a range that leaves the subscription to the
  // per-row test does not name its parameter, which PostgreSQL would refuse to bind).
  const own = params.slice(0, Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]))));
  const sql = `SELECT ${alias}.id FROM ${table} ${alias} WHERE ${text} OFFSET $${own.length + 1}::int LIMIT 1`;
  const r = await db.query<{ id: string }>(sql, [...own, LOG_SCAN.budget - 1], statementName('webhook_log_edge', sql));
  return r.rows.length ? String(r.rows[0].id) : null;
}

/**
 * A budgeted page (walkSql): the first LOG_SCAN.budget rows of `table` in the range `walk` from `edge` on (scanEdge:
 * it bounds the read whatever the plan), in order, each joined to what `hit` needs (`joins`: LATERAL probes, one per
 * row), those `hit` holds, up to `limit`, and the budget's last row read (`scan_edge`), where the next page starts
 * (scanned).
 */
export function scannedSql(table: string, alias: string, walk: string[], edge: string | undefined, hit: string[], order: string, limit: number, columns: string, joins: string): string {
  const where = edge === undefined ? walk : [...walk, `${alias}.id >= ${edge}::bigint`];
  return walkSql({ table, alias, where, order, hit: hit.length ? hit.join(' AND ') : 'true', hitAfterJoins: true, budget: LOG_SCAN.budget, limit, columns, joins });
}

/** An index range a log list may walk: its conditions (`where`) and its order, which ends with the id. */
export interface LogRange { where: string[]; order: string }

/**
 * Which of a list's index ranges to walk for a page, and its edge (scanEdge): every range holds all the rows the list
 * shows, so the first that ends within the budget (no edge: walked whole, the page is complete), else the one whose
 * edge lies furthest back, the longest stretch of ids a budget covers (a subscription's few failed deliveries: the
 * failed ones' range, not the subscription's; a few deliveries of a subscription among many failed: its range).
 */
export async function scanWalk(db: Queryable, table: string, alias: string, ranges: LogRange[], params: unknown[]): Promise<{ range: LogRange; edge: string | null }> {
  let best: { range: LogRange; edge: string } | undefined;
  for (const range of ranges) {
    const edge = await scanEdge(db, table, alias, range.where, range.order, [...params]);
    if (edge === null) return { range, edge };
    if (best === undefined || BigInt(edge) < BigInt(best.edge)) best = { range, edge };
  }
  return best!;
}

/**
 * A page's rows cut to limit + 1 (fetchSize may read more), without the budget's last row when it is there only to
 * say where the walk stopped (scannedSql): then its id is scanEnd.
 */
export function scanned<R extends { id: string }>(rows: (R & Partial<Walked<unknown>>)[], limit: number): ScannedPage<R> {
  const { page, edge } = walked(rows);
  const out: ScannedPage<R> = page.slice(0, limit + 1);
  if (edge) out.scanEnd = String(edge.id);
  return out;
}

/**
 * What both log lists start from, in this order of parameters: the event type's count (undefined: no type to filter
 * by), its events as an ARRAY(…) when they are few, the cursor, and the subscription's id as a subquery.
 */
export async function logScope(db: Queryable, eventType: string | undefined, subscription: string | undefined, before: string | null, param: (v: unknown) => string) {
  const events = eventType === undefined ? undefined : await countEvents(db, eventType);
  return {
    events,
    fewEvents: events !== undefined && events < FEW_EVENTS ? `ARRAY(${eventsOfType(eventType!)})` : undefined,
    cursor: `${param(before ?? NO_CURSOR)}::bigint`,
    sub: subscription === undefined ? undefined : `(SELECT id FROM webhook_subscriptions WHERE uuid = ${param(subscription)}::uuid)`,
  };
}

/**
 * Newest first, before the cursor. The text depends only on which filters are present (and the status, the event
 * type's shape and the page size), so each shape is a named statement with one generic plan, and each is written
 * so that plan reads what it lists whatever the values: with an event type that has few events, the ids of their
 * deliveries, then those; with a subscription, a range of webhook_deliveries_sub in its order (a range, not
 * `subscription_id = …`, which would let the plan walk the primary key and filter, the whole table for a
 * subscription with few deliveries); with a status that is few (pending, failed, cancelled), a range of the partial
 * webhook_deliveries_status; delivered ones, the partial webhook_deliveries_delivered in id order (migration 038: the
 * primary key walked through every pending delivery newer than them, the whole backlog behind an endpoint that is
 * down); else the primary key, walked. No index holds a subscription's deliveries of a status in id order (the
 * pending ones of webhook_deliveries_due are in next_attempt_at order): with both, or with a common event type
 * (FEW_EVENTS or more), one of those ranges is walked, LOG_SCAN.budget rows a page at most (scanWalk: the
 * subscription's or the status's, whichever ends within the budget or reaches further back), each joined to its
 * event (scannedSql), any other filter tested on each: such a page may hold fewer rows than its limit, none even,
 * and carry scanEnd, where the next one starts.
 */
export async function listDeliveries(
  db: Queryable,
  q: { status?: string; subscription?: string; eventType?: string; limit: number },
  before: string | null,
): Promise<ScannedPage<DeliveryRow>> {
  const params: unknown[] = [];
  const param = (v: unknown) => `$${params.push(v)}`;
  if (q.status !== undefined && !DELIVERY_STATUSES.includes(q.status)) return [];
  const status = q.status === undefined ? undefined : `'${q.status}'`; // one of DELIVERY_STATUSES: a literal, so a shape per status
  const { events, fewEvents, cursor, sub } = await logScope(db, q.eventType, q.subscription, before, param);
  if (events === 0) return [];
  if (fewEvents) {
    // Their ids first, then those deliveries by primary key: as `d.event_id = ANY(…)` the planner, unsure how many
    // deliveries that is, may walk the primary key and filter.
    const where = [`d.id = ANY(ARRAY(SELECT x.id FROM webhook_deliveries x WHERE x.event_id = ANY(${fewEvents})))`, `d.id < ${cursor}`];
    if (sub) where.push(`d.subscription_id = ${sub}`);
    if (status) where.push(`d.status = ${status}`);
    return deliveryPage(db, where, 'd.id DESC', q.limit, params);
  }
  // The ranges that hold every row asked for: the subscription's, the status's (delivered ones: the partial
  // webhook_deliveries_delivered in id order), else the primary key's.
  const bySub: LogRange | undefined = !sub ? undefined
    : { where: [`(d.subscription_id, d.id) < (${sub}, ${cursor})`, `d.subscription_id >= ${sub}`], order: 'd.subscription_id DESC, d.id DESC' };
  const byStatus: LogRange | undefined = !status ? undefined : status !== "'delivered'"
    ? { where: [`d.status <> 'delivered'`, `(d.status, d.id) < (${status}, ${cursor})`, `d.status >= ${status}`], order: 'd.status DESC, d.id DESC' }
    : { where: [`d.id < ${cursor}`, `d.status = ${status}`], order: 'd.id DESC' };
  // The subscription's first: a small one ends within the budget, its page read whole before the status's is looked at.
  const ranges = [bySub, byStatus].filter((x): x is LogRange => x !== undefined);
  if (ranges.length === 0) ranges.push({ where: [`d.id < ${cursor}`], order: 'd.id DESC' });
  // One range that holds exactly the rows asked for: a page of it.
  if (ranges.length === 1 && events === undefined) return deliveryPage(db, ranges[0].where, ranges[0].order, q.limit, params);
  // Else (a common event type, a subscription and a status) a budgeted walk (LOG_SCAN) of one of them, what it does
  // not hold tested per row.
  const { range, edge } = await scanWalk(db, 'webhook_deliveries', 'd', ranges, params);
  const hit: string[] = [];
  if (sub && range !== bySub) hit.push(`d.subscription_id = ${sub}`);
  if (status && range !== byStatus) hit.push(`d.status = ${status}`);
  if (events !== undefined) hit.push(`e.event_type = ${param(q.eventType)}`);
  const sql = scannedSql('webhook_deliveries', 'd', range.where, edge === null ? undefined : param(edge), hit, range.order, fetchSize(q.limit), DELIVERY_COLUMNS,
    `${lateral('events', 'e', eventOfDelivery('d', 'e'))} ${lateral('webhook_subscriptions', 's', 's.id = d.subscription_id')}`);
  const r = await db.query<DeliveryRow>(sql, params, statementName('webhook_deliveries_list', sql));
  return scanned(r.rows, q.limit);
}

/** A page of deliveries whose range `where` holds exactly the rows asked for. */
async function deliveryPage(db: Queryable, where: string[], order: string, limit: number, params: unknown[]): Promise<DeliveryRow[]> {
  const sql = pageFirst('webhook_deliveries', 'd', where, order, fetchSize(limit), DELIVERY_COLUMNS, DELIVERY_JOINS);
  const r = await db.query<DeliveryRow>(sql, params, statementName('webhook_deliveries_list', sql));
  return r.rows.slice(0, limit + 1);
}

export async function findDelivery(db: Queryable, uuid: string): Promise<DeliveryRow | undefined> {
  const params: unknown[] = [uuid];
  const r = await db.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE d.uuid = $1${uuidTimeBound(uuid, 'd', params)}`, params);
  return r.rows[0];
}

/**
 * Queues one delivery for an attempt now. A pending one remembers where its schedule stood (resume_at /
 * resume_pos, restored by outcomes.ts if the manual attempt fails); any other gets a single attempt. False (nothing
 * changed) while the attempt an earlier manual retry asked for is under way: its result restores the saved schedule,
 * which would undo this one's "now" (a second retry answered 202 and sent nothing until 2026-11-29; a probe).
 */
export async function retryDelivery(db: Queryable, d: Pick<DeliveryRow, 'id' | 'created_at'>, noMoreRetries: number): Promise<boolean> {
  const r = await db.query(
    `UPDATE webhook_deliveries SET
       resume_at = CASE WHEN status = 'pending' THEN coalesce(resume_at, next_attempt_at) END,
       resume_pos = CASE WHEN status = 'pending' THEN coalesce(resume_pos, schedule_pos) END,
       schedule_pos = CASE WHEN status = 'pending' THEN schedule_pos ELSE $2 END,
       status = 'pending', next_attempt_at = clock_timestamp(),
       locked_until = CASE WHEN status = 'pending' THEN locked_until END,
       lock_token = CASE WHEN status = 'pending' THEN lock_token END, updated_at = clock_timestamp()
     WHERE id = $1 AND created_at = $3::timestamptz -- its partition's key: one partition (docs/partitioning.md)
       -- Under way: an attempt a retry (or a recover) asked for: a pending delivery's (its schedule saved) or a single
       -- attempt's (a failed or delivered one's, schedule_pos past the end).
       AND NOT (status = 'pending' AND (resume_pos IS NOT NULL OR schedule_pos = $2) AND lock_token IS NOT NULL AND locked_until > clock_timestamp())`,
    [d.id, noMoreRetries, d.created_at],
  );
  if (r.rowCount === 0) return false;
  await notifyWorkers(db);
  return true;
}

/** Re-queues every failed delivery of a subscription created since `since`. Returns how many. */
export async function recoverDeliveries(db: Queryable, subscriptionId: string, since: string, noMoreRetries: number): Promise<number> {
  // Only those whose event is still stored (past BULB_EVENT_RETENTION_DAYS it is gone: queued, the delivery stayed
  // pending for ever, leased again and again and never sent). The caller holds requeueGuard.
  const r = await db.query(
    `UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = clock_timestamp(), schedule_pos = $3, updated_at = clock_timestamp()
     WHERE d.subscription_id = $1 AND d.status = 'failed' AND d.created_at >= $2
       AND EXISTS (SELECT 1 FROM events e WHERE ${eventOfDelivery('d', 'e')})`,
    [subscriptionId, since, noMoreRetries],
  );
  if (r.rowCount > 0) await notifyWorkers(db);
  return r.rowCount;
}
