// Start checks against a database that is not the one Bulb wrote (a restore, a mistyped URL): refused at start, exit 2,
// rather than served wrong (docs/operations.md "Backups").
import { ConfigError } from '../config.ts';
import type { Queryable } from './db.ts';
import { connectClient } from './pg.ts';

/**
 * Refuses a database whose events were written by transactions this PostgreSQL cluster has not reached: a logical dump
 * (pg_dump) restored into another cluster. The events API orders and bounds events by their writing transaction's id
 * (migration 009, src/events/store.ts): it hid every restored event, and new ones, with smaller ids, were skipped by
 * a consumer's cursor, until the cluster's counter passed the dump's (a probe, 2026-11-29). A physical backup, or a
 * restore into the same cluster, keeps the counter.
 */
export async function refuseEventsAhead(db: Queryable): Promise<void> {
  const r = await db.query<{ max: string | null; next: string }>(
    // The time marks too (they bound since/until, and are written every minute, events or none): a dump whose marks
    // were ahead hid new events from `since` (the review of this check, 2026-11-29).
    `SELECT greatest((SELECT max(xid) FROM events), (SELECT max(mark_xid) FROM event_time_marks),
       (SELECT max(oldest_xid) FROM event_time_marks))::text AS max, pg_snapshot_xmax(pg_current_snapshot())::text AS next`,
  );
  const { max, next } = r.rows[0];
  if (max === null || BigInt(max) < BigInt(next)) return;
  const reset = resetwalPast(max);
  throw new ConfigError(
    `the events in this database (and their time marks) were written by transactions up to ${max}, which this PostgreSQL cluster has not reached ` +
      `(its next is ${next}): a logical dump restored into another cluster? The events API orders events by that id and would ` +
      `hide them and skip new ones. Stop the cluster, set its next transaction id past the dump's ` +
      `(pg_resetwal -x ${reset.x} -e ${reset.e} on the stopped data directory), start it and Bulb again ` +
      `(docs/operations.md "Backups")`,
  );
}

/**
 * pg_resetwal's -x (the 32-bit next transaction id) and -e (its epoch) for a full transaction id past `xid`: at the
 * start of a commit-log segment (a multiple of 1,048,576, as pg_resetwal's documentation asks: another value leaves the
 * server unable to start, "could not access status of transaction"), never 0 in its epoch.
 */
export function resetwalPast(xid: string): { x: string; e: string } {
  const SEGMENT = 0x100000n;
  let next = (BigInt(xid) / SEGMENT + 1n) * SEGMENT;
  if ((next & 0xffffffffn) === 0n) next += SEGMENT;
  return { x: String(next & 0xffffffffn), e: String(next >> 32n) };
}

/**
 * Refuses a BULB_DATABASE_DIRECT_URL that reaches another database than DATABASE_URL: sessions (LISTEN, exports'
 * snapshots, imports' COPY, the migrations' lock) used the other one, and an export served another database's
 * customers (a restore drill's mistake; a probe, 2026-11-29). Compared: the database's name and oid and the server's
 * start time, each read through both URLs.
 */
export async function refuseOtherDirectDatabase(url: string, directUrl: string): Promise<void> {
  const [a, b] = await Promise.all([identity(url), identity(directUrl)]);
  if (a.name === b.name && a.oid === b.oid && a.started === b.started) return;
  throw new ConfigError(
    `BULB_DATABASE_DIRECT_URL reaches database "${b.name}" (server started ${b.started}), DATABASE_URL "${a.name}" ` +
      `(server started ${a.started}): both must reach the same database`,
  );
}

async function identity(url: string): Promise<{ name: string; oid: string; started: string }> {
  const c = await connectClient(url, 'bulb-identity');
  try {
    const r = await c.query(
      `SELECT current_database() AS name, (SELECT oid::text FROM pg_database WHERE datname = current_database()) AS oid,
         pg_postmaster_start_time()::text AS started`,
    );
    return r.rows[0];
  } finally {
    await c.end().catch(() => {});
  }
}
