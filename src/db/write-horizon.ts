// The write horizon of a list page: a time before which every row a list orders by its write time (created_at,
// updated_at, both clock_timestamp() at the write) is committed and visible to a statement run after this one.
//
// Ids and write times are handed out when a row is written, not when its transaction commits: an import's chunk
// takes ids 1000–31000 over seconds while single creates beside it take 1001, 1002… and commit first. A cursor
// walk that served 1002 then moved past every id of the chunk, which became visible behind it: lost to a walk,
// and to an incremental sync resuming from the latest updatedAt it saw (issue: customers lost by a walk during an
// import). Rows of a transaction running now were written at or after its start (pg_stat_activity.xact_start); rows
// of a transaction that writes later, after now. So the horizon is the earliest of now and the start of every
// transaction of this database that has written (it holds an xid), and a page serves only rows written before it:
// what is held back comes on a later page, after everything served. The page's statement must run after this one
// (its snapshot taken later): a writer that committed in between is then visible to it.
//
// PGlite runs one transaction at a time in its one session: nothing is written beside a page, and there is no horizon
// (null; the statement cost a round trip to its worker, ~0.5 ms a page). Not counted: a transaction of
// another role, whose xact_start pg_stat_activity hides (Bulb writes with one role), and a clock stepped backwards
// between a row's write and a page (rows written "in the future" are held back until the clock passes them).
import type { Db, Queryable } from './db.ts';

export async function writeHorizon(db: Queryable): Promise<string | null> {
  if ((db as Partial<Db>).kind === 'pglite') return null;
  const r = await db.query<{ at: string }>(
    `SELECT least(clock_timestamp(), (SELECT min(a.xact_start) FROM pg_stat_activity a
       WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL AND a.pid <> pg_backend_pid()))::text AS at`,
    [], 'write_horizon');
  return r.rows[0].at;
}
