// Joins across partitioned tables that find the one partition holding the row (docs/partitioning.md): a delivery
// carries its event's created_at, an attempt its delivery's, so the join's condition on the partition key lets the
// executor prune every other partition (a join by id alone probes the id index of each partition). Rows written
// before migration 054 carry none: their event (delivery) is no newer than they are, so the range up to their own
// time is searched (the legacy partition, and the days before it if any); an attempt's started_at is the worker's
// clock, so a day of margin there.

/** The event of delivery `d` (aliases as written in the statement). */
export function eventOfDelivery(d: string, e: string): string {
  return `${e}.id = ${d}.event_id AND ${e}.created_at >= coalesce(${d}.event_created_at, '-infinity')
    AND ${e}.created_at <= coalesce(${d}.event_created_at, ${d}.created_at)`;
}

/** The delivery of attempt `a`. */
export function deliveryOfAttempt(a: string, d: string): string {
  return `${d}.id = ${a}.delivery_id AND ${d}.created_at >= coalesce(${a}.delivery_created_at, '-infinity')
    AND ${d}.created_at <= coalesce(${a}.delivery_created_at, ${a}.started_at + interval '1 day')`;
}

/** 9999-12-31T23:59:59.999Z, the last instant toISOString writes with a four-digit year. */
const MAX_ISO_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * A look-up by uuid names the partition too when the uuid is time-ordered (version 7, migration 057): its first 48
 * bits are the milliseconds its row was made at, within a moment of the row's created_at (both clock_timestamp()
 * of the same insert). Returns the condition on `alias`.created_at and its parameters appended to `params`, or ''
 * for another version (rows made before 057: every partition is probed, an index probe each).
 */
export function uuidTimeBound(uuid: string, alias: string, params: unknown[]): string {
  const hex = uuid.replaceAll('-', '');
  if (!/^[0-9a-f]{32}$/i.test(hex) || hex[12] !== '7') return '';
  const ms = parseInt(hex.slice(0, 12), 16);
  // Past year 9999 toISOString writes an extended year (+010889-…) that PostgreSQL refuses (a 400 for an unknown
  // uuid, found by a probe): no row of Bulb's has such a time, so such a uuid is looked up without the bound.
  if (ms + 60_000 > MAX_ISO_MS) return '';
  const from = params.push(new Date(ms - 60_000).toISOString());
  const to = params.push(new Date(ms + 60_000).toISOString());
  return ` AND ${alias}.created_at >= $${from}::timestamptz AND ${alias}.created_at < $${to}::timestamptz`;
}
