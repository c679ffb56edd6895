// SQL of the logs API's attempts (GET /integrations/webhooks/logs) and the console's chart of them: a lean attempt's
// request is rebuilt from its event and the version of its subscription's sending config (attempt-request.ts).
import { fetchSize, statementName, type Queryable } from '../db/db.ts';
import { rebuildRequest, type SendingConfig } from './attempt-request.ts';
import { versionsById } from './versions-store.ts';
import { deliveryOfAttempt, eventOfDelivery, uuidTimeBound } from '../partitions/keys.ts';
import { lateral, logScope, pageFirst, scanEdge, scanned, scannedSql, type ScannedPage } from './store.ts';
import { partitions } from '../partitions/store.ts';
import { ATTEMPTS } from '../partitions/tables.ts';

export interface AttemptRow {
  id: string;
  uuid: string;
  delivery_uuid: string;
  event_uuid: string;
  subscription_uuid: string;
  event_type: string;
  url: string;
  attempt_number: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error_code: string | null;
  outcome: 'success' | 'failure';
  next_attempt_at: string | null;
  request_headers: Record<string, string>;
  request_body: string;
  response_body: string | null;
}

export interface LogQuery {
  subscription?: string;
  eventType?: string;
  outcome?: string;
  since?: string;
  until?: string;
  delivery?: string;
  limit: number;
}

/**
 * Newest first, before the cursor; shapes as listDeliveries': with a delivery, its attempts (the delivery by its
 * uuid, then webhook_attempts_delivery); with an event type that has few events, the ids of their deliveries'
 * attempts, then those; with a subscription, a range of webhook_attempts_sub in its order; else the primary key,
 * walked. With a common event type, an outcome, since or until (no index holds them in id order), that walk reads
 * LOG_SCAN.budget attempts a page at most (scanEdge; since/until first prune it to the partitions that hold them),
 * each joined to its delivery and event, the filters tested on each (scannedSql): the page may be short and carry
 * scanEnd. Named statements, except the page with since/until, whose best plan depends on the dates: planned per call.
 */
export async function listAttempts(db: Queryable, q: LogQuery, before: string | null): Promise<ScannedPage<AttemptRow>> {
  const params: unknown[] = [];
  const param = (v: unknown) => `$${params.push(v)}`;
  // With a delivery, its attempts are few whatever their type: no count.
  const { events, fewEvents, cursor, sub } = await logScope(db, q.delivery === undefined ? q.eventType : undefined, q.subscription, before, param);
  if (events === 0) return [];
  const where: string[] = [];
  let order = 'a.id DESC';
  if (q.delivery !== undefined) {
    where.push(`a.delivery_id = ANY(ARRAY(SELECT x.id FROM webhook_deliveries x WHERE x.uuid = ${param(q.delivery)}::uuid${uuidTimeBound(q.delivery, 'x', params)}))`, `a.id < ${cursor}`);
    if (sub) where.push(`a.subscription_id = ${sub}`);
  } else if (fewEvents) {
    // The deliveries of those events, their attempts' ids (an attempt's event is its delivery's; webhook_attempts has
    // no index on event_id), then those attempts by primary key.
    const deliveries = `ARRAY(SELECT x.id FROM webhook_deliveries x WHERE x.event_id = ANY(${fewEvents}))`;
    where.push(`a.id = ANY(ARRAY(SELECT y.id FROM webhook_attempts y WHERE y.delivery_id = ANY(${deliveries})))`, `a.id < ${cursor}`);
    if (sub) where.push(`a.subscription_id = ${sub}`);
  } else if (sub) {
    where.push(`(a.subscription_id, a.id) < (${sub}, ${cursor})`, `a.subscription_id >= ${sub}`);
    order = 'a.subscription_id DESC, a.id DESC';
  } else {
    where.push(`a.id < ${cursor}`);
  }
  // A walk of the subscription's range or the primary key's that tests a filter on each row (a common event type,
  // the outcome, since, until; no index holds them in id order) is budgeted (LOG_SCAN): the page may be short.
  const scan = q.delivery === undefined && !fewEvents && (events !== undefined || q.outcome !== undefined || q.since !== undefined || q.until !== undefined);
  if (scan && (q.since !== undefined || q.until !== undefined)) {
    // since/until bound the walk to the partitions that hold them (no id bound exists: ids are in the order attempts
    // were written, started_at is the worker's clock at their start), by the partitions' own bounds, which leave out
    // no row of a partition kept: the budget counts every row the walk reads.
    const span = await partitionSpan(db, q.since, q.until);
    if (span.from) where.push(`a.started_at >= ${param(span.from.toISOString())}::timestamptz`);
    if (span.to) where.push(`a.started_at < ${param(span.to.toISOString())}::timestamptz`);
  }
  const edge = scan ? await scanEdge(db, 'webhook_attempts', 'a', where, order, params) : null;
  // With a delivery, its few attempts joined, then filtered by the type.
  const deliveryTyped = q.delivery !== undefined && q.eventType !== undefined;
  const hit = scan ? [] : where;
  if (scan && events !== undefined) hit.push(`e.event_type = ${param(q.eventType)}`);
  if (deliveryTyped) where.push(`e.event_type = ${param(q.eventType)}`);
  if (q.outcome !== undefined) hit.push(`a.outcome = ${param(q.outcome)}`);
  if (q.since !== undefined) hit.push(`a.started_at >= ${param(q.since)}::timestamptz`);
  if (q.until !== undefined) hit.push(`a.started_at < ${param(q.until)}::timestamptz`);
  // The event's fields and the attempt's signed part rebuild a lean row's request (attempt-request.ts); its version is
  // read apart, once per process (versions-store.ts), not joined per row.
  const columns = `a.id, ${ATTEMPT_UUID_SQL} AS uuid, d.uuid AS delivery_uuid, e.uuid AS event_uuid, s.uuid AS subscription_uuid, e.event_type, a.url,
       a.attempt_number, a.started_at, a.duration_ms, a.status_code, a.error_code, a.outcome, a.next_attempt_at,
       a.request_headers, a.request_body, a.response_body, a.version_id, encode(a.signatures, 'hex') AS signatures,
       floor(extract(epoch FROM a.started_at))::bigint + coalesce(a.timestamp_skew, 0) AS sent_timestamp,
       e.created_at::text AS event_created_at, e.resource_type, e.resource_uuid, e.resource_external_id, e.source`;
  const joins = `${lateral('webhook_deliveries', 'd', deliveryOfAttempt('a', 'd'))} ${lateral('events', 'e', eventOfDelivery('d', 'e'))}`;
  const sql = scan
    ? scannedSql('webhook_attempts', 'a', where, edge === null ? undefined : param(edge), hit, order, fetchSize(q.limit), columns,
      `${joins} ${lateral('webhook_subscriptions', 's', 's.id = a.subscription_id')}`)
    : deliveryTyped
    ? `SELECT ${columns} FROM webhook_attempts a JOIN webhook_deliveries d ON ${deliveryOfAttempt('a', 'd')} JOIN events e ON ${eventOfDelivery('d', 'e')}
       JOIN webhook_subscriptions s ON s.id = a.subscription_id WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${fetchSize(q.limit)}`
    : pageFirst('webhook_attempts', 'a', where, order, fetchSize(q.limit), columns, `${joins} JOIN webhook_subscriptions s ON s.id = a.subscription_id`);
  const dated = q.since !== undefined || q.until !== undefined;
  const r = await db.query<StoredAttempt>(sql, params, dated ? undefined : statementName('webhook_attempts_list', sql));
  const rows = scanned(r.rows, q.limit);
  const versions = await versionsById(db, rows.flatMap((x) => (x.version_id === null ? [] : [x.version_id])));
  const page: ScannedPage<AttemptRow> = rows.map((x) => withRequest(x, versions));
  if (rows.scanEnd !== undefined) page.scanEnd = rows.scanEnd;
  return page;
}

/**
 * The bounds of the partitions of webhook_attempts (docs/partitioning.md) that hold attempts started in [since,
 * until): the start of the one holding since, the end of the one holding until (none: that side is unbounded). As
 * conditions they prune every other partition and remove no row of those kept.
 */
async function partitionSpan(db: Queryable, since: string | undefined, until: string | undefined): Promise<{ from?: Date; to?: Date }> {
  const bounds = (await partitions(db, ATTEMPTS)).filter((p) => !p.isDefault).flatMap((p) => [p.from, p.to]).filter((b): b is Date => b !== null).map((b) => b.getTime());
  const from = since === undefined ? [] : bounds.filter((b) => b <= new Date(since).getTime());
  const to = until === undefined ? [] : bounds.filter((b) => b >= new Date(until).getTime());
  return { from: from.length ? new Date(Math.max(...from)) : undefined, to: to.length ? new Date(Math.min(...to)) : undefined };
}

/**
 * An attempt's uuid: the stored one (rows before migration 051), else one rebuilt from its id, a UUID (version 8) of
 * the MD5 of the id, as unique as the ids and as random-looking as the stored ones. No statement finds an attempt by
 * uuid, so no index holds it.
 */
export const ATTEMPT_UUID_SQL = `coalesce(a.uuid, overlay(overlay(md5('bulb webhook attempt ' || a.id) placing '8' from 13 for 1) placing '8' from 17 for 1)::uuid)`;

/** An attempt row as listAttempts reads it: lean (version_id set) or whole (url, request_headers, request_body set). */
interface StoredAttempt extends Omit<AttemptRow, 'url' | 'request_headers' | 'request_body'> {
  url: string | null;
  request_headers: Record<string, string> | null;
  request_body: string | null;
  version_id: number | null;
  signatures: string | null;
  sent_timestamp: string;
  event_created_at: string;
  resource_type: string;
  resource_uuid: string;
  resource_external_id: string | null;
  source: string;
}

/** The row with its request: as stored, or rebuilt from its version and event (a version missing: no headers, no URL). */
function withRequest(x: StoredAttempt, versions: Map<number, SendingConfig>): AttemptRow {
  const { version_id, signatures, sent_timestamp, event_created_at, resource_type, resource_uuid, resource_external_id, source, ...row } = x;
  if (version_id === null) return { ...row, url: row.url ?? '', request_headers: row.request_headers ?? {}, request_body: row.request_body ?? '' };
  const v = versions.get(version_id);
  const src = {
    event_uuid: x.event_uuid, subscription_uuid: x.subscription_uuid, event_created_at, event_type: x.event_type, resource_type,
    resource_uuid, resource_external_id, source,
  };
  // sent_timestamp is webhook-timestamp already (the start second plus the skew).
  const built = rebuildRequest(v ?? { hmacHeader: '', headers: {} }, { signatures: v ? signatures : null, timestampSkew: null }, src, Number(sent_timestamp));
  return { ...row, url: v?.url ?? '', request_headers: built.headers, request_body: built.body };
}
