// Retention by partition (issue 25 items 2 and 5, docs/partitioning.md): the cost of dropping a day of events,
// webhook deliveries and attempts (runRetention: DETACH each table's partition, then DROP them) at two sizes in one
// run, N and 4N rows a day (N = 1,000,000 events and as many deliveries, 1.5 lean attempts per delivery; --quick
// 100,000; --rows=N), against the mass DELETE of before on an equal day of N. PostgreSQL. Each size: the call's time
// and that of its two phases (the checks and detaches; the drops, where the files go), the CPU of its backends, its
// WAL, and the growth factor from N to 4N (the volume rule: ≤ 1.2); each statement's time is logged.
// WAL: for the DELETE, EXPLAIN (ANALYZE, WAL) of each statement (its own WAL exactly); for the retention, the records
// of this database between the WAL positions before and after (pg_waldump, when the server's pg_wal is readable
// here; else the whole server's WAL between them, other sessions' writes included: an upper bound). A CHECKPOINT
// before each, so all pay their full-page images alike.
// `node --import tsx bench/retention.ts [--quick] [--rows=N] [--cold]`, or `npm run bench -- --only retention`; on the
// shared machine under `flock /tmp/bulb-bench.lock`. --cold: the day's files are evicted from the page cache before
// each call (`sync`, then `dd iflag=nocache` on each: the server's data directory must be readable here), as a day
// 30 days old that nothing reads is; by default the day is as the bench wrote it, cached. BENCH_PG_TABLESPACE puts
// the database on another filesystem (docs/partitioning.md: one without online discard).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PgDb } from '../src/db/pg.ts';
import type { Db, Queryable, QueryResult } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { partitions, addDays, partitionName } from '../src/partitions/store.ts';
import { ensurePartitions, runRetention } from '../src/partitions/maintain.ts';
import { ATTEMPTS, DELIVERIES, EVENTS } from '../src/partitions/tables.ts';
import { createPgDatabase, log, pgAvailable, round, type Row } from './lib.ts';

/** Rows written per statement while generating a day (keeps each statement's memory and WAL bounded). */
const CHUNK = 500_000;

export async function runRetentionBench(opts: { quick?: boolean; rows?: number; cold?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed for the retention bench');
  const n = opts.rows ?? (opts.quick ? 100_000 : 1_000_000);
  const sizes = [n, 4 * n];
  const cmd = `npm run bench -- --only retention${opts.quick ? ' --quick' : ''}`;
  const pgdb = await createPgDatabase('retention');
  const db = new PgDb(pgdb.url, 2);
  try {
    await migrate(db);
    const legacy = (await partitions(db, EVENTS)).find((p) => p.name === 'events_legacy')!;
    // Day by day: the N day and the 4N day (dropped by retention, in that order), the N day deleted the old way, and
    // the day the writer inserts into and the pending deliveries live in (kept).
    const first = addDays(legacy.to!, 1);
    const dropDays = sizes.map((_, i) => addDays(first, i));
    const deleteDay = addDays(first, sizes.length);
    const liveDay = addDays(deleteDay, 1);
    await ensurePartitions(db, first);
    const sub = (await db.query<{ id: string }>(
      `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://hooks.example/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`,
    )).rows[0].id;
    const version = (await db.query<{ id: number }>(
      `INSERT INTO webhook_subscription_versions (subscription_id, digest, url, webhook_version, hmac_header, headers)
       VALUES ($1, 'd', 'https://hooks.example/h', '2024-01', 'X-Tulip-Hmac-SHA256', '{}') RETURNING id`, [sub],
    )).rows[0].id;
    const days: [Date, number][] = [...dropDays.map((d, i) => [d, sizes[i]] as [Date, number]), [deleteDay, n]];
    for (const [day, rows] of days) {
      log(`retention: ${rows} events and deliveries, ${rows * 1.5} attempts on ${day.toISOString().slice(0, 10)}`);
      for (let lo = 0; lo < rows; lo += CHUNK) await fillDay(db, day, rows, lo, Math.min(rows, lo + CHUNK) - 1, sub, version);
    }
    // A few pending deliveries on the kept day (as a live system has): what the events partitions' check probes.
    await fillDay(db, liveDay, 1000, 0, 999, sub, version, 'pending');
    await db.exec('VACUUM ANALYZE events, webhook_deliveries, webhook_attempts');
    const sizeOf = async (day: Date) => Number((await db.query<{ b: string }>(
      `SELECT pg_total_relation_size($1) + pg_total_relation_size($2) + pg_total_relation_size($3) AS b`,
      [partitionName(EVENTS, day), partitionName(DELIVERIES, day), partitionName(ATTEMPTS, day)],
    )).rows[0].b);
    const bytes = await Promise.all(dropDays.map(sizeOf));

    // The legacy partitions and the empty days before the first: dropped now, so that each measured call drops one
    // day of each table and nothing else.
    await runRetention(db, { eventRetentionDays: 30, webhookRetentionDays: 30 }, addDays(first, 30));

    // The mass DELETE of before, on an equal day of N.
    await db.exec('CHECKPOINT');
    let deleteMs = 0;
    let deleteWal = 0;
    for (const t of [ATTEMPTS, DELIVERIES, EVENTS]) {
      const r = await db.query<{ 'QUERY PLAN': any }>(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) DELETE FROM ${t.table} WHERE ${t.key} >= $1 AND ${t.key} < $2`, [deleteDay.toISOString(), addDays(deleteDay, 1).toISOString()]);
      const plan = r.rows[0]['QUERY PLAN'][0];
      deleteMs += plan['Execution Time'];
      deleteWal += plan.Plan['WAL Bytes'];
    }
    log(`retention: DELETE of a day of ${n} ${round(deleteMs)} ms, ${deleteWal} B of WAL`);

    const runs: Run[] = [];
    for (const [i, day] of dropDays.entries()) runs.push(await measure(db, pgdb.url, day, liveDay, sizes[i], opts.cold ?? false));
    const [a, b] = runs;
    const growth = b.ms / a.ms;
    const retireGrowth = b.retireMs / a.retireMs;
    const walGrowth = b.wal / a.wal;
    const fmt = (x: number) => x.toLocaleString('en');
    const mib = (i: number) => round(bytes[i] / 2 ** 20);
    const day = (i: number) => `${fmt(sizes[i])} events + ${fmt(sizes[i])} deliveries + ${fmt(sizes[i] * 1.5)} attempts, ${mib(i)} MiB`;
    const phases = (r: Run) => `checks and detaches ${round(r.retireMs)} ms (the events partition's pending-delivery check ${round(r.steps.find((s) => s.what.startsWith('WITH range'))?.ms ?? 0, 1)} ms), drops ${round(r.dropMs)} ms (their COMMITs, where the files go: ${r.steps.filter((s) => s.what === 'BEGIN + COMMIT' && s.at >= r.dropAt).map((s) => round(s.ms)).join(' / ')} ms)`;
    const cpu = (r: Run) => (r.cpuMs === null ? 'not readable' : `${round(r.cpuMs)} ms`);
    const met = (ok: boolean) => (ok ? 'met' : 'not met');
    return [
      {
        what: `retention of a day at N (${day(0)}): runRetention (DETACH each partition, then DROP them)`,
        value: round(a.ms), unit: 'ms', baseline: round(deleteMs), ratio: round(a.ms / deleteMs, 4),
        goal: `< 1 s: ${met(a.ms < 1000)}`, command: cmd,
        note: `baseline: DELETE of an equal day (the retention before partitioning), both after a CHECKPOINT. The day's files ${opts.cold ? 'evicted from the page cache before each call (--cold)' : 'as the bench wrote them (cached)'}${process.env.BENCH_PG_TABLESPACE ? `, in tablespace ${process.env.BENCH_PG_TABLESPACE}` : ''}. ${phases(a)}`,
      },
      {
        what: `retention of a day at 4N (${day(1)}) vs at N: the whole call`,
        value: round(b.ms), unit: 'ms', baseline: round(a.ms), ratio: round(growth, 2),
        goal: `growth ≤ 1.2 for 4× the rows: ${met(growth <= 1.2)}; < 1 s: ${met(b.ms < 1000)}`, command: cmd,
        note: phases(b),
      },
      {
        what: 'the same, its first phase: the checks and the DETACH (and rename) of each partition, after which the day is out of the three tables',
        value: round(b.retireMs, 1), unit: 'ms', baseline: round(a.retireMs, 1), ratio: round(retireGrowth, 2),
        goal: `growth ≤ 1.2 for 4× the rows: ${met(retireGrowth <= 1.2)}; < 1 s: ${met(b.retireMs < 1000)}`, command: cmd,
        note: 'catalog work and index bounds: no statement reads the day\'s rows',
      },
      {
        what: 'the same, its second phase: the DROP of the detached tables (the removal of their files), 4N vs N',
        value: round(b.dropMs), unit: 'ms', baseline: round(a.dropMs), ratio: round(b.dropMs / a.dropMs, 2),
        goal: `information: ${round(b.dropMs / mib(1), 3)} ms per MiB at 4N, ${round(a.dropMs / mib(0), 3)} at N (the files' size: ${round(mib(1) / mib(0), 2)}×)`, command: cmd,
        note: `CPU of the call's backends (kernel time of the truncate and unlink included): ${cpu(b)} at 4N, ${cpu(a)} at N; the rest of the wall time they wait for the filesystem`,
      },
      {
        what: 'retention of the day at N: WAL written', value: a.wal, unit: 'B', baseline: deleteWal, ratio: round(a.wal / deleteWal, 5),
        // Catalog records (and their full-page images after the checkpoint) of the partitions dropped, whatever their rows.
        goal: `no WAL per row (catalog records only; the DELETE ${round(deleteWal / (3.5 * n))} B per row), < 1 % of the DELETE's: ${met(a.wal < deleteWal / 100)}`,
        command: cmd, note: `runRetention: ${a.walHow}; DELETE: EXPLAIN (ANALYZE, WAL)`,
      },
      {
        what: 'retention of the day at 4N: WAL written vs at N', value: b.wal, unit: 'B', baseline: a.wal, ratio: round(walGrowth, 2),
        goal: `growth ≤ 1.2 for 4× the rows: ${met(walGrowth <= 1.2)}`, command: cmd, note: `runRetention: ${b.walHow}`,
      },
      {
        what: 'retention at 4N vs at N: the longest wait of an insert into events meanwhile (one connection inserting one event at a time)',
        value: round(b.stall.max), unit: 'ms', baseline: round(a.stall.max), ratio: round(b.stall.max / a.stall.max),
        goal: 'information (writers wait for a partition\'s detach, not for its files\' removal)', command: cmd,
        note: `${a.stall.n} / ${b.stall.n} inserts during the calls; in the 300 ms just before each: longest ${round(a.before.max)} / ${round(b.before.max)} ms`,
      },
    ];
  } finally {
    await db.close();
    await pgdb.drop();
  }
}

/**
 * Rows lo … hi of a day of `rows` events (spread over its first 23 hours), a delivery each to subscription `sub`,
 * and the delivery's attempts as Bulb writes them since migration 051 (lean rows: the signatures and the version of
 * the subscription's sending config; src/webhooks/queue-store.ts): two for every other delivery (a failure, then
 * the success), one for the rest, 20 s apart: 1.5 per delivery, all in the same day.
 */
async function fillDay(db: Db, day: Date, rows: number, lo: number, hi: number, sub: string, version: number, status = 'delivered'): Promise<void> {
  await db.query(
    `WITH e AS (
       INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
       SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'ext-' || g, 'TULIP_API', $3::timestamptz + g * (interval '23 hours' / $4)
       FROM generate_series($1::int, $2::int) g RETURNING id, created_at
     ), d AS (
       INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status, attempt_count, schedule_pos, next_attempt_at, delivered_at, created_at, updated_at)
       SELECT id, created_at, $5, $7, 1 + id % 2, 0, CASE WHEN $7 = 'pending' THEN created_at END,
         CASE WHEN $7 = 'delivered' THEN created_at + interval '1 minute' END, created_at, created_at + interval '1 minute' FROM e
       RETURNING id, created_at, subscription_id, attempt_count
     )
     INSERT INTO webhook_attempts (uuid, delivery_id, delivery_created_at, subscription_id, attempt_number, started_at, duration_ms, status_code,
       error_code, outcome, next_attempt_at, version_id, signatures, response_body)
     SELECT NULL, d.id, d.created_at, d.subscription_id, k, d.created_at + k * interval '20 seconds', 20 + d.id % 50,
       CASE WHEN k < d.attempt_count THEN 500 ELSE 200 END, CASE WHEN k < d.attempt_count THEN 'HTTP_STATUS' END,
       CASE WHEN k < d.attempt_count THEN 'failure' ELSE 'success' END, CASE WHEN k < d.attempt_count THEN d.created_at + interval '1 minute' END,
       $6, sha256(int8send(d.id * 4 + k)) || sha256(int8send(d.id * 4 + k + 1)), CASE WHEN k < d.attempt_count THEN 'upstream error' ELSE '{}' END
     FROM d, generate_series(1, d.attempt_count) k`,
    [lo, hi, day.toISOString(), rows, sub, version, status],
  );
}

interface Step {
  what: string;
  /** performance.now() at its start (a transaction's BEGIN + COMMIT: at the transaction's start). */
  at: number;
  ms: number;
}

interface Run {
  ms: number;
  /** The first phase (the checks, each partition's DETACH and rename) and the second (the DROPs: the files' removal). */
  retireMs: number;
  dropMs: number;
  /** performance.now() when the second phase began. */
  dropAt: number;
  /** CPU time of the call's backends (schedstat), null when /proc of the server is not readable here. */
  cpuMs: number | null;
  wal: number;
  walHow: string;
  steps: Step[];
  stall: { n: number; max: number };
  before: { n: number; max: number };
}

/**
 * Retention of `day` (rows events and deliveries): 30 days after it ended (younger days stay), after a CHECKPOINT,
 * while another connection inserts events one at a time into `liveDay` (as the API does): the longest of those
 * inserts is how long writers waited for it. Each statement of the call is timed, and each transaction's COMMIT.
 */
async function measure(db: PgDb, url: string, day: Date, liveDay: Date, rows: number, cold: boolean): Promise<Run> {
  await db.exec('CHECKPOINT');
  if (cold) log(`retention: ${await evict(db, day)} MiB of the day's files evicted from the page cache`);
  const writer = new PgDb(url, 1);
  const before = await writes(writer, liveDay, 300);
  const writerPid = (await writer.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0].p;
  // The writer's inserts write WAL of their own: left out of the call's (its partition, indexes, toast, sequence).
  const writerRels = (await db.query<{ f: string }>(
    `SELECT pg_relation_filenode(c.oid)::text AS f FROM pg_class c, (SELECT $1::regclass AS p) x
      WHERE c.oid = x.p OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = x.p)
         OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = x.p) OR c.oid = pg_get_serial_sequence('events', 'id')::regclass`,
    [partitionName(EVENTS, liveDay)],
  )).rows.map((r) => r.f);
  const backends = (await db.query<{ p: number }>(`SELECT pid AS p FROM pg_stat_activity WHERE datname = current_database() AND pid <> $1`, [writerPid])).rows.map((r) => r.p);
  const lsn0 = (await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
  let stop = false;
  const during = writes(writer, liveDay, Infinity, () => stop);
  await new Promise((r) => setTimeout(r, 50));
  const timed = timing(db);
  const cpu0 = cpuOf(backends);
  const t0 = performance.now();
  const out = await runRetention(timed.db, { eventRetentionDays: 30, webhookRetentionDays: 30 }, addDays(day, 31.05)).finally(() => { stop = true; });
  const t1 = performance.now();
  const cpu1 = cpuOf(backends);
  const ms = t1 - t0;
  // The second phase begins with dropRetired's look-up of the detached tables (the last statement before the DROPs).
  const dropAt = timed.steps.filter((s) => s.what.startsWith('SELECT relname AS name FROM pg_class')).at(-1)?.at ?? t1;
  const stall = await during;
  await writer.close();
  const lsn1 = (await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
  const serverWal = Number((await db.query<{ b: string }>('SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn) AS b', [lsn0, lsn1])).rows[0].b);
  const own = await walOfDatabase(db, lsn0, lsn1, writerRels);
  const dropped = out.dropped.map((d) => d.partition).sort();
  const want = [EVENTS, DELIVERIES, ATTEMPTS].map((t) => partitionName(t, day)).sort();
  if (dropped.join() !== want.join()) throw new Error(`dropped ${dropped}, wanted ${want}`);
  const cpuMs = cpuBetween(cpu0, cpu1);
  log(`retention: ${rows} a day dropped in ${round(ms)} ms (detaches ${round(dropAt - t0)} ms, drops ${round(t1 - dropAt)} ms; backends' CPU ${cpuMs === null ? '?' : round(cpuMs)} ms), ${own ?? serverWal} B of WAL; inserts meanwhile ${stall.n}, longest ${round(stall.max)} ms (before: ${round(before.max)} ms)`);
  for (const s of timed.steps) log(`  ${round(s.at - t0, 1)} +${round(s.ms, 2)} ms  ${s.what}`);
  return {
    ms, retireMs: dropAt - t0, dropMs: t1 - dropAt, dropAt, cpuMs, wal: own ?? serverWal, steps: timed.steps, stall, before,
    walHow: own === null ? 'pg_current_wal_lsn before/after (the whole server: an upper bound)' : `pg_waldump: this database's records but the concurrent writer's inserts (the whole server wrote ${serverWal} B meanwhile)`,
  };
}

/**
 * Evicts the files of `day`'s three partitions (tables, TOAST, indexes; every fork and segment) from the page cache,
 * after a `sync` (only clean pages are evicted); answers their MiB.
 */
async function evict(db: PgDb, day: Date): Promise<number> {
  const dir = (await db.query<{ d: string }>("SELECT current_setting('data_directory') AS d")).rows[0].d;
  const rels = (await db.query<{ f: string }>(
    `SELECT pg_relation_filepath(c.oid) AS f FROM pg_class c, unnest($1::regclass[]) p(oid)
      WHERE c.oid = p.oid OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = p.oid)
         OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = p.oid)
         OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = (SELECT reltoastrelid FROM pg_class WHERE oid = p.oid))`,
    [[EVENTS, DELIVERIES, ATTEMPTS].map((t) => partitionName(t, day))],
  )).rows.map((r) => path.join(dir, r.f));
  execFileSync('sync');
  let bytes = 0;
  for (const rel of rels) {
    const base = path.basename(rel);
    for (const f of fs.readdirSync(path.dirname(rel)).filter((n) => n === base || n.startsWith(`${base}.`) || n.startsWith(`${base}_`))) {
      const file = path.join(path.dirname(rel), f);
      bytes += fs.statSync(file).size;
      execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
    }
  }
  return round(bytes / 2 ** 20);
}

/** CPU time (ms) each of the server processes `pids` has used, from /proc/<pid>/schedstat (absent: not readable here, or gone). */
function cpuOf(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of pids) {
    try {
      out.set(p, Number(fs.readFileSync(`/proc/${p}/schedstat`, 'utf8').split(' ')[0]) / 1e6);
    } catch {
      // not on this machine, or the process ended (a connection closed since pg_stat_activity listed it)
    }
  }
  return out;
}

/** CPU used between two readings by the processes read both times (null: none was). */
function cpuBetween(a: Map<number, number>, b: Map<number, number>): number | null {
  const both = [...a.keys()].filter((p) => b.has(p));
  return both.length === 0 ? null : both.reduce((sum, p) => sum + b.get(p)! - a.get(p)!, 0);
}

/** The db, with each statement's time (and each transaction's BEGIN and COMMIT, as "COMMIT") recorded in order. */
function timing(db: Db): { db: Db; steps: Step[] } {
  const steps: Step[] = [];
  const label = (sql: string) => sql.replace(/\s+/g, ' ').trim().slice(0, 70);
  const wrap = (q: Queryable): Queryable => ({
    async query<T>(sql: string, params?: unknown[], name?: string): Promise<QueryResult<T>> {
      const t = performance.now();
      try {
        return await q.query<T>(sql, params, name);
      } finally {
        steps.push({ what: label(sql), at: t, ms: performance.now() - t });
      }
    },
    async exec(sql: string) {
      const t = performance.now();
      try {
        await q.exec(sql);
      } finally {
        steps.push({ what: label(sql), at: t, ms: performance.now() - t });
      }
    },
  });
  const timed: Db = Object.assign(Object.create(db), wrap(db), {
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const t = performance.now();
      let inner = 0;
      try {
        return await db.transaction((tx) => fn({
          query: async (sql, params, name) => { const s = performance.now(); try { return await tx.query(sql, params, name); } finally { inner += performance.now() - s; steps.push({ what: label(sql), at: s, ms: performance.now() - s }); } },
          exec: async (sql) => { const s = performance.now(); try { await tx.exec(sql); } finally { inner += performance.now() - s; steps.push({ what: label(sql), at: s, ms: performance.now() - s }); } },
        }));
      } finally {
        steps.push({ what: 'BEGIN + COMMIT', at: t, ms: performance.now() - t - inner });
      }
    },
  });
  return { db: timed, steps };
}

/** Inserts one event at a time into day `day` for `ms` (or until `stop`): how many, and the longest one (ms). */
async function writes(db: PgDb, day: Date, ms: number, stop: () => boolean = () => false): Promise<{ n: number; max: number }> {
  const end = performance.now() + ms;
  let n = 0;
  let max = 0;
  while (performance.now() < end && !stop()) {
    const t = performance.now();
    await db.query(
      `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
       VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'w', 'TULIP_API', $1::timestamptz + random() * interval '1 hour')`,
      [day.toISOString()],
    );
    max = Math.max(max, performance.now() - t);
    n++;
  }
  return { n, max };
}

/** WAL bytes of the records touching this database's relations (but those with filenodes `exclude`) between two positions (null: pg_waldump unusable). */
async function walOfDatabase(db: PgDb, from: string, to: string, exclude: string[] = []): Promise<number | null> {
  try {
    const r = await db.query<{ dir: string; oid: string; v: string }>(
      `SELECT current_setting('data_directory') AS dir, (SELECT oid FROM pg_database WHERE datname = current_database())::text AS oid,
         current_setting('server_version_num') AS v`,
    );
    const { dir, oid, v } = r.rows[0];
    const bin = `/usr/lib/postgresql/${Math.floor(Number(v) / 10000)}/bin/pg_waldump`;
    if (!fs.existsSync(bin) || !fs.existsSync(`${dir}/pg_wal`)) return null;
    const out = execFileSync(bin, ['-p', `${dir}/pg_wal`, '-s', from, '-e', to], { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
    let bytes = 0;
    for (const line of out.split('\n')) {
      if (!line.includes(`/${oid}/`) || exclude.some((f) => new RegExp(`/${oid}/${f}\\b`).test(line))) continue;
      const m = /len \(rec\/tot\):\s*\d+\/\s*(\d+)/.exec(line);
      if (m) bytes += Number(m[1]);
    }
    return bytes;
  } catch {
    return null;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = process.argv.find((a) => a.startsWith('--rows='));
  const rows = await runRetentionBench({ quick: process.argv.includes('--quick'), rows: arg ? Number(arg.slice(7)) : undefined, cold: process.argv.includes('--cold') });
  console.log(JSON.stringify(rows, null, 2));
}
