// SQL of webhook replays (issue 26 item 2): the replay rows, claiming one by a worker (lease), queueing one chunk of
// replayed deliveries (one INSERT … SELECT FROM events per chunk, committed with the replay's progress), cancel.
import type { Queryable } from '../db/db.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';

/** NOTIFY channel replay workers listen on (a replay was accepted). */
export const REPLAY_CHANNEL = 'bulb_replays';

export interface ReplayRow {
  id: string;
  uuid: string;
  subscription_id: string;
  subscription_uuid: string;
  event_types: string[];
  since_at: string;
  until_at: string;
  status: 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';
  last_event_id: string;
  end_event_id: string;
  events_queued: string;
  error: string | null;
  lock_token: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

const COLS = `r.id, r.uuid, r.subscription_id, s.uuid AS subscription_uuid, r.event_types, r.since_at, r.until_at, r.status,
  r.last_event_id, r.end_event_id, r.events_queued, r.error, r.lock_token, r.created_at, r.started_at, r.finished_at`;
const FROM = `webhook_replays r JOIN webhook_subscriptions s ON s.id = r.subscription_id`;

/**
 * A new queued replay. Its walk over events starts before the first event created at or after `since` (every event
 * of the window has an id at least that one's) and ends at the newest event id now: what commits later reaches the
 * subscription live. Wakes the replay workers on commit.
 */
export async function insertReplay(tx: Queryable, r: { subscriptionId: string; eventTypes: string[]; since: string; until: string }): Promise<ReplayRow> {
  const ins = await tx.query<{ id: string }>(
    `INSERT INTO webhook_replays (subscription_id, event_types, since_at, until_at, last_event_id, end_event_id)
     SELECT $1, $2, $3, $4, coalesce((SELECT min(id) FROM events WHERE created_at >= $3), m.id + 1) - 1, m.id
     FROM (SELECT coalesce(max(id), 0) AS id FROM events) m
     RETURNING id`,
    [r.subscriptionId, r.eventTypes, r.since, r.until],
  );
  await tx.query(`SELECT pg_notify($1, '')`, [REPLAY_CHANNEL]);
  return (await getReplayById(tx, ins.rows[0].id))!;
}

export async function getReplay(db: Queryable, uuid: string): Promise<ReplayRow | undefined> {
  return (await db.query<ReplayRow>(`SELECT ${COLS} FROM ${FROM} WHERE r.uuid = $1`, [uuid])).rows[0];
}

async function getReplayById(db: Queryable, id: string): Promise<ReplayRow | undefined> {
  return (await db.query<ReplayRow>(`SELECT ${COLS} FROM ${FROM} WHERE r.id = $1`, [id])).rows[0];
}

/** A subscription's replays, newest first; the cursor is the last id seen. */
export async function listReplays(db: Queryable, subscriptionId: string, beforeId: string | null, limit: number): Promise<ReplayRow[]> {
  const r = await db.query<ReplayRow>(
    `SELECT ${COLS} FROM ${FROM} WHERE r.subscription_id = $1 AND ($2::bigint IS NULL OR r.id < $2) ORDER BY r.id DESC LIMIT $3`,
    [subscriptionId, beforeId, limit + 1],
  );
  return r.rows;
}

/** Cancels a replay that is not finished (the chunks committed stay); undefined when it was finished already. */
export async function cancelReplay(tx: Queryable, uuid: string): Promise<ReplayRow | undefined> {
  const r = await tx.query<{ id: string }>(
    `UPDATE webhook_replays SET status = 'cancelled', finished_at = clock_timestamp(), locked_until = NULL, updated_at = clock_timestamp()
     WHERE uuid = $1 AND status IN ('queued', 'running') RETURNING id`,
    [uuid],
  );
  return r.rows[0] ? getReplayById(tx, r.rows[0].id) : undefined;
}

/** Takes the oldest replay with work to do whose lease is free (queued, or running on a dead worker). */
export async function claimReplay(db: Queryable, token: string, leaseMs: number): Promise<{ id: string } | undefined> {
  const r = await db.query<{ id: string }>(
    `UPDATE webhook_replays SET status = 'running', lock_token = $1, locked_until = clock_timestamp() + $2 * interval '1 millisecond',
       started_at = coalesce(started_at, clock_timestamp()), updated_at = clock_timestamp()
     WHERE id = (SELECT id FROM webhook_replays WHERE status IN ('queued', 'running')
                   AND (locked_until IS NULL OR locked_until < clock_timestamp() OR lock_token = $1)
                 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING id`,
    [token, leaseMs],
  );
  return r.rows[0];
}

/** A worker stopping hands its replay back at once instead of letting the lease run out. */
export async function releaseReplay(db: Queryable, id: string, token: string): Promise<void> {
  await db.query(`UPDATE webhook_replays SET locked_until = NULL WHERE id = $1 AND lock_token = $2`, [id, token]);
}

/** Locks the replay for one chunk, with whether its subscription is deleted (locked shared: a delete waits). */
export async function lockForChunk(tx: Queryable, id: string): Promise<(ReplayRow & { deleted: boolean }) | undefined> {
  const r = await tx.query<ReplayRow & { deleted: boolean }>(
    `SELECT ${COLS}, s.deleted_at IS NOT NULL AS deleted FROM ${FROM} WHERE r.id = $1 FOR UPDATE OF r FOR SHARE OF s`,
    [id],
  );
  return r.rows[0];
}

/**
 * Queues the next chunk: one delivery per event of the replay's types and window whose id lies in the next `span`
 * ids after the cursor (one INSERT … SELECT, in event order), pending with no next_attempt_at so that the claim
 * serves the lane's live work first; moves the cursor, counts, renews the lease, completes the replay at the end,
 * and wakes the workers for the subscription (on commit). The caller's transaction holds the replay's row lock.
 */
export async function queueChunk(tx: Queryable, r: ReplayRow, span: number, leaseMs: number): Promise<{ queued: number; done: boolean }> {
  const q = await tx.query<{ queued: number; done: boolean }>(
    `WITH ins AS (
       INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, next_attempt_at)
       SELECT e.id, e.created_at, $2, NULL FROM events e
       WHERE e.id > $3 AND e.id <= least($3 + $4, $5) AND e.event_type = ANY($6::text[])
         AND e.created_at >= $7 AND e.created_at < $8
       ORDER BY e.id
       RETURNING 1
     ), n AS (
       SELECT count(*)::int AS queued FROM ins
     ), woken AS (
       SELECT pg_notify('${WEBHOOK_CHANNEL}', $2::text) FROM n WHERE n.queued > 0
     )
     UPDATE webhook_replays SET last_event_id = least($3 + $4, $5), events_queued = events_queued + n.queued,
       status = CASE WHEN $3 + $4 >= $5 THEN 'completed' ELSE status END,
       finished_at = CASE WHEN $3 + $4 >= $5 THEN clock_timestamp() END,
       locked_until = CASE WHEN $3 + $4 >= $5 THEN NULL ELSE clock_timestamp() + $9 * interval '1 millisecond' END,
       updated_at = clock_timestamp()
     FROM n WHERE id = $1 AND (SELECT count(*) FROM woken) >= 0
     RETURNING n.queued, status = 'completed' AS done`,
    [r.id, r.subscription_id, r.last_event_id, span, r.end_event_id, r.event_types, r.since_at, r.until_at, leaseMs],
  );
  return q.rows[0];
}

export async function markFailed(db: Queryable, id: string, error: string): Promise<void> {
  await db.query(
    `UPDATE webhook_replays SET status = 'failed', error = $2, finished_at = clock_timestamp(), locked_until = NULL, updated_at = clock_timestamp()
     WHERE id = $1 AND status IN ('queued', 'running')`,
    [id, error],
  );
}
