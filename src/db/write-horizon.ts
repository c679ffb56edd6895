// The write horizon of a list page: a time before which every row a list orders by its write time (created_at,
// updated_at, both clock_timestamp() at the write) is committed and visible to a statement run after this one.
//
// Ids and write times are handed out when a row is written, not when its transaction commits: an import's chunk
// takes ids 1000–31000 over seconds while single creates beside it take 1001, 1002… and commit first. A cursor
// walk that served 1002 then moved past every id of the chunk, which became visible behind it: lost to a walk,
// and to an incremental sync resuming from the latest updatedAt it saw (issue: customers lost by a walk during an
// import). Rows of a transaction running now were written at or after its start (pg_stat_activity.xact_start); rows
// of a transaction that writes later, after now. So the horizon is the earliest of now and the start of every
// transaction of this database that has written to the list's table (it holds a write lock on it: rows of that table
// exist only in transactions holding one, until they end), and a page serves only rows written before it: what is
// held back comes on a later page, after everything served. The page's statement must run after this one (its
// snapshot taken later): a writer that committed in between is then visible to it.
//
// Only writers of the table: until 2026-11-28 every transaction that had written anything counted, so an import
// chunk (customers), a merge or a session left idle in a transaction hid every note, order… created since it began,
// even from the client that had just created it (a probe: a 201'd note missing from its customer's list for as long
// as an unrelated transaction ran).
//
// PGlite runs one transaction at a time in its one session: nothing is written beside a page, and there is no horizon
// (null; the statement cost a round trip to its worker, ~0.5 ms a page). Not counted: a transaction of
// another role, whose xact_start pg_stat_activity hides (Bulb writes with one role), and a clock stepped backwards
// between a row's write and a page (rows written "in the future" are held back until the clock passes them).
import type { Db, Queryable } from './db.ts';

/** The lock modes a write (INSERT, UPDATE, DELETE, COPY FROM, and stronger) holds on its table until its transaction ends. */
const WRITE_MODES = `'RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'`;

/** `table`: the table the page lists, whose writers the horizon waits for (a name Bulb's code gives, never a client's). */
export async function writeHorizon(db: Queryable, table: string): Promise<string | null> {
  if ((db as Partial<Db>).kind === 'pglite') return null;
  const r = await db.query<{ at: string }>(
    `SELECT least(clock_timestamp(), (SELECT min(a.xact_start) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'relation' AND l.relation = $1::regclass AND l.mode IN (${WRITE_MODES})
         AND a.datname = current_database() AND a.backend_xid IS NOT NULL AND a.pid <> pg_backend_pid()))::text AS at`,
    [table], 'write_horizon');
  return r.rows[0].at;
}
