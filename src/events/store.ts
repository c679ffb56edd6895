// SQL of the events API (SPEC §12): list in commit-safe order, get by uuid, and the retention purge.
import { statementName, type Queryable } from '../db/db.ts';
import { EVENT_TYPES } from './emit.ts';

export interface EventRow {
  id: string;
  xid: string;
  uuid: string;
  event_type: string;
  resource_type: string;
  resource_uuid: string;
  resource_external_id: string | null;
  source: string;
  created_at: string;
}

/**
 * Event types the API does not show: the webhook ones (test pings, delivery failures, subscriptions
 * disabled) are about integrations (admin scope), not changes to data; subscriptions receive them.
 */
export const HIDDEN_TYPES: string[] = EVENT_TYPES.filter((t) => t.startsWith('webhook'));

const COLUMNS = 'id, xid::text AS xid, uuid, event_type, resource_type, resource_uuid, resource_external_id, source, created_at';

export interface EventFilter {
  eventTypes?: string[];
  since?: string;
  until?: string;
  resourceUuid?: string;
  /** Position after which to list: (xid, id) of the last event seen. */
  after?: { xid: string; id: string };
  limit: number;
}

/**
 * The visibility horizon: every event with a smaller xid is committed (or rolled back) and visible to
 * this statement, and every event committed later has a larger xid. It is the oldest transaction that
 * was running when the statement's snapshot was taken (else the snapshot's xmax), leaving out those
 * that pg_stat_activity shows running in another database of the cluster (they cannot write our
 * events; counting them would hold the API back behind other applications' long transactions). A
 * running xid not found there (finished since, or another role's) counts: safe, one request late.
 */
const HORIZON = `(SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(snap.s) AS x WHERE NOT EXISTS (
       SELECT 1 FROM pg_stat_activity a WHERE a.backend_xid = x::xid AND a.datname <> current_database())),
    pg_snapshot_xmax(snap.s)) FROM (SELECT pg_current_snapshot() AS s) AS snap)`;

/**
 * Oldest first in (xid, id) order (xid: the writing transaction, see 009_events_api.sql), and only
 * events below the horizon, which can no longer be joined by an earlier-ordered event. Fetches
 * limit + 1 rows so the caller knows whether more follow.
 */
export async function listEvents(db: Queryable, f: EventFilter): Promise<EventRow[]> {
  const where = [`xid < ${HORIZON}`, 'event_type <> ALL($1::text[])'];
  const params: unknown[] = [HIDDEN_TYPES];
  const add = (sql: string, ...v: unknown[]) => {
    let s = sql;
    for (const x of v) {
      params.push(x);
      s = s.replace('?', `$${params.length}`);
    }
    where.push(s);
  };
  if (f.after) add('(xid, id) > (?::xid8, ?::bigint)', f.after.xid, f.after.id);
  if (f.eventTypes?.length === 1) add('event_type = ?', f.eventTypes[0]);
  else if (f.eventTypes?.length) add('event_type = ANY(?::text[])', f.eventTypes);
  if (f.resourceUuid !== undefined) add('resource_uuid = ?::uuid', f.resourceUuid);
  if (f.since !== undefined) add('created_at >= ?::timestamptz', f.since);
  if (f.until !== undefined) add('created_at < ?::timestamptz', f.until);
  params.push(f.limit + 1);
  // events.xid: the column (xid8, numeric order), not the xid::text output alias of the same name.
  const sql = `SELECT ${COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY events.xid, events.id LIMIT $${params.length}`;
  // A few fixed shapes (which filters are present): prepared once per connection, not planned per call.
  const r = await db.query<EventRow>(sql, params, statementName('events_list', sql));
  return r.rows;
}

export async function findEvent(db: Queryable, uuid: string): Promise<EventRow | undefined> {
  const r = await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE uuid = $1 AND event_type <> ALL($2::text[])`, [uuid, HIDDEN_TYPES], 'events_get');
  return r.rows[0];
}

/**
 * Retention: deletes events older than `days`, in batches, except those a delivery still needs: one
 * that is pending (it will be sent), or one whose attempts are still in the logs (kept by
 * BULB_WEBHOOK_RETENTION_DAYS; deleting the event would cascade to them). Returns how many went.
 */
export async function purgeEvents(db: Queryable, days: number, batch = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await db.query(
      `DELETE FROM events WHERE id IN (
         SELECT e.id FROM events e
          WHERE e.created_at < clock_timestamp() - $1 * interval '1 day'
            AND NOT EXISTS (
              SELECT 1 FROM webhook_deliveries d
               WHERE d.event_id = e.id
                 AND (d.status = 'pending' OR EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id)))
          ORDER BY e.created_at
          LIMIT $2)`,
      [days, batch],
    );
    total += r.rowCount;
    if (r.rowCount < batch) return total;
  }
}
