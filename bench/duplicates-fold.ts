// The refresher's fold of one import into a large base, measured on a copy (issue 25, docs/duplicates.md): a base of
// --base customers is seeded once by the duplicates bench's seedBase into a kept database (bulb_bench_dupbase_<N>,
// reused by later runs: 5M takes ~9 minutes to seed), copied (CREATE DATABASE … TEMPLATE), migrated (so a base kept
// from an older checkout is upgraded as a deployment would be), then --import generated customers are inserted and
// folded in by refreshDuplicates. Prints the rate, the WAL written per customer (the whole server's) and, per
// customer folded, the blocks each duplicates table and index touched and read from outside shared_buffers
// (pg_statio, reset before the fold), and the time spent in each of the refresher's statements per customer folded.
// The copy is dropped after; `--drop-base` drops the kept base too.
// `node --import tsx bench/duplicates-fold.ts [--base 5000000] [--import 1000000] [--drop-base]`
import type { Db, Queryable } from '../src/db/db.ts';
import { PgDb } from '../src/db/pg.ts';
import { migrate } from '../src/db/migrate.ts';
import { refreshDuplicates } from '../src/crm/duplicates/refresh.ts';
import { COMMON_CONTACT, NAME_KEY_CAP } from '../src/crm/duplicates/score.ts';
import { generate } from './duplicates-gen.ts';
import { insertCustomers, seedBase } from './duplicates.ts';
import { log, pgDatabaseUrl, withPgAdmin } from './lib.ts';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const base = arg('base', 5_000_000);
const importN = arg('import', 1_000_000);
const kept = `bulb_bench_dupbase_${base}`;
const copy = `${kept}_fold`;

/** Time spent in each of the refresher's statements (by its first words); the fold's time less their sum is its own code's. */
const spent = new Map<string, { ms: number; calls: number }>();
const note = (what: string, ms: number) => {
  const t = spent.get(what) ?? { ms: 0, calls: 0 };
  t.ms += ms;
  t.calls++;
  spent.set(what, t);
};
const label = (sql: string) => sql.replace(/\s+/g, ' ').trim().slice(0, 70);
function timedQueries(q: Queryable): Queryable {
  return {
    async query(sql, params, name) {
      const t = performance.now();
      try {
        return await q.query(sql, params, name);
      } finally {
        note(label(sql), performance.now() - t);
      }
    },
    exec: (sql) => q.exec(sql),
  };
}
/** The refresher's database, its statements timed. */
function timedDb(db: PgDb): Db {
  return Object.assign(Object.create(db) as Db, {
    query: timedQueries(db).query,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) => db.transaction((tx) => fn(timedQueries(tx))),
  });
}

const exists = await withPgAdmin(async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [kept])).rowCount === 1);
if (!exists) {
  await withPgAdmin((c) => c.query(`CREATE DATABASE ${kept}`));
  const db = new PgDb(pgDatabaseUrl(kept), 4);
  await migrate(db);
  await seedBase(db, base);
  await db.exec('VACUUM ANALYZE');
  await db.close();
}
await withPgAdmin(async (c) => {
  await c.query(`DROP DATABASE IF EXISTS ${copy}`);
  // FILE_COPY: the files copied after a checkpoint (the default, WAL_LOG, writes the whole base to the WAL: 12 GB at 5M).
  await c.query(`CREATE DATABASE ${copy} TEMPLATE ${kept} STRATEGY = FILE_COPY`);
});
let db = new PgDb(pgDatabaseUrl(copy), 4);
try {
  const m0 = performance.now();
  const applied = await migrate(db);
  log(`duplicates fold: migrations applied to the copy in ${((performance.now() - m0) / 1000).toFixed(1)} s: ${JSON.stringify(applied)}`);
  // A rewritten table (063, 065) has no visibility map yet: autovacuum sets it soon after an upgrade (its insert
  // threshold), the kept base's was set when seeded. Without it every index-only probe of the fold visits the heap.
  if (applied.length > 0) await db.exec('VACUUM ANALYZE duplicate_keys');
  await insertCustomers(db, generate(importN, 4242, 0.05, 'imp-').customers);
  // The server writes back what the copy and the import dirtied before the clock starts, not during the fold.
  await db.exec('CHECKPOINT');
  await db.exec('SELECT pg_stat_reset()');
  const lsn = (await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
  const t0 = performance.now();
  const refreshed = await refreshDuplicates(timedDb(db), 'US');
  const s = (performance.now() - t0) / 1000;
  const wal = Number((await db.query<{ w: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS w', [lsn])).rows[0].w);
  await db.close(); // its backends flush their statistics as they exit
  db = new PgDb(pgDatabaseUrl(copy), 1);
  const per = (n: string | number) => (Number(n) / importN).toFixed(1);
  const rels = await db.query<{ relname: string; touched: string; read: string }>(
    `SELECT relname, heap_blks_hit + heap_blks_read + coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0) AS touched,
       heap_blks_read + coalesce(idx_blks_read, 0) AS read
     FROM pg_statio_user_tables WHERE relname LIKE 'duplicate%' ORDER BY 2 DESC`,
  );
  console.log(`base ${base}, import ${importN}: ${refreshed} customers refreshed (re-queued included) in ${s.toFixed(1)} s: ${Math.round(importN / s)} customers/s`);
  console.log(`WAL ${(wal / importN / 1024).toFixed(1)} kB per customer (the whole server's)`);
  for (const r of rels.rows) console.log(`${r.relname.padEnd(24)} blocks per customer ${per(r.touched).padStart(7)}, read from outside shared_buffers ${per(r.read)}`);
  // Candidates per customer folded: the distinct other customers its blocking keys under their caps bring to it
  // (before the sift by name), on a sample of the import.
  const sample = await db.query<{ n: number; c: string }>(
    `WITH s AS (SELECT id FROM customers WHERE external_id LIKE 'imp-%' ORDER BY hashint8(id) LIMIT 2000),
       k AS (SELECT k.customer_id, k.key FROM s JOIN duplicate_keys k ON k.customer_id = s.id
         WHERE k.key NOT LIKE 'w:%' AND (SELECT count(*) FROM (SELECT 1 FROM duplicate_keys d WHERE d.key = k.key LIMIT ${NAME_KEY_CAP + 1}) b)
           <= CASE WHEN k.key LIKE 'e:%' OR k.key LIKE 'p:%' THEN ${COMMON_CONTACT} ELSE ${NAME_KEY_CAP} END)
     SELECT (SELECT count(*)::int FROM s) AS n, (SELECT count(DISTINCT (k.customer_id, o.customer_id)) FROM k JOIN duplicate_keys o ON o.key = k.key AND o.customer_id <> k.customer_id)::text AS c`,
  );
  console.log(`candidates per customer folded (before the sift, ${sample.rows[0].n} sampled): ${(Number(sample.rows[0].c) / sample.rows[0].n).toFixed(2)}`);
  const inSql = [...spent.values()].reduce((a, t) => a + t.ms, 0);
  console.log(`statements: ${((1000 * inSql) / importN).toFixed(0)} µs per customer folded of ${((1e6 * s) / importN).toFixed(0)} µs (the rest: the refresher's own code)`);
  for (const [what, t] of [...spent].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(`  ${((1000 * t.ms) / importN).toFixed(1).padStart(7)} µs per customer, ${String(t.calls).padStart(6)} calls: ${what}`);
  }
} finally {
  await db.close();
  await withPgAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
    if (process.argv.includes('--drop-base')) await c.query(`DROP DATABASE IF EXISTS ${kept} WITH (FORCE)`);
  });
}
process.exit(0);
