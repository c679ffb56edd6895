// Retention by partition (issue 25 item 2, docs/partitioning.md): the cost of dropping a day of events and webhook
// deliveries (runRetention: DETACH + DROP of each table's partition), against the mass DELETE of before on an equal
// day. N events and N deliveries a day (1,000,000; --quick 100,000), PostgreSQL. Time of the call, and WAL:
// for the DELETE, EXPLAIN (ANALYZE, WAL) of each statement (its own WAL exactly); for the retention, the records
// of this database between the WAL positions before and after (pg_waldump, when the server's pg_wal is readable
// here; else the whole server's WAL between them, other sessions' writes included: an upper bound). A CHECKPOINT
// before each, so both pay their full-page images alike.
// `node --import tsx bench/retention.ts [--quick]`, or `npm run bench -- --only retention`.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { PgDb } from '../src/db/pg.ts';
import { migrate } from '../src/db/migrate.ts';
import { partitions, addDays, partitionName } from '../src/partitions/store.ts';
import { ensurePartitions, runRetention } from '../src/partitions/maintain.ts';
import { DELIVERIES, EVENTS } from '../src/partitions/tables.ts';
import { createPgDatabase, log, pgAvailable, round, type Row } from './lib.ts';

export async function runRetentionBench(opts: { quick?: boolean; rows?: number } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed for the retention bench');
  const n = opts.rows ?? (opts.quick ? 100_000 : 1_000_000);
  const cmd = `npm run bench -- --only retention${opts.quick ? ' --quick' : ''}`;
  const pgdb = await createPgDatabase('retention');
  const db = new PgDb(pgdb.url, 2);
  try {
    await migrate(db);
    const legacy = (await partitions(db, EVENTS)).find((p) => p.name === 'events_legacy')!;
    const dayA = addDays(legacy.to!, 1); // dropped by retention
    const dayB = addDays(dayA, 1); // deleted the old way
    await ensurePartitions(db, dayA);
    const sub = (await db.query<{ id: string }>(
      `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://hooks.example/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`,
    )).rows[0].id;
    for (const day of [dayA, dayB]) {
      log(`retention: ${n} events and deliveries on ${day.toISOString().slice(0, 10)}`);
      await db.query(
        `WITH ev AS (
           INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
           SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'ext-' || g, 'TULIP_API', $2::timestamptz + g * (interval '1 day' / $1)
           FROM generate_series(0, $1 - 1) g RETURNING id, created_at
         )
         INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status, next_attempt_at, delivered_at, created_at)
         SELECT id, created_at, $3, 'delivered', NULL, created_at, created_at FROM ev`,
        [n, day.toISOString(), sub],
      );
    }
    await db.exec('VACUUM ANALYZE events, webhook_deliveries');
    const sizeA = Number((await db.query<{ b: string }>(
      `SELECT pg_total_relation_size($1) + pg_total_relation_size($2) AS b`, [partitionName(EVENTS, dayA), partitionName(DELIVERIES, dayA)],
    )).rows[0].b);

    // The mass DELETE of before, on day B.
    await db.exec('CHECKPOINT');
    let deleteMs = 0;
    let deleteWal = 0;
    for (const t of [DELIVERIES, EVENTS]) {
      const r = await db.query<{ 'QUERY PLAN': any }>(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) DELETE FROM ${t.table} WHERE created_at >= $1 AND created_at < $2`, [dayB.toISOString(), addDays(dayB, 1).toISOString()]);
      const plan = r.rows[0]['QUERY PLAN'][0];
      deleteMs += plan['Execution Time'];
      deleteWal += plan.Plan['WAL Bytes'];
    }

    // Retention of day A: 30 days after it ended (day B, a day younger, stays), while another connection inserts
    // events one at a time (as the API does): the longest of those inserts is how long writers waited for it.
    await db.exec('CHECKPOINT');
    const writer = new PgDb(pgdb.url, 1);
    const before = await writes(writer, dayB, 300);
    const lsn0 = (await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
    let stop = false;
    const during = writes(writer, dayB, Infinity, () => stop);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    const out = await runRetention(db, { eventRetentionDays: 30, webhookRetentionDays: 30 }, addDays(dayA, 31.05)).finally(() => { stop = true; });
    const dropMs = performance.now() - t0;
    const stall = await during;
    await writer.close();
    log(`retention: inserts meanwhile ${stall.n}, longest ${round(stall.max)} ms (before: ${before.n} in 300 ms, longest ${round(before.max)} ms)`);
    const lsn1 = (await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
    const serverWal = Number((await db.query<{ b: string }>('SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn) AS b', [lsn0, lsn1])).rows[0].b);
    const own = await walOfDatabase(db, lsn0, lsn1);
    const wal = own ?? serverWal;
    const walHow = own === null ? 'pg_current_wal_lsn before/after (the whole server: an upper bound)' : `pg_waldump: this database's records (the whole server wrote ${serverWal} B meanwhile)`;
    const dropped = out.dropped.map((d) => d.partition);
    if (!dropped.includes(partitionName(EVENTS, dayA)) || !dropped.includes(partitionName(DELIVERIES, dayA))) throw new Error(`day A not dropped: ${dropped}`);
    log(`retention: dropped ${dropped.join(', ')} in ${round(dropMs)} ms, ${wal} B of WAL; DELETE ${round(deleteMs)} ms, ${deleteWal} B`);
    const rows = 2 * n;
    return [
      {
        what: `retention of a day (${n.toLocaleString('en')} events + ${n.toLocaleString('en')} deliveries, ${round(sizeA / 2 ** 20)} MiB): runRetention (DETACH + DROP)`,
        value: round(dropMs), unit: 'ms', baseline: round(deleteMs), ratio: round(dropMs / deleteMs, 4),
        goal: `< 1 s: ${dropMs < 1000 ? 'met' : 'not met'}`, command: cmd,
        note: 'baseline: DELETE of an equal day (the retention before partitioning), both after a CHECKPOINT; the call also drops the (empty) legacy partitions',
      },
      {
        what: 'retention of that day: the longest wait of an insert into events meanwhile (one connection inserting one event at a time) vs the same just before',
        value: round(stall.max), unit: 'ms', baseline: round(before.max), ratio: round(stall.max / before.max),
        goal: `information (the call took ${round(dropMs)} ms; writers wait for a partition's detach, not for its files' removal)`,
        command: cmd, note: `${stall.n} inserts during the call; ${before.n} in the 300 ms before`,
      },
      {
        what: 'retention of that day: WAL written', value: wal, unit: 'B', baseline: deleteWal, ratio: round(wal / deleteWal, 5),
        // Catalog records (and their full-page images after the checkpoint) of the partitions dropped, whatever their rows.
        goal: `no WAL per row (catalog records only; the DELETE ${round(deleteWal / rows)} B per row), < 1 % of the DELETE's: ${wal < deleteWal / 100 ? 'met' : 'not met'}`,
        command: cmd, note: `runRetention: ${walHow}; DELETE: EXPLAIN (ANALYZE, WAL)`,
      },
    ];
  } finally {
    await db.close();
    await pgdb.drop();
  }
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

/** WAL bytes of the records touching this database's relations between two positions (null: pg_waldump unusable). */
async function walOfDatabase(db: PgDb, from: string, to: string): Promise<number | null> {
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
      if (!line.includes(`/${oid}/`)) continue;
      const m = /len \(rec\/tot\):\s*\d+\/\s*(\d+)/.exec(line);
      if (m) bytes += Number(m[1]);
    }
    return bytes;
  } catch {
    return null;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runRetentionBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(rows, null, 2));
}
