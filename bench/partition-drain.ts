// What the number of partitions costs the webhook drain (docs/partitioning.md): the same backlog of N deliveries
// (20,000; --quick 5,000) drained by one Dispatcher to a loopback receiver answering 200 at once, on a database with
// the partitions of a month in place, a day each (30 days past, 7 ahead, legacy, default: ~40 per table) or 7 days
// each (BULB_PARTITION_DAYS=7: ~8 per table), against one with only the legacy and DEFAULT partitions (2 per table:
// the rows land in one either way). PostgreSQL, alternating, twice each.
// `node --import tsx bench/partition-drain.ts [--quick]`
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PgDb } from '../src/db/pg.ts';
import { migrate } from '../src/db/migrate.ts';
import { loadConfig } from '../src/config.ts';
import { AesGcmBox } from '../src/secrets/box.ts';
import { installSecretBox } from '../src/secrets/active.ts';
import { prepareSecrets } from '../src/secrets/startup.ts';
import { Dispatcher } from '../src/webhooks/dispatcher.ts';
import { claimLanes, releaseClaims } from '../src/webhooks/queue-store.ts';
import type { Queryable } from '../src/db/db.ts';
import pg from 'pg';
import { insertSubscription } from '../src/webhooks/store.ts';
import { newSigningSecret } from '../src/webhooks/signing.ts';
import { emitEvents } from '../src/events/emit.ts';
import { addDays, partitions } from '../src/partitions/store.ts';
import { ensurePartitions } from '../src/partitions/maintain.ts';
import { EVENTS } from '../src/partitions/tables.ts';
import { createPgDatabase, log, pgAvailable, round, type Row } from './lib.ts';

const KEY = crypto.randomBytes(32);
installSecretBox(new AesGcmBox(KEY));

/**
 * The claim as the worker runs it (its cached generic plan), on this database: EXPLAIN ANALYZE of 16 due deliveries
 * of the lane, 30 times in transactions rolled back; the median and the least execution time (execution includes
 * ExecutorStart, where a generic plan initialises every partition's node: what grows with the partitions; the least
 * is the figure the shared machine's load disturbs least) and the locks the statement holds.
 */
async function claimStatement(db: PgDb, url: string, sub: string): Promise<{ execMs: number; medianMs: number; locks: number }> {
  const sent: { sql: string; params: unknown[] }[] = [];
  const rec: Queryable = { query: (sql, params = [], name) => (sent.push({ sql, params }), db.query(sql, params, name)), exec: (sql) => db.exec(sql) };
  const token = crypto.randomUUID();
  const { claimed } = await claimLanes(rec, [{ subscriptionId: sub, room: 16, held: 0 }], 60_000, token);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const lit = (v: unknown) => (v === null || v === undefined ? 'NULL' : `'${(Array.isArray(v) ? `{${v.join(',')}}` : String(v)).replaceAll("'", "''")}'`);
    await c.query(`SET plan_cache_mode = force_generic_plan`);
    await c.query(`PREPARE claim AS ${sent[0].sql}`);
    const K = 30;
    const exec: number[] = [];
    let locks = 0;
    for (let i = 0; i < K; i++) {
      await c.query('BEGIN');
      const r = await c.query(`EXPLAIN (ANALYZE, SUMMARY, FORMAT JSON) EXECUTE claim(${sent[0].params.map(lit).join(', ')})`);
      locks += Number((await c.query(`SELECT count(*) AS n FROM pg_locks WHERE pid = pg_backend_pid()`)).rows[0].n);
      await c.query('ROLLBACK');
      exec.push(r.rows[0]['QUERY PLAN'][0]['Execution Time']);
    }
    exec.sort((a, b) => a - b);
    return { execMs: exec[0], medianMs: exec[K >> 1], locks: Math.round(locks / K) };
  } finally {
    await c.end();
    await releaseClaims(db, claimed, token);
  }
}

const claims: { parts: number; execMs: number; medianMs: number; locks: number }[] = [];

async function drainOnce(spanDays: number | null, n: number, url: string): Promise<number> {
  const pgdb = await createPgDatabase('pdrain');
  const db = new PgDb(pgdb.url, 10);
  try {
    await migrate(db);
    if (spanDays !== null) {
      const cutover = (await partitions(db, EVENTS)).find((p) => p.name === 'events_legacy')!.to!;
      // Days before today are the legacy partition's here (a fresh database): the month is made of days after the
      // cutover; the rows still land in the legacy one (today), as they do in the other database.
      for (let d = 0; d <= 30; d += 7) await ensurePartitions(db, addDays(cutover, d), [], spanDays);
    }
    const config = loadConfig({ BULB_LOG_LEVEL: 'silent', BULB_SECRET_KEY: KEY.toString('base64'), BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
    await prepareSecrets(db, config);
    const sub = await insertSubscription(db, {
      url, eventTypes: ['customerCreate'], isActive: true, authMethod: 'NONE', bearerToken: null, basicUsername: null, basicPassword: null,
      webhookVersion: '2022-08', maxInFlight: 16,
    }, newSigningSecret());
    for (let i = 0; i < n; i += 1000) {
      await emitEvents(db, Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
        eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: `c-${i + k}` }, source: 'TULIP_API',
      })));
    }
    await db.exec('VACUUM ANALYZE');
    const parts = (await partitions(db, EVENTS)).length;
    claims.push({ parts, ...(await claimStatement(db, pgdb.url, sub.id)) });
    const dispatcher = new Dispatcher(db, config, { log: () => {} });
    const t0 = performance.now();
    await dispatcher.start();
    for (;;) {
      const left = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`)).rows[0].n);
      if (left === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const ms = performance.now() - t0;
    await dispatcher.stop();
    log(`partition drain: ${parts} partitions per table: ${n} in ${round(ms)} ms`);
    return n / (ms / 1000);
  } finally {
    await db.close();
    await pgdb.drop();
  }
}

export async function runPartitionDrainBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed');
  const n = opts.quick ? 5_000 : 20_000;
  const server = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const few: number[] = [];
  const days: number[] = [];
  const weeks: number[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      few.push(await drainOnce(null, n, url));
      days.push(await drainOnce(1, n, url));
      weeks.push(await drainOnce(7, n, url));
    }
  } finally {
    server.close();
  }
  const best = (xs: number[]) => Math.max(...xs);
  const row = (what: string, xs: number[]): Row => ({
    what: `drain of ${n.toLocaleString('en')} deliveries, one worker, ${what} against 2`,
    value: round(best(xs)), unit: 'deliveries/s', baseline: round(best(few)), ratio: round(best(xs) / best(few)),
    goal: `≥ 0.8 × baseline: ${best(xs) / best(few) >= 0.8 ? 'met' : 'not met'}`,
    command: `node --import tsx bench/partition-drain.ts${opts.quick ? ' --quick' : ''}`,
    note: `best of 2 each, alternating; runs: ${few.map(round).join(', ')} (2) / ${xs.map(round).join(', ')} deliveries/s`,
  });
  const claim = (parts: number) => {
    const xs = claims.filter((x) => x.parts === parts);
    return { parts, execMs: round(Math.min(...xs.map((x) => x.execMs))), medianMs: round(Math.min(...xs.map((x) => x.medianMs))), locks: xs[0].locks };
  };
  const counts = [...new Set(claims.map((x) => x.parts))].sort((a, b) => a - b);
  const base = claim(counts[0]);
  return [
    row('a month of daily partitions (~40 per table)', days),
    row('a month of 7-day partitions (BULB_PARTITION_DAYS=7, ~8 per table)', weeks),
    ...counts.slice(1).map((n): Row => {
      const x = claim(n);
      return {
        what: `the claim's statement (generic plan, 16 due deliveries): least execution time with ${n} partitions per table against ${base.parts}`,
        value: x.execMs, unit: 'ms', baseline: base.execMs, ratio: round(x.execMs / base.execMs),
        goal: 'none: the cause of the drain\'s cost', command: `node --import tsx bench/partition-drain.ts${opts.quick ? ' --quick' : ''}`,
        note: `EXPLAIN ANALYZE, least of 30 per database (2 databases each); median ${x.medianMs} / ${base.medianMs} ms; locks held ${x.locks} / ${base.locks}`,
      };
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runPartitionDrainBench({ quick: process.argv.includes('--quick') }), null, 2));
  process.exit(0);
}
