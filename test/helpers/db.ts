// Fresh databases for tests: PGlite from a cached migrated snapshot, PostgreSQL from a migrated template.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Db, Queryable, QueryResult, TransactionOptions } from '../../src/db/db.ts';
import { PgDb } from '../../src/db/pg.ts';
import { PgliteDb } from '../../src/db/pglite.ts';
import { migrate, migrationFiles } from '../../src/db/migrate.ts';
import { AesGcmBox } from '../../src/secrets/box.ts';
import { installSecretBox } from '../../src/secrets/active.ts';

export type Backend = 'pglite' | 'pg';
export const CI = process.env.CI === 'true' || process.env.CI === '1';
export const PG_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

const migrationsHash = crypto
  .createHash('sha256')
  .update(migrationFiles().map((m) => m.name + m.sql).join('\n'))
  .digest('hex')
  .slice(0, 12);
const cacheDir = path.resolve(import.meta.dirname, '../../.cache');

let pgAvailable: Promise<boolean> | undefined;
export function postgresAvailable(): Promise<boolean> {
  pgAvailable ??= (async () => {
    const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
    try {
      await c.connect();
      await c.end();
      return true;
    } catch (err) {
      if (CI) throw new Error(`CI=true but PostgreSQL at ${PG_URL} is unreachable: ${(err as Error).message}`);
      return false;
    }
  })();
  return pgAvailable;
}

/**
 * In a test that needs PostgreSQL: whether it skipped (no server; the reason given to `t.skip`). With CI=true a missing
 * server fails the test instead (postgresAvailable throws).
 */
export async function skippedWithoutPostgres(t: { skip(message: string): void }): Promise<boolean> {
  if (await postgresAvailable()) return false;
  t.skip(`no PostgreSQL at ${PG_URL} (set TEST_DATABASE_URL; mandatory with CI=true)`);
  return true;
}

/** The backends every database test runs on; prints each skip. */
export async function backends(): Promise<Backend[]> {
  if (await postgresAvailable()) return ['pglite', 'pg'];
  console.log(`# SKIP PostgreSQL tests: no server at ${PG_URL} (set TEST_DATABASE_URL; mandatory with CI=true)`);
  return ['pglite'];
}

async function pgliteSnapshot(): Promise<Blob> {
  const file = path.join(cacheDir, `pglite-${migrationsHash}.tar`);
  if (!fs.existsSync(file)) {
    const db = await PgliteDb.open('memory://');
    await migrate(db);
    const blob = await db.dump();
    await db.close();
    fs.mkdirSync(cacheDir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, Buffer.from(await blob.arrayBuffer()));
    fs.renameSync(tmp, file); // atomic: parallel test files never read half a snapshot
  }
  return new Blob([fs.readFileSync(file)]);
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = '/' + name;
  return u.toString();
}

async function pgTemplate(admin: pg.Client): Promise<string> {
  const name = `bulb_tpl_${migrationsHash}`;
  await admin.query('SELECT pg_advisory_lock(4242)');
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rows.length === 0) {
      await admin.query(`CREATE DATABASE ${name}`);
      const db = new PgDb(withDatabase(PG_URL, name), 2);
      try {
        await migrate(db);
      } catch (err) {
        await db.close();
        await admin.query(`DROP DATABASE ${name}`);
        throw err;
      }
      await db.close();
    }
  } finally {
    await admin.query('SELECT pg_advisory_unlock(4242)');
  }
  return name;
}

export interface TestDb {
  db: Db;
  backend: Backend;
  /** For PostgreSQL: the URL of this test's own database (to start child processes on it). */
  url?: string;
  /** For PGlite: the snapshot it started from. */
  close(): Promise<void>;
}

/** Every test process and child seals secrets under this key (so encryption runs on both engines). */
export const TEST_SECRET_KEY = Buffer.alloc(32, 'bulb-test-secret-key').toString('base64');

export async function freshDb(backend: Backend, poolSize = 10): Promise<TestDb> {
  // Tests that write through store functions without a server seal like a server would.
  installSecretBox(new AesGcmBox(Buffer.from(TEST_SECRET_KEY, 'base64')));
  if (backend === 'pglite') {
    const db = await PgliteDb.open('memory://', await pgliteSnapshot());
    return { db, backend, close: () => db.close() };
  }
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  const tpl = await pgTemplate(admin);
  const name = `bulb_t_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  // CREATE DATABASE … TEMPLATE fails while another session is connected to the template: retry briefly.
  for (let i = 0; ; i++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${tpl}`);
      break;
    } catch (err) {
      if (i > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await admin.end();
  return ownDatabase(name, poolSize);
}

/** A database with no migration applied (migration tests). */
export async function emptyDb(backend: Backend, poolSize = 4): Promise<TestDb> {
  installSecretBox(new AesGcmBox(Buffer.from(TEST_SECRET_KEY, 'base64')));
  if (backend === 'pglite') {
    const db = await PgliteDb.open('memory://');
    return { db, backend, close: () => db.close() };
  }
  const name = `bulb_e_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return ownDatabase(name, poolSize);
}

/** A test's own PostgreSQL database, dropped by close(). */
function ownDatabase(name: string, poolSize: number): TestDb {
  const url = withDatabase(PG_URL, name);
  const db = new PgDb(url, poolSize);
  return {
    db,
    backend: 'pg',
    url,
    async close() {
      await db.close();
      const a = new pg.Client({ connectionString: PG_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

/** Every row of every table, as text (what reading the database reveals): the secrets and redaction tests search it. */
export async function readEveryTable(db: Db): Promise<string> {
  const tables = await db.query<{ s: string; t: string }>(
    `SELECT table_schema AS s, table_name AS t FROM information_schema.tables
     WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
  );
  assert.ok(tables.rows.some((r) => r.t === 'webhook_subscriptions'));
  let out = '';
  for (const { s, t } of tables.rows) {
    const r = await db.query<{ row: string }>(`SELECT x::text AS row FROM "${s}"."${t}" x`);
    out += r.rows.map((x) => x.row).join('\n') + '\n';
  }
  return out;
}

/** What a test does before a database's statements or transactions (hookedDb). */
export interface DbHooks {
  /** Before each statement, the database's own and its transactions': may wait (hold it) or throw (refuse it). */
  statement?: (sql: string, name?: string) => unknown;
  /** After each statement has run, before its caller has the answer: may wait (hold the answer back). */
  answered?: (sql: string, name: string | undefined, result: QueryResult<unknown>) => unknown;
  /** When a statement fails, before its caller has the error (which it gets as thrown). */
  failed?: (sql: string, name: string | undefined, err: unknown) => unknown;
  /** Before each transaction starts: may wait. */
  transaction?: () => unknown;
}

/** The database as code under test sees it, with the test's hooks before its statements and transactions. */
export function hookedDb(db: Db, hooks: DbHooks): Db {
  const hooked = <Q extends Queryable>(q: Q): Q => new Proxy(q, {
    get(target, prop) {
      const onStatements = hooks.statement !== undefined || hooks.answered !== undefined || hooks.failed !== undefined;
      if (prop === 'query' && onStatements) {
        return async (sql: string, params?: unknown[], name?: string) => {
          await hooks.statement?.(sql, name);
          let result: QueryResult<unknown>;
          try {
            result = await target.query(sql, params as any[], name);
          } catch (err) {
            await hooks.failed?.(sql, name, err);
            throw err;
          }
          await hooks.answered?.(sql, name, result);
          return result;
        };
      }
      if (prop === 'transaction') {
        return async <T>(fn: (tx: Queryable) => Promise<T>, opts?: TransactionOptions) => {
          await hooks.transaction?.();
          return (target as unknown as Db).transaction((tx) => fn(onStatements ? hooked(tx) : tx), opts);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return hooked(db);
}

/**
 * Polls (on `q`, any connection to the database) until a statement of this database waits for a lock (`and`: a
 * further condition on pg_stat_activity), at most `tries` × `everyMs`; then fails naming `what`.
 */
export async function untilWaitingForLock(
  q: { query(sql: string): Promise<{ rows: unknown[] }> }, what: string, opts: { and?: string; tries?: number; everyMs?: number } = {},
): Promise<void> {
  const { and, tries = 300, everyMs = 10 } = opts;
  for (let i = 0; ; i++) {
    const r = await q.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'${and ? ` AND ${and}` : ''}`);
    if (r.rows.length > 0) return;
    if (i >= tries) throw new Error(`timed out: ${what}`);
    await new Promise((res) => setTimeout(res, everyMs));
  }
}
