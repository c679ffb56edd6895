// Applies the numbered .sql files in ./migrations in order, once each, under an advisory lock.
//
// A migration runs in a transaction, together with the ones next to it, unless its first line is
// `-- bulb:outside-transaction`: then each of its statements runs and commits by itself, so that an index on a
// large table can be built with CREATE INDEX CONCURRENTLY while the API and the workers go on writing to it (a
// plain CREATE INDEX blocks every write to the table until the migration commits: seconds to minutes on a table
// of millions of rows). Such a migration must be safe to run again from any statement (IF [NOT] EXISTS): a
// process that dies halfway through leaves it unrecorded, and the next start runs it again. Its statements end
// with `;` at the end of a line, and no line ends with `;` inside one.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { retried, withRetry, type Db, type Queryable } from './db.ts';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
const LOCK_KEY = 0x62756c62; // 'bulb'
const OUTSIDE_TRANSACTION = /^--\s*bulb:outside-transaction\b/;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** Runs statement by statement, each committing by itself (see above). */
  outsideTransaction: boolean;
}

export function migrationFiles(): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()
    .map((f) => {
      const sql = fs.readFileSync(path.join(dir, f), 'utf8');
      return { version: parseInt(f, 10), name: f, sql, outsideTransaction: OUTSIDE_TRANSACTION.test(sql) };
    });
}

/**
 * Returns the names of the migrations it applied. Safe to run from several processes at once: one applies them,
 * the others wait for it and find nothing left. `through`: stop after this version (tests).
 */
export async function migrate(db: Db, through = Infinity): Promise<string[]> {
  return db.session(async (s) => {
    await lock(s);
    try {
      await s.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = new Set((await s.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
      const todo = migrationFiles().filter((m) => !done.has(m.version) && m.version <= through);
      for (let i = 0; i < todo.length; ) {
        if (todo[i].outsideTransaction) {
          await applyOutsideTransaction(s, todo[i++]);
          continue;
        }
        const group: Migration[] = [];
        while (i < todo.length && !todo[i].outsideTransaction) group.push(todo[i++]);
        // A migration that locks a table a running process (an older worker, during a rolling upgrade) holds while
        // it waits for a row the migration changed is a deadlock; PostgreSQL ends one of the two. When it is the
        // migration, its transaction rolled back whole and is run again, instead of failing the start.
        await withRetry(db, async (tx) => {
          for (const m of group) {
            await tx.exec(m.sql);
            await record(tx, m);
          }
        }, 5, { unbounded: true }); // a migration rewriting a large table may take minutes: no statement deadline
      }
      return todo.map((m) => m.name);
    } finally {
      // (On PostgreSQL the session's connection is closed after this anyway, which also frees the lock.)
      await s.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    }
  });
}

/**
 * Takes the migration lock for this session, asking again every 100 ms rather than waiting in one statement: a
 * statement waiting for the lock holds a snapshot, and CREATE INDEX CONCURRENTLY in the process holding the lock
 * waits for every older snapshot to end (a deadlock). Older Bulbs take the same key as a transaction lock.
 */
async function lock(s: Queryable): Promise<void> {
  while (!(await s.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [LOCK_KEY])).rows[0].ok) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function applyOutsideTransaction(s: Queryable, m: Migration): Promise<void> {
  // A concurrent build that was interrupted leaves its index behind, invalid (never used, but written to), and
  // IF NOT EXISTS would keep it: it is dropped and built again. Only migrations build indexes, under the lock
  // held here, so no build of one is under way.
  const names = [...m.sql.matchAll(/CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+(\w+)/gi)].map((x) => x[1]);
  const invalid = await s.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE NOT i.indisvalid AND c.relname = ANY($1::text[]) AND c.relnamespace = current_schema()::regnamespace`,
    [names],
  );
  for (const { name } of invalid.rows) await s.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  // A statement that deadlocks with a process of the previous version (054's first, locking `events` through its
  // foreign key while old writers inserted an event and then its delivery: 3 starts of 3 failed; found by a probe) is
  // run again, as a group is: its failure rolled it back alone, and every statement here is safe to run again.
  for (const statement of statements(m.sql)) await retried(() => s.query(statement));
  await record(s, m);
}

/** The statements of a migration run outside a transaction: split at each `;` that ends a line. */
export function statements(sql: string): string[] {
  return sql
    .split(/;[ \t]*$/m)
    .map((x) => x.replace(/^\s*--.*$/gm, '').trim())
    .filter((x) => x.length > 0);
}

function record(q: Queryable, m: Migration): Promise<unknown> {
  return q.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
}
