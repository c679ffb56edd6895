// SQL of the delivery queue: claim due deliveries of named subscriptions under a lease, find which
// subscriptions have work (fallback sweep), write attempt results in batches, release claims, gauges, retention.
import type { Queryable } from '../db/db.ts';
import { cancelPending, RETIRED_SECRETS_SQL } from './store.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { openSecret } from '../secrets/active.ts';
import { SecretError } from '../secrets/box.ts';
import { memoize } from '../memo.ts';
import { HELD_CEILINGS } from './lanes.ts';
import type { SignedPart } from './attempt-request.ts';
import { RECEIVER_AUTH_COLUMNS, type Claimed } from './claimed.ts';
import { eventOfDelivery } from '../partitions/keys.ts';

/** What the dispatcher asks of one subscription's lane: at most `room` due deliveries. */
export interface LaneAsk {
  subscriptionId: string;
  room: number;
  /** Deliveries this lane holds in this process, in flight or waiting (room + held ≤ ceilings × maxInFlight). */
  held: number;
  /** Most it may hold, in units of maxInFlight: HELD_CEILINGS (the default), × BROKER_PIPELINE for a broker destination (lanes.ts). */
  ceilings?: number;
}

/** A claimed delivery with its event, as the claim sends it: one JSON array, in this order (name, SQL). */
const CLAIMED_FIELDS = [
  ['id', 'u.id::text'], ['uuid', 'u.uuid'], ['attempt_count', 'u.attempt_count'], ['schedule_pos', 'u.schedule_pos'],
  ['event_id', 'e.id::text'], ['event_uuid', 'e.uuid'], ['event_type', 'e.event_type'], ['resource_type', 'e.resource_type'],
  ['resource_uuid', 'e.resource_uuid'], ['resource_external_id', 'e.resource_external_id'], ['source', 'e.source'],
  ['event_created_at', 'e.created_at::text'], ['created_at', 'u.created_at::text'],
  ['due_at_ms', 'extract(epoch FROM u.next_attempt_at)::float8 * 1000'],
] as const;
type ClaimedTuple = [string, string, number, number, string, string, string, string, string, string | null, string, string, string, number | null];

/**
 * One claimed lane: the subscription's columns, its deliveries as JSON (CLAIMED_FIELDS per delivery; null: a
 * rate-capped lane that got none), and for a rate-capped one its rate, the slots it could take, when its first slot
 * falls and when its next claim is worth making (ms from the statement's clock).
 */
type ClaimedLane = Omit<Claimed, (typeof CLAIMED_FIELDS)[number][0] | 'secret_error' | 'send_in_ms' | 'slot_ms' | 'due_at_ms'> & {
  deliveries: string | null;
  max_per_second: number | null;
  rate_slots: number | null;
  send_in_ms: number | null;
  reclaim_in_ms: number | null;
  clock_ms: number;
};

/** What a claim says of a rate-capped lane: the rate held it back (it had slots for fewer than asked), and until when. */
export interface RateHold {
  subscription_id: string;
  /** Slots the claim could give (≥ what it took). */
  slots: number;
  /** When its next claim is worth making (ms from the answer). */
  reclaim_in_ms: number;
}

/**
 * How far ahead a claim takes send slots of a rate-capped subscription (ms): at most this much of its rate at a time.
 * Its next claim is worth making once half of it has passed (RATE_RECLAIM_MS before the last slot taken), and once
 * the horizon reaches a slot (at 1/s, when the last slot taken comes).
 */
export const RATE_HORIZON_MS = 1000;
const RATE_RECLAIM_MS = RATE_HORIZON_MS / 2;

/**
 * How far ahead of its due time a claim may take a delivery of a lane without a rate cap (ms): the worker claims a
 * retry this much before it falls due and sends it at its time, so the claim's round trip is not part of its
 * lateness (on PGlite, whose one session serves the API too, 2–45 ms under load: docs/delivery-policies.md).
 * Likewise the end of a Retry-After pause, for every lane (a rate-capped lane's slots start at the pause's end).
 */
export const CLAIM_AHEAD_MS = 50;
/**
 * How much further than the worker's own horizon (its now + CLAIM_AHEAD_MS) the claim takes an uncapped lane's
 * deliveries. The worker keeps due times on its clock, converted from the database's (slots.ts ClaimClock) with an
 * offset up to about a millisecond early, and forgets one once its horizon reaches it: a delivery due just past the
 * database's horizon was neither claimed nor remembered, and waited for the next sweep (test/webhooks/claim-horizon).
 */
export const CLAIM_SLACK_MS = 5;

/**
 * The claim (claimLanes): $1 lane ids, $2 rooms, $3 lease ms, $4 lock token, $5 held per lane, $6 ceilings held per lane. Exported for the bench's EXPLAIN.
 * A rate-capped subscription (max_per_second) is locked first, in id order (claims of one capped subscription take its
 * slots one after another, whichever process runs them), before any delivery row (the InitPlan counting `capped` in
 * `ws`), so a claim never waits for a subscription while holding deliveries. Its slots run from rate_tat (or now, or
 * the end of a Retry-After pause the claim is ahead of)
 * at 1/max_per_second apart, at most RATE_HORIZON_MS ahead; the claim takes as many deliveries as slots (live and
 * replayed together) and moves
 * rate_tat past them, in the same statement.
 */
export const CLAIM_SQL = `WITH w AS (
       SELECT * FROM unnest($1::bigint[], $2::int[], $5::int[], $6::int[]) AS w(sub, room, held, ceilings)
       WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL -- the lease only: see claimLanes
     ), capped AS (
       SELECT s.id, s.max_per_second::float8 AS rate, n.start,
         -- A lane is claimed CLAIM_AHEAD_MS before it is due (its reclaim time too): the horizon counts from then.
         floor(extract(epoch FROM (t.now + ${RATE_HORIZON_MS + CLAIM_AHEAD_MS} * interval '1 millisecond' - n.start)) * s.max_per_second)::int AS slots
       FROM webhook_subscriptions s
       CROSS JOIN LATERAL (SELECT clock_timestamp() AS now) t
       -- A claim made ahead of a Retry-After pause's end (ws) takes slots from that end on, never inside the pause; one
       -- made ahead of the lane's next due time (a scheduled retry: lanes are claimed CLAIM_AHEAD_MS early), from that
       -- time on. Slots from the claim's instant took only deliveries due by then: the retry was left for the sweep.
       CROSS JOIN LATERAL (SELECT greatest(s.rate_tat, t.now,
         CASE WHEN s.paused_until <= t.now + ${CLAIM_AHEAD_MS} * interval '1 millisecond' THEN s.paused_until END,
         (SELECT d.next_attempt_at FROM webhook_deliveries d
          WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= t.now + ${CLAIM_AHEAD_MS} * interval '1 millisecond'
            AND (d.locked_until IS NULL OR d.locked_until <= t.now)
          ORDER BY d.next_attempt_at LIMIT 1)) AS start) n
       WHERE s.id = ANY($1::bigint[]) AND s.max_per_second IS NOT NULL
       ORDER BY s.id FOR NO KEY UPDATE OF s
     ), ws AS (
       SELECT w.sub, greatest(0, least(w.room, w.ceilings * s.max_in_flight - w.held, cap.slots)) AS lim,
         -- How far ahead of its due time a delivery may be claimed: CLAIM_AHEAD_MS, or a capped lane's first slot (a
         -- Retry-After pause's end, rate_tat), which no delivery it takes is due after.
         CASE WHEN cap.id IS NULL THEN ${CLAIM_AHEAD_MS + CLAIM_SLACK_MS} ELSE greatest(0, extract(epoch FROM cap.start - now()) * 1000) END AS ahead FROM w
       JOIN webhook_subscriptions s ON s.id = w.sub AND s.is_active AND s.deleted_at IS NULL
         AND (s.paused_until IS NULL OR s.paused_until <= now() + ${CLAIM_AHEAD_MS} * interval '1 millisecond')
       LEFT JOIN capped cap ON cap.id = w.sub
       WHERE (SELECT count(*) FROM capped) >= 0
     ), live AS MATERIALIZED (
       SELECT ws.sub, c.id, c.created_at FROM ws CROSS JOIN LATERAL (
         SELECT d.id, d.created_at FROM webhook_deliveries d
         WHERE d.subscription_id = ws.sub AND d.status = 'pending' AND d.next_attempt_at <= now() + ws.ahead * interval '1 millisecond'
           AND (d.locked_until IS NULL OR d.locked_until <= now())
         ORDER BY d.next_attempt_at, d.id
         LIMIT ws.lim
         FOR UPDATE OF d SKIP LOCKED
       ) c
     ), replayed AS MATERIALIZED (
       -- Replayed deliveries (next_attempt_at NULL: webhook_replays, migration 048) fill only the room live work left.
       SELECT c.id, c.created_at FROM ws CROSS JOIN LATERAL (
         SELECT d.id, d.created_at FROM webhook_deliveries d
         WHERE d.subscription_id = ws.sub AND d.status = 'pending' AND d.next_attempt_at IS NULL
           AND (d.locked_until IS NULL OR d.locked_until <= now())
         -- next_attempt_at (all null here) first: the order of webhook_deliveries_due, so the plan reads the lane's range
         -- of that index; ORDER BY d.id alone let the generic plan walk the primary key over every delivery (50 ms
         -- per claim at 100,000 deliveries, whenever a lane had no replayed work: docs/replay.md)
         ORDER BY d.next_attempt_at, d.id
         LIMIT greatest(0, ws.lim - (SELECT count(*) FROM live WHERE live.sub = ws.sub))
         FOR UPDATE OF d SKIP LOCKED
       ) c
     ), upd AS (
       UPDATE webhook_deliveries d SET locked_until = now() + $3 * interval '1 millisecond', lock_token = $4
       -- By (id, partition key) pairs, so each row is probed in the one partition holding it (docs/partitioning.md).
       -- Unnested from arrays: a join to the CTEs themselves was planned (generic plan) as a hash join reading every
       -- partition whole; unnest's estimate of a few rows makes it a nested loop of index probes with run-time pruning.
       FROM unnest(ARRAY(SELECT id FROM live UNION ALL SELECT id FROM replayed),
                   ARRAY(SELECT created_at FROM live UNION ALL SELECT created_at FROM replayed)) AS x(id, created_at)
       WHERE d.id = x.id AND d.created_at = x.created_at
       RETURNING d.id, d.uuid, d.attempt_count, d.schedule_pos, d.event_id, d.event_created_at, d.subscription_id, d.next_attempt_at, d.created_at
     ), lanes AS (
       SELECT u.subscription_id, count(*) AS taken, json_agg(json_build_array(${CLAIMED_FIELDS.map(([, sql]) => sql).join(', ')})
         ORDER BY u.next_attempt_at, u.id)::text AS deliveries
       FROM upd u JOIN events e ON ${eventOfDelivery('u', 'e')} GROUP BY u.subscription_id
     ), tat AS (
       UPDATE webhook_subscriptions s SET rate_tat = cap.start + lanes.taken / cap.rate * interval '1 second'
       FROM capped cap JOIN lanes ON lanes.subscription_id = cap.id WHERE s.id = cap.id
       RETURNING s.id
     )
     SELECT s.id AS subscription_id, s.uuid AS subscription_uuid, s.url, s.auth_method, s.bearer_token, s.basic_username,
       s.basic_password, s.webhook_version, s.signing_secret, s.max_in_flight, ${RETIRED_SECRETS_SQL} AS previous_secrets,
       s.destination_password, ${RECEIVER_AUTH_COLUMNS.map((c) => `s.${c}`).join(', ')}, lanes.deliveries, cap.rate AS max_per_second, cap.slots AS rate_slots,
       (extract(epoch FROM s.paused_until) * 1000)::float8 AS paused_until_ms,
       extract(epoch FROM (cap.start - clock_timestamp())) * 1000 AS send_in_ms,
       -- Half the horizon before the last slot taken, but not before the horizon reaches the next slot (+2 ms: a timer
       -- may fire a millisecond early): below 2/s a claim made earlier got none and asked to be made again at once (at
       -- 1/s one every ~1 ms for half of every second, each a transaction locking the subscription).
       extract(epoch FROM (cap.start + coalesce(lanes.taken, 0) / cap.rate * interval '1 second'
         + greatest(-${RATE_RECLAIM_MS}, 1000 / cap.rate - ${RATE_HORIZON_MS} + 2) * interval '1 millisecond' - clock_timestamp())) * 1000 AS reclaim_in_ms,
       extract(epoch FROM clock_timestamp()) * 1000 AS clock_ms
     FROM lanes FULL JOIN capped cap ON cap.id = lanes.subscription_id
       JOIN webhook_subscriptions s ON s.id = coalesce(lanes.subscription_id, cap.id)
     WHERE (SELECT count(*) FROM tat) >= 0`;

/**
 * Claims due deliveries from the named subscriptions only, at most `room` from each (a worker never holds more
 * than HELD_CEILINGS × a subscription's maxInFlight, × BROKER_PIPELINE for a broker: a ceiling in flight, the rest waiting), oldest first, under a
 * lease. Live work first: a replay's deliveries (pending with no next_attempt_at, webhook_replays) take only the
 * room the lane's due live deliveries left, in event order. The cost is that of the rows asked for (one index range per lane, bounded by the claim), whatever the
 * number of subscriptions or the backlog. Inactive, deleted and paused (Retry-After) subscriptions give
 * nothing, but for a pause ending within CLAIM_AHEAD_MS (its deliveries start at its end, like a retry claimed ahead
 * of its due time; a claim before the database's pause ended found nothing, and the lane waited for the fallback
 * sweep, up to 2 s). SKIP LOCKED lets several workers claim the same lane at once without waiting or double-claiming.
 * The claim commits without waiting for its WAL flush (synchronous_commit off for this transaction only): a lease
 * lost in a database crash is a lease expired early, which at-least-once delivery already allows (the attempt is
 * made again), while the wait was most of the claim's latency (median 5 ms → 2 ms in the drain bench) and left the
 * lane's slots empty. Results, attempt rows and everything else commit synchronously.
 * The answer is one row per lane: the subscription's columns (and its retired secrets) once, its claimed deliveries
 * with their events as one JSON array of arrays (CLAIMED_FIELDS), oldest first, which JSON.parse reads natively
 * instead of the driver parsing every column of every row (measured over 20,000-delivery drains: the worker's CPU per delivery −6%).
 * A rate-capped subscription's deliveries come with their send slots (send_in_ms, from the statement's clock `clockMs`);
 * `holds` names the capped lanes that had slots for fewer than asked, and when their next claim is worth making
 * (docs/delivery-policies.md).
 */
export async function claimLanes(db: Queryable, asks: LaneAsk[], leaseMs: number, token: string): Promise<{ claimed: Claimed[]; holds: RateHold[]; clockMs: number | null }> {
  if (asks.length === 0) return { claimed: [], holds: [], clockMs: null };
  const r = await db.query<ClaimedLane>(
    CLAIM_SQL,
    [asks.map((a) => a.subscriptionId), asks.map((a) => a.room), leaseMs, token, asks.map((a) => a.held), asks.map((a) => a.ceilings ?? HELD_CEILINGS)],
    'webhook_claim',
  );
  const claimed: Claimed[] = [];
  const holds: RateHold[] = [];
  for (const l of r.rows) {
    const rate = l.max_per_second === null ? null : Number(l.max_per_second);
    const list = l.deliveries === null ? [] : (JSON.parse(l.deliveries) as ClaimedTuple[]);
    if (rate !== null) {
      const ask = asks.find((a) => a.subscriptionId === String(l.subscription_id));
      const slots = Number(l.rate_slots);
      if (ask && slots < ask.room) holds.push({ subscription_id: String(l.subscription_id), slots, reclaim_in_ms: Number(l.reclaim_in_ms) });
    }
    if (list.length === 0) continue;
    // Secrets are stored sealed (SPEC §15): open them for signing and sending (once per sealed value, not per row).
    const sec = openLane(l);
    const sub = {
      subscription_id: String(l.subscription_id), subscription_uuid: l.subscription_uuid, url: l.url, auth_method: l.auth_method,
      bearer_token: sec.bearer_token, basic_username: l.basic_username, basic_password: sec.basic_password,
      webhook_version: l.webhook_version, signing_secret: sec.signing_secret, max_in_flight: l.max_in_flight, paused_until_ms: l.paused_until_ms,
      previous_secrets: sec.previous_secrets, destination_password: sec.destination_password, secret_error: sec.error,
      oauth2_token_url: l.oauth2_token_url, oauth2_client_id: l.oauth2_client_id, oauth2_client_secret: sec.oauth2_client_secret,
      oauth2_scope: l.oauth2_scope, oauth2_audience: l.oauth2_audience, tls_client_certificate: l.tls_client_certificate,
      tls_client_key: sec.tls_client_key, tls_ca_certificate: l.tls_ca_certificate,
    };
    const sendIn = l.send_in_ms === null ? null : Number(l.send_in_ms);
    list.forEach((d, i) => {
      claimed.push({
        id: d[0], uuid: d[1], attempt_count: d[2], schedule_pos: d[3], event_id: d[4], event_uuid: d[5],
        event_type: d[6], resource_type: d[7], resource_uuid: d[8], resource_external_id: d[9], source: d[10], event_created_at: d[11], created_at: d[12],
        due_at_ms: d[13],
        subscription_id: sub.subscription_id, subscription_uuid: sub.subscription_uuid, url: sub.url, auth_method: sub.auth_method,
        bearer_token: sub.bearer_token, basic_username: sub.basic_username, basic_password: sub.basic_password,
        webhook_version: sub.webhook_version, signing_secret: sub.signing_secret, max_in_flight: sub.max_in_flight, paused_until_ms: sub.paused_until_ms,
        previous_secrets: sub.previous_secrets, destination_password: sub.destination_password, secret_error: sub.secret_error,
        // The i-th slot of this claim: 1/rate after the one before (oldest delivery first, as the claim ordered them).
        send_in_ms: sendIn === null || rate === null ? null : sendIn + (i * 1000) / rate,
        slot_ms: rate === null ? null : 1000 / rate,
        oauth2_token_url: sub.oauth2_token_url, oauth2_client_id: sub.oauth2_client_id, oauth2_client_secret: sub.oauth2_client_secret,
        oauth2_scope: sub.oauth2_scope, oauth2_audience: sub.oauth2_audience, tls_client_certificate: sub.tls_client_certificate,
        tls_client_key: sub.tls_client_key, tls_ca_certificate: sub.tls_ca_certificate,
      });
    });
  }
  // The statement's clock (epoch ms), read once per lane row in the same instant: slot times count from it (slots.ts).
  return { claimed, holds, clockMs: r.rows.length > 0 ? Number(r.rows[0].clock_ms) : null };
}

/** Sealed secret → clear text, for the claims of this process (a few per subscription). */
const openSealed = memoize((sealed: string) => openSecret(sealed));

function opened<T extends string | null>(sealed: T): T {
  return (sealed === null ? sealed : openSealed(sealed)) as T;
}

/**
 * A claimed lane's secrets in clear, or, when one of them cannot be opened (sealed under a key this process lacks,
 * altered), none and the reason: that subscription's attempts fail, the other lanes of the claim go on.
 */
function openLane(l: ClaimedLane): {
  bearer_token: string | null; basic_password: string | null; signing_secret: string; previous_secrets: string[];
  destination_password: string | null; oauth2_client_secret: string | null; tls_client_key: string | null; error: string | null;
} {
  const field = { bearer_token: 'bearerToken', basic_password: 'basicPassword', signing_secret: 'signing secret' } as const;
  let which = '';
  try {
    which = 'oauth2.clientSecret';
    const oauth2_client_secret = opened(l.oauth2_client_secret);
    which = 'tls.clientKey';
    const tls_client_key = opened(l.tls_client_key);
    which = field.bearer_token;
    const bearer_token = opened(l.bearer_token);
    which = field.basic_password;
    const basic_password = opened(l.basic_password);
    which = field.signing_secret;
    const signing_secret = opened(l.signing_secret);
    // A rotated-out secret that cannot be opened only leaves its extra signature out: the current one signs. (It
    // failed the lane's every attempt until its 24 h ran out, rotating again did not help; 2026-11-30.)
    const previous_secrets = l.previous_secrets.flatMap((p) => {
      try {
        return [opened(p)];
      } catch (err) {
        if (err instanceof SecretError) return [];
        throw err;
      }
    });
    which = "URL's password";
    const destination_password = opened(l.destination_password);
    return { bearer_token, basic_password, signing_secret, previous_secrets, destination_password, oauth2_client_secret, tls_client_key, error: null };
  } catch (err) {
    const why = err instanceof SecretError ? err.message : String(err);
    return {
      bearer_token: null, basic_password: null, signing_secret: '', previous_secrets: [], destination_password: null, oauth2_client_secret: null, tls_client_key: null,
      error: `not sent: the subscription's ${which} cannot be opened (${why}); start the workers with the key it was sealed under, or set the value again (PATCH the credential or the URL, or rotate the signing secret)`,
    };
  }
}

/** A subscription with pending work and when its first claimable delivery falls due (ms from now, ≤ 0: due). */
export interface LaneDue {
  subscription_id: string;
  due_in_ms: number;
  max_in_flight: number;
}

/**
 * The fallback sweep (start, every few seconds, a '*' notification): which active subscriptions have
 * pending deliveries, and when each one's first claimable delivery is due (an expired lease of a dead
 * worker counts as claimable from its expiry). A loose index scan: one probe per subscription with pending
 * work; the claim itself never does this. Per subscription it reads the leased head of its queue and one row
 * more: the first delivery not under a live lease (`a`, the earliest of them by the index order), and the
 * leases ahead of it (`b`, claimable when they expire). A lease behind `a` cannot be claimable before `a`.
 * Replayed deliveries (no next_attempt_at) make a lane due now while one of them is not under a live lease (`r`).
 *
 * A deleted subscription found with pending deliveries has them cancelled here (a second statement, only then):
 * deleteSubscription cancels those it sees, but a change committing while the delete runs fans out from a snapshot
 * in which the subscription is still active, and inserts its delivery after the delete has committed. Nothing claims
 * it; until 2026-11-29 the hourly housekeeping cancelled it (found pending by a probe: 2–6 deliveries in 15 of 16
 * deletes under load), now the next sweep does.
 */
export async function discoverLanes(db: Queryable): Promise<LaneDue[]> {
  const r = await db.query<LaneDue & { deleted: boolean }>(
    `WITH RECURSIVE subs(id) AS (
       (SELECT subscription_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY subscription_id LIMIT 1)
       UNION ALL
       SELECT (SELECT subscription_id FROM webhook_deliveries WHERE status = 'pending' AND subscription_id > subs.id
               ORDER BY subscription_id LIMIT 1)
       FROM subs WHERE subs.id IS NOT NULL
     )
     SELECT s.id AS subscription_id, s.max_in_flight, s.deleted_at IS NOT NULL AS deleted,
       extract(epoch FROM (greatest(n.due, coalesce(s.paused_until, n.due)) - clock_timestamp())) * 1000 AS due_in_ms
     FROM subs JOIN webhook_subscriptions s ON s.id = subs.id AND (s.deleted_at IS NOT NULL OR s.is_active)
     LEFT JOIN LATERAL (
       SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
       WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.next_attempt_at IS NOT NULL
         AND (d.locked_until IS NULL OR d.locked_until <= now())
       ORDER BY d.next_attempt_at, d.id LIMIT 1
     ) a ON true
     CROSS JOIN LATERAL (
       SELECT min(greatest(d.next_attempt_at, d.locked_until)) AS due FROM webhook_deliveries d
       WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.locked_until > now()
         AND (d.next_attempt_at, d.id) < (coalesce(a.next_attempt_at, 'infinity'), coalesce(a.id, 0))
     ) b
     LEFT JOIN LATERAL (
       SELECT now() AS due FROM webhook_deliveries d
       WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.next_attempt_at IS NULL
         AND (d.locked_until IS NULL OR d.locked_until <= now())
       LIMIT 1
     ) r ON true
     CROSS JOIN LATERAL (SELECT least(a.next_attempt_at, b.due, r.due) AS due) n
     WHERE n.due IS NOT NULL OR s.deleted_at IS NOT NULL`,
  );
  const stranded = r.rows.filter((x) => x.deleted).map((x) => String(x.subscription_id));
  if (stranded.length > 0) await cancelPending(db, stranded);
  return r.rows.filter((x) => !x.deleted).map(({ deleted: _, ...x }) => ({ ...x, subscription_id: String(x.subscription_id), due_in_ms: Number(x.due_in_ms) }));
}

export interface AttemptResult {
  deliveryId: string;
  /** The delivery's created_at (its partition's key), as claimed. */
  deliveryCreatedAt: string;
  lockToken: string;
  subscriptionId: string;
  attemptNumber: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  errorCode: string | null;
  ok: boolean;
  /** Where the delivery stood in its retry schedule when claimed: a failure waits the schedule's step at this index. */
  schedulePos: number;
  /**
   * Retry-After of a 429/503 that defers the delivery (ms, 1 s–1 h: retryAfterPause in schedule.ts): it waits that
   * long without moving along its schedule, and the subscription's other deliveries wait too (paused_until). Null when
   * there was none, or when the delivery has used its deferrals (retryAfterDefers): then leastDelayMs.
   */
  retryAfterMs: number | null;
  /**
   * Retry-After of a 429/503 that no longer defers the delivery: an ordinary failure (a step of the schedule, or the
   * last attempt) whose next attempt waits at least this long; the subscription pauses as long. Absent: none.
   */
  leastDelayMs?: number | null;
  /**
   * When the attempt ended (its answer, or its failure), as performance.now(): a failure's schedule delay counts from
   * then, not from the result's write, which came up to hundreds of ms later (the first write of a process, a failure's
   * transaction on a loaded PGlite). Absent: from the write.
   */
  endedAt?: number;
  /** The request as the row keeps it (docs/delivery.md "What an attempt row holds"). */
  request: StoredRequest;
  responseBody: string | null;
}

/**
 * Lean: the version of the subscription's sending config it used (versions-store.ts) and the attempt's signed part,
 * from which the logs rebuild the request (attempt-request.ts); whole: a request that would not rebuild exactly.
 */
export type StoredRequest = ({ versionId: number } & SignedPart) | { url: string; headers: Record<string, string>; body: string };

/** What one batch of results says about one subscription (its results in time order): its health update. */
export interface SubOutcome {
  subscriptionId: string;
  /** Time of the last successful attempt in the batch (null: none). */
  lastOkAt: string | null;
  /** Failures after that success (or all of them when none succeeded). */
  failures: number;
  /** The first of those failures. */
  firstFailureAt: string | null;
  /** The last of those failures. */
  lastFailureAt: string | null;
  /** e.g. "HTTP_STATUS 500", "TIMEOUT": the last failure's error. */
  lastError: string | null;
  /** The longest Retry-After in the batch (ms): the subscription's attempts wait that long (paused_until). */
  pauseMs: number | null;
  /** When one of those failures was a 410 Gone (the first): the subscription is disabled at once. */
  goneAt: string | null;
}

/** The service's retry schedule (seconds; for subscriptions without their own) and how long a second of it lasts (ms). */
export interface RetryDefaults {
  defaultSchedule: number[];
  unitMs: number;
}

/** A delivery's state after a result: when pending, its next attempt's time and how far off it was (ms) at the write. */
export interface DeliveryState {
  id: string;
  status: string;
  next_attempt_at: string | null;
  due_in_ms: number | string | null;
  /** next_attempt_at as epoch ms of the database's clock (null: not pending). */
  due_at_ms: number | string | null;
  /** After a Retry-After answer: the end of the subscription's pause as this write set it, epoch ms of the database's clock (else null). */
  paused_until_ms: number | string | null;
}

/**
 * Writes a batch of attempt outcomes in one statement (one round trip, where it was a transaction of five), in
 * this order:
 * - the subscriptions are locked in id order (so workers recording results for the same subscriptions at once
 *   never deadlock, and before any delivery row, as the API's delete does), their health counters (SPEC §11)
 *   folded from `outs` and their Retry-After pauses set (the deferring ones of `outs` and the others of the results:
 *   one UPDATE, as a row updated twice in one statement keeps only one of the two);
 * - then (each step waits for the one before through a one-time filter) each delivery's new state, only if this
 *   claim still holds it and it was not cancelled meanwhile; a failure's next attempt waits the next step of the
 *   subscription's retry schedule as it stands at this write (a PATCH applies to the next retry of pending deliveries),
 *   jittered by its retryJitter, counted from the attempt's end (and no sooner than a Retry-After past the deferrals
 *   asks: the subscription's pause), and past the schedule's end the delivery is failed; a deferring Retry-After
 *   keeps the step and is due when the subscription's pause ends; a manual retry of a pending delivery (resume_pos
 *   set) that does not deliver goes back to the schedule it interrupted (the manual attempt consumed nothing: a
 *   replayed one never attempted goes back to its replay's queue, resume_at null), and its log row shows that next
 *   attempt; a delivered one forgets the saved schedule; the single attempt of a delivery delivered before (a manual
 *   re-send) that fails leaves it delivered (it was failed, its deliveredAt kept, until 2026-11-29: listed as failed
 *   and sent again by a recover; a probe);
 * - the attempt rows, lean: no uuid (rebuilt from the id), no event (the delivery's), and the request as `request`
 *   says (attempt-request.ts).
 * Returns the new states. The one place attempt results reach the database.
 */
export async function recordResults(
  db: Queryable, rs: AttemptResult[], outs: SubOutcome[], streakGapHours: number, policy: RetryDefaults,
): Promise<DeliveryState[]> {
  if (rs.length === 0) return [];
  const sent = performance.now();
  const r = await db.query<DeliveryState>(
    `WITH j AS (
       SELECT * FROM json_to_recordset($2::json) AS j(delivery_id bigint, delivery_created_at timestamptz, token uuid, subscription_id bigint,
         attempt_number int, started_at timestamptz, duration_ms int, status_code int, error_code text, ok boolean,
         schedule_pos int, version_id int, signatures text, timestamp_skew int, url text, request_headers jsonb, request_body text,
         response_body text, retry_after_ms float8, least_delay_ms float8, ended_ago_ms float8)
     ), r AS (
       -- A failure's delay before the next attempt: the subscription's schedule as it stands now (or the service's, $5),
       -- step schedule_pos, in units of $6 ms, jittered uniformly by ±retry_jitter %; null past its end (failed).
       -- Counted from the attempt's end: now less how long ago the worker saw it end, measured on its monotonic clock
       -- as the statement was sent (its trip to here is not subtracted: never early, whatever the two clocks say).
       SELECT j.*, CASE WHEN NOT j.ok THEN (coalesce(s.retry_schedule::float8[], $5::float8[]))[j.schedule_pos + 1] * $6
           * (1 + coalesce(s.retry_jitter, 0)::float8 / 100 * (2 * random() - 1)) END AS delay_ms,
         clock_timestamp() - coalesce(j.ended_ago_ms, 0) * interval '1 millisecond' AS ended_at
       FROM j LEFT JOIN webhook_subscriptions s ON s.id = j.subscription_id
     ), x AS (
       SELECT * FROM json_to_recordset($3::json) AS x(sub bigint, last_ok timestamptz, fails int, first_fail timestamptz, last_fail timestamptz, pause_ms float8)
     ), locked AS (
       SELECT id FROM webhook_subscriptions WHERE id IN (SELECT sub FROM x) ORDER BY id FOR NO KEY UPDATE
     ), health AS (
       UPDATE webhook_subscriptions s SET
         last_success_at = CASE WHEN x.last_ok IS NULL THEN s.last_success_at ELSE greatest(s.last_success_at, x.last_ok) END,
         consecutive_failures = CASE WHEN x.last_ok IS NULL THEN s.consecutive_failures + x.fails ELSE x.fails END,
         failing_since = CASE WHEN x.last_ok IS NOT NULL OR s.failing_since IS NULL
             OR x.first_fail - coalesce(s.last_failure_at, s.failing_since) >= $4 * interval '1 hour' THEN x.first_fail
           ELSE s.failing_since END,
         last_failure_at = coalesce(x.last_fail, s.last_failure_at),
         paused_until = CASE WHEN p.ms IS NULL THEN s.paused_until
           ELSE greatest(s.paused_until, clock_timestamp() + p.ms * interval '1 millisecond') END
       -- The longest Retry-After of the subscription's results: the deferring ones (outs), the others (least_delay_ms).
       FROM x CROSS JOIN LATERAL (SELECT greatest(x.pause_ms, max(j.least_delay_ms)) AS ms FROM j WHERE j.subscription_id = x.sub) p
       WHERE s.id = x.sub AND (SELECT count(*) FROM locked) >= 0
       RETURNING s.id, s.paused_until, p.ms IS NOT NULL AS paused
     ), told AS (
       -- Every worker gives back what it holds of a paused subscription (the '-<id>' of notifySubscriptionsChanged) and
       -- claims it again as the pause allows: another worker's deliveries, claimed with their rate slots up to a second
       -- ahead, went out during the pause (found by a probe with two workers, 2026-11-29).
       SELECT pg_notify('${WEBHOOK_CHANNEL}', string_agg('-' || id, ',')) FROM health WHERE paused HAVING count(*) > 0
     ), upd AS (
       UPDATE webhook_deliveries d SET
         status = CASE WHEN r.ok THEN 'delivered' WHEN d.resume_pos IS NOT NULL OR r.retry_after_ms IS NOT NULL OR r.delay_ms IS NOT NULL THEN 'pending'
           WHEN d.delivered_at IS NOT NULL THEN 'delivered' ELSE 'failed' END,
         attempt_count = d.attempt_count + 1,
         schedule_pos = CASE WHEN r.ok THEN d.schedule_pos WHEN d.resume_pos IS NOT NULL THEN d.resume_pos
           WHEN r.retry_after_ms IS NULL AND r.delay_ms IS NOT NULL THEN d.schedule_pos + 1 ELSE d.schedule_pos END,
         next_attempt_at = CASE WHEN r.ok THEN NULL
           -- A manual retry's failure resumes the schedule where it stood, never before this attempt's end: a retry asked
           -- for while the scheduled attempt was under way is made right after it (that attempt's log row said it was
           -- due before it started; found by probing, 2026-11-28).
           -- A replayed delivery never attempted (next_attempt_at null when the retry was asked) goes back to its queue:
           -- it took a schedule step and left the replay's queue until 2026-11-29 (a probe).
           WHEN d.resume_pos IS NOT NULL THEN CASE WHEN d.resume_at IS NOT NULL THEN greatest(d.resume_at, r.ended_at) END
           -- Retry-After: when the subscription's pause (the longest Retry-After of its results, from now) ends.
           WHEN r.retry_after_ms IS NOT NULL THEN h.paused_until
           WHEN r.delay_ms IS NOT NULL THEN greatest(r.ended_at + r.delay_ms * interval '1 millisecond',
             CASE WHEN r.least_delay_ms IS NOT NULL THEN h.paused_until END) END,
         delivered_at = CASE WHEN r.ok THEN clock_timestamp() ELSE d.delivered_at END,
         resume_at = NULL, resume_pos = NULL,
         locked_until = NULL, lock_token = NULL, updated_at = clock_timestamp()
       FROM r JOIN health h ON h.id = r.subscription_id -- the subscription's pause as this statement set it
       WHERE d.id = ANY($1::bigint[]) AND d.id = r.delivery_id AND d.lock_token = r.token AND d.status = 'pending'
         AND d.created_at = ANY($7::timestamptz[]) AND d.created_at = r.delivery_created_at -- one partition each (partitioning.md)
         AND (SELECT count(*) FROM health) >= 0
       RETURNING d.id, d.status, d.next_attempt_at, d.created_at,
         CASE WHEN coalesce(r.retry_after_ms, r.least_delay_ms) IS NOT NULL THEN h.paused_until END AS paused_until
     ), ins AS (
       INSERT INTO webhook_attempts (uuid, delivery_id, delivery_created_at, subscription_id, attempt_number, started_at, duration_ms, status_code,
         error_code, outcome, next_attempt_at, version_id, signatures, timestamp_skew, url, request_headers, request_body, response_body)
       SELECT NULL, r.delivery_id, r.delivery_created_at, r.subscription_id, r.attempt_number, r.started_at, r.duration_ms, r.status_code,
         r.error_code, CASE WHEN r.ok THEN 'success' ELSE 'failure' END, upd.next_attempt_at,
         r.version_id, decode(r.signatures, 'hex'), r.timestamp_skew, r.url, r.request_headers, r.request_body, r.response_body
       FROM r LEFT JOIN upd ON upd.id = r.delivery_id
     )
     SELECT id, status, next_attempt_at, extract(epoch FROM (next_attempt_at - clock_timestamp())) * 1000 AS due_in_ms,
       extract(epoch FROM next_attempt_at) * 1000 AS due_at_ms, extract(epoch FROM paused_until) * 1000 AS paused_until_ms
     FROM upd WHERE (SELECT count(*) FROM told) >= 0`,
    // One JSON text rather than an array per column: serialised natively, not element by element.
    [
      rs.map((x) => x.deliveryId),
      JSON.stringify(rs.map((x) => ({
        delivery_id: x.deliveryId, delivery_created_at: x.deliveryCreatedAt, token: x.lockToken, subscription_id: x.subscriptionId, attempt_number: x.attemptNumber,
        started_at: x.startedAt, duration_ms: x.durationMs, status_code: x.statusCode, error_code: x.errorCode, ok: x.ok,
        schedule_pos: x.schedulePos, ...storedColumns(x.request),
        response_body: x.responseBody === null ? null : x.responseBody.replace(/\u0000/g, ''), retry_after_ms: x.retryAfterMs,
        least_delay_ms: x.leastDelayMs, ended_ago_ms: x.endedAt === undefined ? null : Math.max(0, sent - x.endedAt),
      }))),
      JSON.stringify(outs.map((o) => ({ sub: o.subscriptionId, last_ok: o.lastOkAt, fails: o.failures, first_fail: o.firstFailureAt, last_fail: o.lastFailureAt, pause_ms: o.pauseMs }))),
      streakGapHours,
      policy.defaultSchedule,
      policy.unitMs,
      rs.map((x) => x.deliveryCreatedAt),
    ],
    'webhook_record',
  );
  if (r.rows.length < rs.length) await countCancelledAttempts(db, rs, r.rows);
  return r.rows;
}

/**
 * An attempt whose delivery was cancelled while it ran (its subscription deleted) is logged, but its result is not
 * applied: its attemptCount still counts it (it was 0 beside a logged attempt; found by probing, 2026-11-28). Only the
 * results the statement above did not apply get here (rare: a cancel, or a lease lost to another worker).
 */
async function countCancelledAttempts(db: Queryable, rs: AttemptResult[], applied: DeliveryState[]): Promise<void> {
  const done = new Set(applied.map((a) => String(a.id)));
  const rest = rs.filter((x) => !done.has(String(x.deliveryId)));
  await db.query(
    `UPDATE webhook_deliveries d SET attempt_count = d.attempt_count + 1, updated_at = clock_timestamp()
     FROM unnest($1::bigint[], $2::timestamptz[]) AS r(id, created_at)
     WHERE d.id = r.id AND d.created_at = r.created_at AND d.status = 'cancelled'`,
    [rest.map((x) => x.deliveryId), rest.map((x) => x.deliveryCreatedAt)],
  );
}

/** A request's columns: lean (url, request_headers, request_body null) or whole (version_id, signatures, timestamp_skew null). */
function storedColumns(r: StoredRequest) {
  return 'versionId' in r
    ? { version_id: r.versionId, signatures: r.signatures, timestamp_skew: r.timestampSkew }
    : { url: r.url, request_headers: r.headers, request_body: r.body };
}

/**
 * Gives claims back without an attempt (shutdown): they are due again at once for any worker. The (id, created_at)
 * pairs from `unnest`: a primary-key probe in one partition each (docs/partitioning.md).
 */
export async function releaseClaims(db: Queryable, claims: Pick<Claimed, 'id' | 'created_at'>[], token: string): Promise<void> {
  if (claims.length === 0) return;
  await db.query(
    `UPDATE webhook_deliveries d SET locked_until = NULL, lock_token = NULL
     FROM unnest($1::bigint[], $3::timestamptz[]) AS x(id, created_at)
     WHERE d.id = x.id AND d.created_at = x.created_at AND d.lock_token = $2`,
    [claims.map((c) => c.id), token, claims.map((c) => c.created_at)],
  );
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
