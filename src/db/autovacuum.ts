// PGlite runs PostgreSQL in single-user mode, where no autovacuum daemon runs: its tables would never be
// analyzed (the planner then guesses: an incremental sync by updatedSince was planned as a walk of the whole
// table) nor vacuumed (dead rows of every update kept for good). This does autovacuum's job on PGlite, with
// PostgreSQL's default thresholds, read from the same statistics the daemon reads. On PostgreSQL the daemon
// does it, and this is not started.
import type { Db, Queryable } from './db.ts';
import { startLoop } from '../loop.ts';

/** PostgreSQL's defaults: autovacuum_{vacuum,analyze}_{threshold,scale_factor}. */
const VACUUM_THRESHOLD = 50;
const VACUUM_SCALE = 0.2;
const ANALYZE_THRESHOLD = 50;
const ANALYZE_SCALE = 0.1;

export interface Maintenance {
  vacuumed: string[];
  analyzed: string[];
}

/**
 * Tables past autovacuum's thresholds (dead rows to reclaim, or changes since the last ANALYZE), and tables with rows
 * that were never analyzed: without statistics the planner guesses their size from their width (a subscriptions
 * table of 4 rows, made wider by migration 044, was taken for 110 and a delivery list sorted every failed delivery).
 */
export async function tablesDue(db: Queryable): Promise<{ relname: string; vacuum: boolean; analyze: boolean }[]> {
  const r = await db.query<{ relname: string; vacuum: boolean; analyze: boolean }>(
    `SELECT * FROM (
       SELECT relname, n_dead_tup > $1::int + $2::float8 * n_live_tup AS vacuum,
         n_mod_since_analyze > $3::int + $4::float8 * n_live_tup
           -- a small table that holds rows and was never analyzed (below the thresholds for good: a few subscriptions)
           OR (n_live_tup > 0 AND last_analyze IS NULL AND last_autoanalyze IS NULL) AS analyze
       FROM pg_stat_user_tables WHERE schemaname = 'public'
     ) t WHERE t.vacuum OR t.analyze ORDER BY t.relname`,
    [VACUUM_THRESHOLD, VACUUM_SCALE, ANALYZE_THRESHOLD, ANALYZE_SCALE],
  );
  return r.rows;
}

/** One pass: VACUUM (ANALYZE) or ANALYZE each table due, one statement per table (VACUUM runs outside a transaction). */
export async function maintain(db: Db): Promise<Maintenance> {
  const done: Maintenance = { vacuumed: [], analyzed: [] };
  for (const t of await tablesDue(db)) {
    const name = `"${t.relname.replaceAll('"', '""')}"`;
    await db.exec(t.vacuum ? `VACUUM (ANALYZE) ${name}` : `ANALYZE ${name}`);
    if (t.vacuum) done.vacuumed.push(t.relname);
    done.analyzed.push(t.relname);
  }
  return done;
}

/**
 * On PGlite: a pass every `everyMs` (autovacuum_naptime is a minute), the first within 10 s of start. Returns a
 * stop function that waits for the pass under way. On PostgreSQL: nothing (the daemon runs).
 */
export function startAutovacuum(db: Db, everyMs = 60_000, onError: (err: unknown) => void = () => {}): () => Promise<void> {
  if (db.kind !== 'pglite') return async () => {};
  return startLoop(() => maintain(db), everyMs, onError, Math.min(everyMs, 10_000));
}
