// The volume bench (issue 25): `npm run bench -- --only volume [--quick]`. Three PostgreSQL databases: an empty one,
// N and 4N customers (bench/volume-data.ts makes the data in SQL, both sizes at once), measured in slices alternating
// between them: each operation's rate at N and 4N and its growth factor (how much slower at 4N; goal ≤ 1.2), each
// write path's rate at 4N against its rate into the empty database (goal ≥ 0.8), bytes per row per table, retention.
// N = 500,000 (--quick: 50,000). BENCH_VOLUME_N sets N: 5M customers at 4N is BENCH_VOLUME_N=1250000, 10M is
// BENCH_VOLUME_N=2500000 (12.5M customers generated, ~45 GB of disk); BENCH_VOLUME_TRACE=1 logs each index build.
// Reads through the HTTP API (an API process, autocannon, 4 connections; not on the empty database); writes: bulk of
// 100 (API process, no worker), then the drain of the deliveries bulk made (a worker process, to a fast receiver),
// then an import (NDJSON upload → completed, events=false, the worker).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  BENCH_SECRET_KEY, ROOT, api, createPgDatabase, customerBody, load, log, medianBy, replaceSection, round, rowsTable, sleep, startBulb, startReceiver, subscribe,
  uploadNdjson, type Child, type Row,
} from './lib.ts';
import { ATTEMPTS_PER_DELIVERY, EVENTS_PER_CUSTOMER, grow, growOn, pgliteConn } from './volume-data.ts';
import type { Db } from '../src/db/db.ts';
import { PgDb } from '../src/db/pg.ts';
import { PgliteDb } from '../src/db/pglite.ts';
import { addDays, partitionName, partitions } from '../src/partitions/store.ts';
import { ensurePartitions, runRetention } from '../src/partitions/maintain.ts';
import { PARTITIONED } from '../src/partitions/tables.ts';

const V = '2026-11';
const GOAL = 1.2;
/** Issue 25, item 4: a write path's rate at the large size, at least this share of its rate into an empty database. */
const FLAT = 0.8;

const TABLES = ['customers', 'notes', 'events', 'webhook_deliveries', 'webhook_attempts'];

type Engine = 'pg' | 'pglite';

/** One database at one size, with its Bulb process. */
interface Site {
  size: number;
  engine: Engine;
  /**
   * Runs fn on the database. PGlite is opened by one process at a time: its Bulb process is stopped meanwhile and
   * started again after, with the same role.
   */
  sql<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** The Bulb process serving HTTP (role api; on PGlite, role all while a worker's work is measured). */
  api: Child;
  /** PGlite: starts its Bulb process again with this role (PostgreSQL: a worker is a process of its own). */
  serve(role: 'api' | 'all'): Promise<void>;
  /** The first day of the generated events, deliveries and attempts: the first after the legacy partitions. */
  day0: Date;
  sub: { id: string; uuid: string };
  /** PostgreSQL: the database's URL (for a worker process). */
  url?: string;
  close(): Promise<void>;
}

/** A PostgreSQL database at one size, its API process and a connection of the bench's. */
async function pgSite(size: number, hook: string, env: Record<string, string>): Promise<Site> {
  const made = await createPgDatabase(`volume${size}`);
  const api = await startBulb({ databaseUrl: made.url, role: 'api', env });
  const subs = await subscribe(api.url, hook, ['customerCreate']);
  const db = new PgDb(made.url, 1);
  const site: Site = {
    size, engine: 'pg', api, day0: new Date(0), sub: { id: '', uuid: subs![0] }, url: made.url,
    sql: (fn) => fn(db),
    serve: async () => {},
    close: async () => {
      await site.api.stop();
      await db.close();
      await made.drop();
    },
  };
  return site;
}

/** An embedded database (a PGlite folder) at one size and its Bulb process. */
async function pgliteSite(size: number, hook: string, env: Record<string, string>, dir: string): Promise<Site> {
  const dataDir = path.join(dir, `pglite-${size}`);
  const start = (role: 'api' | 'all') => startBulb({ role, env: { ...env, BULB_DATA_DIR: dataDir, BULB_SECRET_KEY: BENCH_SECRET_KEY } });
  let role: 'api' | 'all' = 'api';
  const site: Site = {
    size, engine: 'pglite', api: await start(role), day0: new Date(0), sub: { id: '', uuid: '' },
    async sql(fn) {
      await site.api.stop();
      const db = await PgliteDb.open(dataDir);
      try {
        return await fn(db);
      } finally {
        await db.close();
        site.api = await start(role);
      }
    },
    async serve(r) {
      role = r;
      await site.api.stop();
      site.api = await start(role);
    },
    close: () => site.api.stop(),
  };
  site.sub.uuid = (await subscribe(site.api.url, hook, ['customerCreate']))![0];
  return site;
}

/** A figure summed over slices: events counted and seconds spent (rate = count / seconds). */
class Tally {
  count = 0;
  seconds = 0;
  notes: string[] = [];
  add(count: number, seconds: number, note?: string) {
    this.count += count;
    this.seconds += seconds;
    if (note) this.notes.push(note);
  }
  get rate() {
    return this.count / this.seconds;
  }
}

/** The volume bench on embedded PGlite (N = 100,000; BENCH_VOLUME_PGLITE_N sets it; --quick: 10,000). */
export function runVolumePgliteBench(o: { quick?: boolean } = {}): Promise<Row[]> {
  return runVolumeBench({ ...o, engine: 'pglite' });
}

export async function runVolumeBench(o: { quick?: boolean; engine?: Engine } = {}): Promise<Row[]> {
  const engine = o.engine ?? 'pg';
  const lite = engine === 'pglite';
  const n = Number(lite ? process.env.BENCH_VOLUME_PGLITE_N : process.env.BENCH_VOLUME_N) || (lite ? (o.quick ? 10_000 : 100_000) : o.quick ? 50_000 : 500_000);
  const seconds = o.quick ? 2 : 4;
  const rounds = 3;
  const importN = o.quick || lite ? 10_000 : 50_000;
  const cmd = lite ? `npm run bench -- --only volume${o.quick ? ' --quick' : ''} (its PGlite part)` : `npm run bench -- --only volume${o.quick ? ' --quick' : ''}`;
  const on = lite ? ' (PGlite)' : '';
  const env = { BULB_WEBHOOK_RETRY_SCHEDULE: '86400' };
  const receiver = await startReceiver();
  const hook = `${receiver.url}/hook`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-volume-'));
  const sites: Site[] = [];
  const made: string[] = [];
  const rows: Row[] = [];
  try {
    // Three databases, empty, N and 4N, each with its own API process; every figure is measured in slices
    // alternating between them, so that the load of the shared machine falls on all alike.
    for (const size of [0, n, 4 * n]) {
      const s = lite ? await pgliteSite(size, hook, env, dir) : await pgSite(size, hook, env);
      sites.push(s);
      await s.sql(async (db) => {
        s.sub.id = (await db.query<{ id: string }>('SELECT id FROM webhook_subscriptions WHERE uuid = $1', [s.sub.uuid])).rows[0].id;
        for (const t of PARTITIONED) for (const p of await partitions(db, t)) if (p.name.endsWith('_legacy') && p.to && p.to > s.day0) s.day0 = p.to;
        await ensurePartitions(db, s.day0);
      });
    }
    // The two sizes are generated at once (one connection each most of the time: the machine's two cores).
    const [empty, small, big] = sites;
    const grown = [small, big];
    const t0 = Date.now();
    await Promise.all(grown.map(async (s) => {
      log(`volume: generating ${s.size.toLocaleString('en-US')} customers${on} (their events from ${s.day0.toISOString().slice(0, 10)})`);
      // PGlite: one session (the generator's two connections are one) and a WebAssembly heap (smaller index sorts).
      const took = await s.sql((db) => (s.url ? grow(s.url, 0, s.size, s.sub.id, hook, s.day0, log) : growOn([pgliteConn(db as PgliteDb), pgliteConn(db as PgliteDb)], 0, s.size, s.sub.id, hook, s.day0, log, '256MB')));
      made.push(`${s.size.toLocaleString('en-US')} customers generated in ${round(took, 0)} s`);
    }));
    made.push(`both in ${round((Date.now() - t0) / 1000, 0)} s`);
    const growth = (what: string, unit: string, a: number, b: number, rate: boolean, note?: string) => {
      const g = rate ? a / b : b / a;
      rows.push({
        what: `${what} at ${small.size.toLocaleString('en-US')} → ${big.size.toLocaleString('en-US')} customers${on}`,
        value: round(b, 0), unit, baseline: round(a, 0), ratio: round(g),
        goal: `growth ≤ ${GOAL}: ${g <= GOAL ? 'met' : 'missed'}`, command: cmd, note,
      });
    };

    // ---- reads, through the API
    const reads = await Promise.all(grown.map((s) => readCases(s)));
    for (let k = 0; k < reads[0].length; k++) {
      const t = grown.map(() => new Tally());
      const p50: number[][] = grown.map(() => []);
      for (let si = 0; si < grown.length; si++) await load({ url: grown[si].api.url, make: (i) => ({ path: reads[si][k][1](i) }), seconds: 1, connections: 4 });
      for (let r = 0; r < rounds; r++) {
        for (let si = 0; si < grown.length; si++) {
          const res = await load({ url: grown[si].api.url, make: (i) => ({ path: reads[si][k][1](i) }), seconds, connections: 4 });
          if (res.non2xx || res.errors) throw new Error(`${reads[si][k][0]}: ${res.non2xx} non-2xx, ${res.errors} errors`);
          t[si].add(res.total, seconds);
          p50[si].push(res.p50);
        }
      }
      growth(reads[0][k][0], 'req/s', t[0].rate, t[1].rate, true, `p50 per slice (ms): ${p50.map((x) => x.join('/')).join(' → ')}`);
      log(`volume: ${rows.at(-1)!.what}: ${rows.at(-1)!.baseline} → ${rows.at(-1)!.value} req/s`);
    }

    // ---- writes: bulk (no worker), the drain of what bulk left pending (a worker), an import (the worker)
    const bulk = sites.map(() => new Tally());
    const drain = sites.map(() => new Tally());
    const imp = sites.map(() => new Tally());
    for (let r = 0; r < rounds; r++) {
      for (let si = 0; si < sites.length; si++) {
        const s = sites[si];
        const bulkLoad = async (tag: string, secs: number) => {
          const res = await load({
            url: s.api.url, method: 'POST', connections: 4, seconds: secs,
            make: (i) => ({ path: `/api/${V}/crm/customers/bulk`, body: JSON.stringify(Array.from({ length: 100 }, (_, j) => customerBody(`${tag}-${i}-${j}`))) }),
          });
          if (res.non2xx || res.errors) throw new Error(`bulk: ${res.non2xx} non-2xx, ${res.errors} errors`);
          return res.total * 100;
        };
        // A second unmeasured first, as before each read: the process may have just started (PGlite's is started
        // again after each drain), its buffer cache cold, which a bigger database takes longer to warm.
        await bulkLoad(`w${s.size}-${r}`, 1);
        bulk[si].add(await bulkLoad(`b${s.size}-${r}`, seconds), seconds);
      }
      for (let si = 0; si < sites.length; si++) {
        const s = sites[si];
        // What bulk made is left for the possible-duplicates refresher, which runs in the worker beside the drain
        // and the import as it does in production (its backlog is emptied after each round);
        // BENCH_VOLUME_REFRESHER=off empties it first (the write paths alone).
        if (process.env.BENCH_VOLUME_REFRESHER === 'off') await s.sql((db) => db.exec('TRUNCATE duplicate_dirty'));
        const d = await drainAndImport(s, receiver, async () => {
          const t = await importOnce(s, path.join(dir, `import-${s.size}-${r}.ndjson`), `i${s.size}-${r}`, importN);
          imp[si].add(importN, t);
        }, env);
        drain[si].add(d.count, d.seconds, `${d.count} in ${round(d.seconds, 1)} s`);
        await s.sql((db) => db.exec('TRUNCATE duplicate_dirty'));
      }
      log(`volume: writes round ${r + 1}: bulk ${bulk.map((t) => round(t.rate, 0)).join(' → ')}, drain ${drain.map((t) => round(t.rate, 0)).join(' → ')}, import ${imp.map((t) => round(t.rate, 0)).join(' → ')}`);
    }
    const emptyHeld = await empty.sql(async (db) => Number((await db.query('SELECT count(*) FROM customers')).rows[0].count));
    const writes: [string, string, Tally[]][] = [
      ['POST /crm/customers/bulk (100 new customers, 1 subscription, 4 connections)', 'customers/s', bulk],
      ['Drain of the deliveries bulk made (one worker, a fast receiver; first to last delivered)', 'deliveries/s', drain],
      [`Import of ${importN.toLocaleString('en-US')} new customers, events=false (upload → completed)`, 'customers/s', imp],
    ];
    for (const [what, unit, t] of writes) growth(what, unit, t[1].rate, t[2].rate, true, t.slice(1).some((x) => x.notes.length) ? t.slice(1).map((x) => x.notes.join(', ')).join(' → ') : undefined);
    // Item 4: the rate at 4N against the rate into an empty database (goal ≥ 0.8).
    for (const [what, unit, t] of writes) {
      const ratio = t[2].rate / t[0].rate;
      rows.push({
        what: `${what} at ${big.size.toLocaleString('en-US')} customers vs an empty database${on}`,
        value: round(t[2].rate, 0), unit, baseline: round(t[0].rate, 0), ratio: round(ratio),
        goal: `≥ ${FLAT} × empty: ${ratio >= FLAT ? 'met' : 'missed'}`, command: cmd,
        note: `the empty database holds what the earlier slices wrote into it (${emptyHeld.toLocaleString('en-US')} customers at the end)${t[0].notes.length ? `; ${t[0].notes.join(', ')} → ${t[2].notes.join(', ')}` : ''}`,
      });
    }

    // ---- bytes per row
    const bytes = await Promise.all(grown.map((s) => s.sql(async (db) => {
      await db.exec('VACUUM ANALYZE');
      const b: Record<string, { perRow: number; note: string }> = {};
      for (const t of TABLES) b[t] = await bytesPerRow(db, t);
      return b;
    })));
    for (const t of TABLES) {
      const b = bytes.map((x) => x[t]);
      growth(`Bytes per row, ${t} (table + indexes)`, 'B/row', b[0].perRow, b[1].perRow, false, b.map((x) => x.note).join(' → '));
    }

    // ---- retention of the first generated day (wt-part's runRetention: DETACH + DROP), the last measurement
    const ret = [];
    for (const s of grown) ret.push(await s.sql((db) => retention(db, s.day0)));
    growth('Retention of a day (runRetention: detach and drop its partitions)', 'ms', ret[0].ms, ret[1].ms, false, ret.map((r) => r.note).join(' → '));
  } finally {
    for (const s of sites) await s.close();
    await receiver.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  rows.push({
    what: 'Duplicates fold rate (the refresher)', value: 'see "Possible duplicates"', unit: '', baseline: null, ratio: null, goal: 'not measured here', command: 'npm run bench -- --only duplicates',
    note: 'the customers generated here have no duplicates profiles or keys (folding 4N customers first would take longer than the rest of the run); the duplicates bench seeds bases of two sizes with their profiles and keys in SQL and times an import folded into each',
  });
  rows[rows.length - 1].note = `${rows[rows.length - 1].note ?? ''}`;
  rows[rows.length - 1].note += `. Data: ${EVENTS_PER_CUSTOMER} events, ${EVENTS_PER_CUSTOMER} deliveries and ${EVENTS_PER_CUSTOMER * ATTEMPTS_PER_DELIVERY} attempts per customer, a note per 2; ${made.join('; ')}. Every figure: ${rounds} slices per size, alternating. Load average at the end ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores shared with other work.`;
  return rows;
}

/** The reads, each a name and a path maker, for one site. */
async function readCases(s: Site): Promise<[string, (i: number) => string][]> {
  const rand = (k: number) => 1 + Math.floor(Math.random() * k);
  const { sample, since, evs } = await s.sql((db) => readData(db, s.size, rand));
  const cursor = (id: number) => Buffer.from(`c1:${id}`, 'utf8').toString('base64url');
  const evCursor = (i: number) => Buffer.from(`e1:${evs[i % evs.length].xid}:${evs[i % evs.length].id}`, 'utf8').toString('base64url');
  const cases: [string, (i: number) => string][] = [
    ['GET /crm/customers/{uuid}', (i) => `/api/${V}/crm/customers/${sample[i % sample.length]}`],
    ['GET /crm/customers?limit=50&cursor= (a page anywhere in the table)', () => `/api/${V}/crm/customers?limit=50&cursor=${cursor(rand(s.size))}`],
    ['GET /crm/customers?updatedSince= (first page after a bulk change of 10,000)', () => `/api/${V}/crm/customers?limit=50&updatedSince=${encodeURIComponent(since)}`],
    ['GET /events?cursor= (a page from a random event on)', (i) => `/api/${V}/events?limit=50&cursor=${evCursor(i)}`],
    ["GET /integrations/webhooks/logs (a page of the subscription's attempts)", () => `/api/${V}/integrations/webhooks/logs?limit=50&subscription=${s.sub.uuid}`],
  ];
  for (const [what, make] of cases) {
    const first = await api(s.api.url, 'GET', make(0));
    if (first.status !== 200) throw new Error(`${what}: ${first.status} ${JSON.stringify(first.body).slice(0, 300)}`);
  }
  return cases;
}

/** The reads' data: customers' uuids, a bulk change of 10,000 customers and the time just before it, events. */
async function readData(db: Db, size: number, rand: (k: number) => number) {
  const sample = (await db.query<{ uuid: string }>('SELECT uuid FROM customers WHERE id = ANY ($1::bigint[])', [Array.from({ length: 2000 }, () => rand(size))])).rows.map((r) => r.uuid);
  // A bulk change of 10,000 customers (one statement), then an incremental sync since just before it.
  const since = (await db.query<{ t: string }>(`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS t`)).rows[0].t;
  await db.query(`UPDATE customers SET loyalty_tier = 'platinum', updated_at = clock_timestamp() WHERE id = ANY ($1::bigint[])`, [Array.from({ length: 10_000 }, () => rand(size))]);
  await db.query('TRUNCATE duplicate_dirty');
  await db.query('ANALYZE customers');
  // Events by cursor (a page from a random event on): the generated events' created_at is not their xid's time and
  // no time marks cover it, so a `since` page would be planned as an open walk of the created_at index (all of the
  // table at 4N), which real data, whose time marks bound the walk, does not do.
  const maxEvent = Number((await db.query('SELECT max(id) AS m FROM events')).rows[0].m);
  const evs = (await db.query<{ xid: string; id: string }>('SELECT xid::text, id::text FROM events WHERE id = ANY ($1::bigint[])', [Array.from({ length: 500 }, () => rand(maxEvent))])).rows;
  return { sample, since, evs };
}

/**
 * The drain of what bulk left pending (a worker, to a fast receiver), then `then` (the import) with the worker still
 * running; the drain's rate from its deliveries' times (first to last delivered). PostgreSQL: a worker process beside
 * the API process; PGlite: its one process started again with role all, and the receiver's count tells when the
 * pending deliveries have arrived.
 */
async function drainAndImport(s: Site, receiver: Child, then: () => Promise<void>, env: Record<string, string>): Promise<{ count: number; seconds: number }> {
  const pending = (db: Db) => db.query(`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).then((r) => Number(r.rows[0].count));
  const t0 = Date.now();
  const waitFor = async (left: () => Promise<number>) => {
    for (;;) {
      const n = await left();
      if (n <= 0) return;
      if (Date.now() - t0 > 30 * 60_000) throw new Error(`drain: ${n} still pending after 30 min`);
      await sleep(100);
    }
  };
  if (s.engine === 'pg') {
    const worker = await startBulb({ databaseUrl: s.url, role: 'worker', env });
    try {
      await s.sql((db) => waitFor(() => pending(db)));
      await then();
    } finally {
      await worker.stop();
    }
  } else {
    const due = await s.sql(pending);
    const received = async () => ((await (await fetch(receiver.url)).json()) as { received: number }).received;
    const before = await received();
    await s.serve('all');
    try {
      await waitFor(async () => due - ((await received()) - before));
      await then();
    } finally {
      await s.serve('api');
    }
  }
  const r = await s.sql((db) => db.query<{ n: string; s: number }>(
    `SELECT count(*) AS n, extract(epoch FROM max(delivered_at) - min(delivered_at))::float8 AS s FROM webhook_deliveries WHERE delivered_at > $1 AND delivered_at <= clock_timestamp()`, // (generated ones are days ahead)
    [new Date(t0)],
  ));
  return { count: Number(r.rows[0].n), seconds: Math.max(0.001, r.rows[0].s) };
}

/** An import of n new customers (events=false) through the API, applied by the worker: seconds upload → completed. */
async function importOnce(s: Site, file: string, prefix: string, n: number): Promise<number> {
  fs.writeFileSync(file, Array.from({ length: n }, (_, i) => JSON.stringify(customerBody(`${prefix}-${i}`))).join('\n') + '\n');
  const t1 = Date.now();
  const accepted = await uploadNdjson(`${s.api.url}/api/${V}/crm/imports?format=ndjson&events=false`, file);
  if (accepted.status !== 202) throw new Error(`import refused: ${accepted.status} ${accepted.body.slice(0, 300)}`);
  const uuid = JSON.parse(accepted.body).uuid as string;
  for (;;) {
    const r = await api(s.api.url, 'GET', `/api/${V}/crm/imports/${uuid}`);
    if (r.body?.status === 'completed') {
      if (r.body.created !== n) throw new Error(`import created ${r.body.created} of ${n}`);
      return (Math.min(Date.now(), Date.parse(r.body.finishedAt)) - t1) / 1000;
    }
    if (r.status !== 200 || ['failed', 'cancelled'].includes(r.body?.status)) throw new Error(`import ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
    if (Date.now() - t1 > 60 * 60_000) throw new Error('import not completed after 1 h');
    await sleep(100);
  }
}

/**
 * Times runRetention dropping each of the first RETENTION_DAYS generated days in turn, as the job's pass does in the
 * worker process that ran the pass before: the connection here is new (on PGlite the whole process is: the bench's
 * `sql()` opens the folder), so a pass first drops what is due a day earlier (the legacy partitions, which hold the
 * bench's writes) and loads the catalogs a long-lived process keeps. Timed cold, the same call cost ~0.6 s more on
 * PGlite whatever the day (docs/scaling.md). The median of the days is the figure: one drop on PGlite moved by
 * tens of milliseconds from one call to the next (the fsync of each commit).
 */
const RETENTION_DAYS = 3;
async function retention(db: Db, day0: Date): Promise<{ ms: number; note: string }> {
  const config = { eventRetentionDays: 30, webhookRetentionDays: 30 };
  const before = (await runRetention(db, config, addDays(day0, 30.05))).dropped.length;
  const days: { ms: number; rows: number[]; wal: number }[] = [];
  for (let d = 0; d < RETENTION_DAYS; d++) {
    const day = addDays(day0, d);
    const names = PARTITIONED.map((t) => partitionName(t, day));
    const rows: number[] = [];
    for (const n of names) rows.push(Number((await db.query(`SELECT count(*) FROM ${n}`)).rows[0].count));
    const lsn0 = (await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
    const t0 = performance.now();
    const out = await runRetention(db, config, addDays(day, 31.05));
    const ms = performance.now() - t0;
    const wal = Number((await db.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) AS b', [lsn0])).rows[0].b);
    const dropped = out.dropped.map((x) => x.partition);
    for (const n of names) if (!dropped.includes(n)) throw new Error(`retention: ${n} not dropped (${dropped.join(', ')})`);
    days.push({ ms, rows, wal });
  }
  const median = medianBy(days, (x) => x.ms);
  const [deliveries, attempts, events] = PARTITIONED.map((_, i) => median.rows[i].toLocaleString('en-US'));
  return {
    ms: median.ms,
    note: `a day of ${deliveries} deliveries, ${attempts} attempts and ${events} events: ${days.map((x) => round(x.ms, 0)).join(', ')} ms for ${RETENTION_DAYS} days in turn (median ${round(median.ms, 0)}; the pass before dropped ${before} partitions), ${round(median.wal / 1024, 0)} KiB of WAL server-wide (other work's included: an upper bound)`,
  };
}

/** Table and index bytes per row, summed over a partitioned table's partitions. */
async function bytesPerRow(db: Db, t: string): Promise<{ perRow: number; note: string }> {
  const r = await db.query<{ rows: string; heap: string; idx: string }>(`SELECT (SELECT count(*) FROM ${t}) AS rows, sum(pg_table_size(relid)) AS heap, sum(pg_indexes_size(relid)) AS idx FROM (SELECT relid FROM pg_partition_tree('${t}') UNION SELECT '${t}'::regclass) p JOIN pg_class k ON k.oid = p.relid WHERE k.relkind <> 'p'`);
  const rows = Number(r.rows[0].rows);
  const heap = Number(r.rows[0].heap);
  const idx = Number(r.rows[0].idx);
  return { perRow: (heap + idx) / rows, note: `${rows.toLocaleString('en-US')} rows: ${round(heap / rows, 0)} + ${round(idx / rows, 0)}` };
}

/** BENCHMARKS.md's section: the rows, the command, the load they were measured under. */
export function volumeSection(rows: Row[], load: string): string[] {
  return [
    `Run ${new Date().toISOString().slice(0, 16)}Z under a load average of ${load} (\`uptime\`, 2 cores shared with other work). Growth: how many`,
    'times slower (or larger) the operation is at 4N than at N, both measured in the same run in alternating slices.',
    'Design and findings: docs/scaling.md "Flat at volume".',
    '',
    ...rowsTable(rows, 'at N (same run)'),
  ];
}

// `node --import tsx bench/volume.ts [--quick] [--pglite] [--write]`: prints the rows (and keeps them in
// .cache/volume-rows.json); `--pglite` runs it on embedded PGlite; `--write` puts them in BENCHMARKS.md;
// `--from .cache/volume-rows.json --write` writes a kept run without running.
if (import.meta.url === `file://${process.argv[1]}`) {
  const from = process.argv.indexOf('--from');
  const engine: Engine = process.argv.includes('--pglite') ? 'pglite' : 'pg';
  const rows: Row[] = from > 0 ? JSON.parse(fs.readFileSync(process.argv[from + 1], 'utf8')).rows : await runVolumeBench({ quick: process.argv.includes('--quick'), engine });
  const load = from > 0 ? JSON.parse(fs.readFileSync(process.argv[from + 1], 'utf8')).load : os.loadavg()[0].toFixed(1);
  if (from < 0) {
    fs.mkdirSync(path.join(ROOT, '.cache'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, '.cache', `volume-rows${engine === 'pglite' ? '-pglite' : ''}.json`), JSON.stringify({ rows, load }, null, 1));
  }
  console.log(JSON.stringify(rows, null, 1));
  if (process.argv.includes('--write')) replaceSection(engine === 'pglite' ? 'Volume (PGlite, issue 25)' : 'Volume (PostgreSQL, issue 25)', volumeSection(rows, load));
}
