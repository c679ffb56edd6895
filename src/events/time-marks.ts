// Time marks (migration 026): which transaction ids were in use at a given time, so that the events API can turn
// since/until into a range of the (xid, id) order it lists in (xidRange in src/events/store.ts). Every process
// writes one a minute; the workers' housekeeping deletes those older than the events themselves.
import type { Queryable } from '../db/db.ts';
import { startLoop } from '../loop.ts';
import { HORIZON } from './store.ts';

/**
 * What a mark holds (besides its time): the oldest transaction running in this database (every transaction that writes
 * an event from now on has an xid at least this: the events list's horizon); the mark's own transaction id, given
 * now, so every id given before it, to a transaction still running or not, is smaller (a snapshot's xmax is not that:
 * it is one past the last transaction to have ended).
 */
export const MARK_XIDS = `${HORIZON}, pg_current_xact_id()`;

/** Writes a mark (MARK_XIDS, now). */
export async function markTime(db: Queryable): Promise<void> {
  await db.query(`INSERT INTO event_time_marks (oldest_xid, mark_xid) SELECT ${MARK_XIDS}`, [], 'event_time_mark');
}

/** Marks the time every `everyMs` (the first soon after start). Returns a stop function. */
export function startTimeMarks(db: Queryable, everyMs: number, onError: (err: unknown) => void): () => Promise<void> {
  return startLoop(() => markTime(db), everyMs, onError, Math.min(everyMs, 1_000));
}

/** Deletes marks older than the events kept (and a day), in one statement (a mark a minute: a few thousand a day). */
export async function purgeTimeMarks(db: Queryable, retentionDays: number): Promise<number> {
  const r = await db.query(`DELETE FROM event_time_marks WHERE at < clock_timestamp() - ($1 + 1) * interval '1 day'`, [retentionDays]);
  return r.rowCount;
}
