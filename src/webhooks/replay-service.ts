// Webhook replays as domain operations (issue 26 item 2): the window and event-type rules, starting a replay
// (idempotent under Idempotency-Key, audited in its transaction) and cancelling one. SQL in replay-store.ts; the
// deliveries themselves are queued by the replay worker (replay-worker.ts).
import { withRetry, type Db } from '../db/db.ts';
import type { AuditHook } from '../audit/record.ts';
import { conflict, invalid, notFound } from '../http/errors.ts';
import { iso, isoNN } from '../http/time.ts';
import { instantOf } from '../http/validator.ts';
import { idempotent, type Answer, type IdemKey } from '../crm/idempotency/service.ts';
import { HIDDEN_TYPES } from '../events/store.ts';
import { mustFind } from './service.ts';
import { keptSince } from '../partitions/store.ts';
import { EVENTS } from '../partitions/tables.ts';
import * as store from './replay-store.ts';
import type { ReplayCreateT, ReplayT } from './replay-schema.ts';

export function shapeReplay(r: store.ReplayRow): ReplayT {
  return {
    uuid: r.uuid,
    subscriptionUuid: r.subscription_uuid,
    status: r.status,
    since: isoNN(r.since_at),
    until: isoNN(r.until_at),
    eventTypes: r.event_types,
    eventsQueued: Number(r.events_queued),
    createdAt: isoNN(r.created_at),
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
    error: r.error,
  };
}

/**
 * The event types to replay: those asked for (each one the subscription listens to and the events API holds), or
 * every type the subscription listens to that the events API holds. 400 naming eventTypes otherwise.
 */
function typesOf(listens: string[], asked: string[] | undefined): string[] {
  const replayable = (t: string) => !HIDDEN_TYPES.includes(t);
  if (asked === undefined) {
    const types = listens.filter(replayable);
    if (types.length === 0) throw invalid(`the subscription listens to no replayable event type (${HIDDEN_TYPES.join(', ')} are not kept as events)`, 'eventTypes');
    return types;
  }
  const notListened = asked.filter((t) => !listens.includes(t));
  if (notListened.length) throw invalid(`the subscription does not listen to ${notListened.join(', ')} (it listens to ${listens.join(', ')})`, 'eventTypes');
  const hidden = asked.filter((t) => !replayable(t));
  if (hidden.length) throw invalid(`${hidden.join(', ')} cannot be replayed: the events API does not keep them`, 'eventTypes');
  return asked;
}

/**
 * since/until: a window of kept events (BULB_EVENT_RETENTION_DAYS), until after since. Returns until (default now).
 * A replay covers what had happened when it was accepted: an until later than that is taken as that moment, and the
 * replay shows it (it was shown as asked while the replay stopped at its acceptance; found by a probe).
 */
function windowOf(body: ReplayCreateT, retentionDays: number): { since: string; until: string } {
  const now = Date.now();
  const since = instantOf(body.since);
  const until = body.until === undefined ? now : Math.min(instantOf(body.until), now);
  const oldest = now - retentionDays * 86_400_000;
  if (since < oldest) {
    throw invalid(`since is older than the events kept: the oldest time available is ${new Date(oldest).toISOString()} (BULB_EVENT_RETENTION_DAYS=${retentionDays})`, 'since');
  }
  // The window never passes now: a since in the future is the field at fault, whatever the until.
  if (since >= now) throw invalid(`since must be in the past: a replay ends no later than now (${new Date(now).toISOString()})`, 'since');
  if (until <= since) throw invalid('until must be after since', 'until');
  return { since: new Date(since).toISOString(), until: new Date(until).toISOString() };
}

/** Accepts a replay (202): validated, stored queued with its audit row, in one transaction; replayed for a key. */
export async function startReplay(db: Db, subUuid: string, body: ReplayCreateT, retentionDays: number, key: IdemKey | undefined, audit: AuditHook): Promise<Answer> {
  return withRetry(db, (tx) => idempotent(tx, key, async () => {
    const w = windowOf(body, retentionDays);
    // The events actually kept: days retired under a shorter retention before (a restart with BULB_EVENT_RETENTION_DAYS
    // lowered, then raised) are gone, and a window reaching into them was replayed without them, silently (a probe).
    const kept = await keptSince(tx, EVENTS);
    if (kept && instantOf(w.since) < kept.getTime()) {
      throw invalid(`since is older than the events kept: the oldest time available is ${kept.toISOString()} (earlier days were retired)`, 'since');
    }
    const sub = await mustFind(tx, subUuid, 'share'); // a delete meanwhile waits (the worker checks it per chunk)
    const eventTypes = typesOf(sub.event_types, body.eventTypes);
    const answer = shapeReplay(await store.insertReplay(tx, { subscriptionId: sub.id, eventTypes, ...w }));
    await audit(tx, answer);
    return { status: 202, body: answer };
  }));
}

export async function findReplay(db: Db, uuid: string): Promise<store.ReplayRow> {
  const r = await store.getReplay(db, uuid);
  if (!r) throw notFound(`replay "${uuid}" not found`, 'uuid');
  return r;
}

/** Cancels a replay that is queued or running: no chunk is added after this; the deliveries queued stay. */
export async function cancelReplay(db: Db, uuid: string, audit: AuditHook): Promise<ReplayT> {
  const cur = await findReplay(db, uuid);
  return db.transaction(async (tx) => {
    const r = await store.cancelReplay(tx, uuid);
    if (!r) throw conflict(`replay ${uuid} is ${(await store.getReplay(tx, uuid))?.status ?? cur.status} already`, 'status');
    const answer = shapeReplay(r);
    await audit(tx, answer);
    return answer;
  });
}
