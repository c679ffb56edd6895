// SQL of the events API (SPEC §12): list in commit-safe order, get by uuid. (Retention: src/partitions/.)
import { fetchSize, statementName, type Queryable } from '../db/db.ts';
import { walked, walkSql, type Walked } from '../db/budgeted-walk.ts';
import { EVENT_TYPES } from './emit.ts';
import { uuidTimeBound } from '../partitions/keys.ts';

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
export const HORIZON = `(SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(snap.s) AS x WHERE NOT EXISTS (
       SELECT 1 FROM pg_stat_activity a WHERE a.backend_xid = x::xid AND a.datname <> current_database())),
    pg_snapshot_xmax(snap.s)) FROM (SELECT pg_current_snapshot() AS s) AS snap)`;

/**
 * Against clock steps and the time between a statement's snapshot and its clock reading, a bound is taken from a
 * time mark at least this far before `since` (after `until`).
 */
const MARGIN = "interval '1 minute'";

/**
 * The xid range holding every event created in [since, until): lo, the oldest_xid of the last mark well before since
 * (events created at or after since have an xid ≥ lo); hi, the mark_xid of the first mark well after until (events
 * created before until have an xid < hi). Undefined where no mark is far enough out (the walk is then unbounded
 * on that side, as without marks).
 */
async function xidRange(db: Queryable, since: string | undefined, until: string | undefined): Promise<{ lo?: string; hi?: string }> {
  const r = await db.query<{ lo: string | null; hi: string | null }>(
    `SELECT (SELECT oldest_xid::text FROM event_time_marks WHERE at <= $1::timestamptz - ${MARGIN} ORDER BY at DESC LIMIT 1) AS lo,
            (SELECT mark_xid::text FROM event_time_marks WHERE at >= $2::timestamptz + ${MARGIN} ORDER BY at LIMIT 1) AS hi`,
    [since ?? null, until ?? null],
    'event_xid_range',
  );
  return { lo: r.rows[0].lo ?? undefined, hi: r.rows[0].hi ?? undefined };
}

/** HIDDEN_TYPES as a literal: the planner estimates `<> ALL` of a constant array from the statistics. */
const NOT_HIDDEN = `event_type <> ALL(ARRAY[${HIDDEN_TYPES.map((t) => `'${t.replaceAll("'", "''")}'`).join(', ')}]::text[])`;


/** How many of a resource's events a page with `resourceUuid` reads at most (listEvents). */
export const SCAN_BUDGET = 5_000;

/** A page of events and, when a resource's walk read its whole budget, the position of the last event it read. */
export type EventPage = EventRow[] & { scanEnd?: { xid: string; id: string } };

/**
 * Oldest first in (xid, id) order (xid: the writing transaction, see 009_events_api.sql), and only
 * events below the horizon, which can no longer be joined by an earlier-ordered event. Returns up to
 * limit + 1 rows so the caller knows whether more follow.
 *
 * Each shape is an index scan in (xid, id) order that stops after the page, whatever the values:
 * events_xid without filters; with eventType one scan of events_type_xid per type (merged by the outer ORDER BY),
 * written as a range of that index ((event_type, xid) below (type, horizon), (event_type, xid, id) after (type,
 * cursor)), which only that index serves, so a rare type never walks the table; with resourceUuid a range of
 * events_resource_xid the same way ((resource_uuid, xid) below (resource, horizon), ordered by all three), read for
 * at most SCAN_BUDGET events (resourcePage). The texts vary only with which filters are present,
 * the number of types and the rounded-up page size (a literal: with LIMIT $n the planner assumes 10% of
 * the rows), so they are named statements planned once per connection (generic plan, no per-call
 * planning of the horizon subquery). since and until bound the walk itself, through the time marks
 * (src/events/time-marks.ts): it starts at the first transaction that can have written an event at or after
 * since, and ends after the last that can have written one before until, rather than reading every older
 * (newer) event of the listed types. Without a mark for a date, the best plan depends on it: planned per call.
 */
export async function listEvents(db: Queryable, f: EventFilter): Promise<EventPage> {
  const params: unknown[] = [];
  const param = (v: unknown) => `$${params.push(v)}`;
  const fetch = fetchSize(f.limit);
  const types = f.eventTypes?.length ? [...new Set(f.eventTypes)].filter((t) => !HIDDEN_TYPES.includes(t)) : undefined;
  if (types?.length === 0) return [];
  // since/until as a start and an end of the walk (time marks, migration 026): without a cursor the start is (lo, 0)
  // — (xid, id) > (lo, 0) is xid ≥ lo, ids being positive. A cursor is a start already (the next pages of a since
  // query are past lo): only until is looked up then.
  const since = f.after ? undefined : f.since;
  const { lo, hi } = since !== undefined || f.until !== undefined ? await xidRange(db, since, f.until) : {};
  const after = lo !== undefined ? { xid: lo, id: '0' } : f.after;
  const cursor = after && { xid: param(after.xid), id: param(after.id) };
  // The end of a range walk: the horizon, or until's mark before it.
  const end = () => (hi === undefined ? HORIZON : `least(${HORIZON}, ${param(hi)}::xid8)`);
  const where: string[] = [];
  if (f.since !== undefined) where.push(`created_at >= ${param(f.since)}::timestamptz`);
  if (f.until !== undefined) where.push(`created_at < ${param(f.until)}::timestamptz`);
  let sql: string;
  if (f.resourceUuid !== undefined) {
    const res = `${param(f.resourceUuid)}::uuid`;
    const range = [
      `(resource_uuid, xid) < (${res}, ${end()})`,
      cursor ? `(resource_uuid, xid, id) > (${res}, ${cursor.xid}::xid8, ${cursor.id}::bigint)` : `resource_uuid >= ${res}`,
    ];
    const hit = [NOT_HIDDEN, ...where];
    if (types) hit.push(`event_type IN (${types.map(param).join(', ')})`);
    return resourcePage(db, range, hit, fetch, params, f.limit, open(since, lo, f.until, hi));
  }
  if (types) {
    const range = [
      `(event_type, xid) < (t.type, ${end()})`,
      cursor ? `(event_type, xid, id) > (t.type, ${cursor.xid}::xid8, ${cursor.id}::bigint)` : 'event_type >= t.type',
      ...where,
    ];
    sql = `SELECT ${COLUMNS} FROM (VALUES ${types.map((t) => `(${param(t)}::text)`).join(', ')}) AS t(type) CROSS JOIN LATERAL (
      SELECT * FROM events WHERE ${range.join(' AND ')} ORDER BY event_type, xid, id LIMIT ${fetch}) AS events
      ORDER BY events.xid, events.id LIMIT ${fetch}`;
  } else {
    where.push(NOT_HIDDEN, `xid < ${HORIZON}`);
    if (hi !== undefined) where.push(`xid < ${param(hi)}::xid8`);
    if (cursor) where.push(`(xid, id) > (${cursor.xid}::xid8, ${cursor.id}::bigint)`);
    // events.xid: the column (xid8, numeric order), not the xid::text output alias of the same name.
    sql = `SELECT ${COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY events.xid, events.id LIMIT ${fetch}`;
  }
  const r = await db.query<EventRow>(sql, params, open(since, lo, f.until, hi) ? undefined : statementName('events_list', sql));
  return r.rows.slice(0, f.limit + 1);
}

/**
 * A date with no mark beyond it leaves that end of the walk open: then the plan depends on the dates (planned per
 * call, which may read the created_at index instead). Otherwise the walk is bounded and a named statement.
 */
const open = (since: string | undefined, lo: string | undefined, until: string | undefined, hi: string | undefined) =>
  (since !== undefined && lo === undefined) || (until !== undefined && hi === undefined);

/**
 * A page of one resource's events: the first SCAN_BUDGET of them after the cursor (below the horizon and until's
 * mark: `range`, a range of events_resource_xid ordered by all its columns, which only that index serves), in
 * (xid, id) order, and those of them that `hit` keeps (the types asked for, since and until, no hidden type), up to
 * the page. A resource can have hundreds of thousands of events (a customer updated by every sync) and a type it
 * rarely or never has: the walk for it stops at the budget, and the page carries `scanEnd`, the last event read, to
 * go on from (a page may hold fewer events than its limit, none even, with a next cursor). A page of a resource's
 * every event, or of a type it has often, stops at the page. (An index on (resource_uuid, event_type, xid, id) would read only the
 * type's events, but one more index on every event written, built over every partition of a running deployment's
 * table, which no online migration here can do: docs/events.md.)
 */
async function resourcePage(db: Queryable, range: string[], hit: string[], fetch: number, params: unknown[], limit: number, planPerCall: boolean): Promise<EventPage> {
  const sql = walkSql({ table: 'events', alias: 'events', where: range, order: 'events.resource_uuid, events.xid, events.id', hit: hit.join(' AND '), budget: SCAN_BUDGET, limit: fetch, columns: COLUMNS });
  const r = await db.query<Walked<EventRow>>(sql, params, planPerCall ? undefined : statementName('events_resource', sql));
  const { page, edge } = walked(r.rows);
  const out: EventPage = page.slice(0, limit + 1);
  if (edge) out.scanEnd = { xid: edge.xid, id: edge.id };
  return out;
}

export async function findEvent(db: Queryable, uuid: string): Promise<EventRow | undefined> {
  const params: unknown[] = [uuid];
  const bound = uuidTimeBound(uuid, 'events', params); // one partition for a time-ordered uuid (docs/partitioning.md)
  const r = await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE uuid = $1 AND ${NOT_HIDDEN}${bound}`, params, bound ? 'events_get_v7' : 'events_get');
  return r.rows[0];
}
