// API throughput against the floors (ratios measured in the same run, slices alternating):
//   PostgreSQL: GET by id, page of 50 and POST create (3 webhook subscriptions) against bench/hello-pg.ts (Fastify +
//   pg, hand-written SQL, one round trip each); GET by id without the token cache; bulk of 100 against
//   bench/bulk-floor.ts; the time a revocation in one process takes to reach another.
//   PGlite (embedded default, worker thread): the same routes; GET by id against the PostgreSQL figure.
// Every route is also shown next to the Fastify hello-world baseline. Servers run in child processes; autocannon here.
// `node --import tsx bench/api.ts [--quick]`
import { randomUUID } from 'node:crypto';
import {
  V, api, createPgDatabase, customerBody, load, log, parseArgs, pgAvailable, ratioGoal, round, seedCustomers,
  spawnNode, startBulb, startHello, startReceiver, subscribe, type Child, type LoadOptions, type LoadResult, type Row,
} from './lib.ts';
import { runBulkFloor } from './bulk-floor.ts';

export interface ApiBenchOptions {
  quick: boolean;
  /** Write CPU profiles of the Bulb servers here (node --cpu-prof). */
  cpuProfDir?: string;
  backends?: ('pg' | 'pglite')[];
}

const COMMAND = 'npm run bench -- --only api';
type Target = Omit<LoadOptions, 'seconds'>;

export async function runApiBench(o: ApiBenchOptions): Promise<Row[]> {
  const seconds = o.quick ? 3 : 8;
  const warm = o.quick ? 1 : 2;
  const rows: Row[] = [];
  const hello = await startHello();
  const receiver = await startReceiver();
  const byId: Partial<Record<'pg' | 'pglite', LoadResult>> = {};
  try {
    const backends = o.backends ?? ((await pgAvailable()) ? ['pg', 'pglite'] : ['pglite']);
    for (const backend of backends) {
      const db = backend === 'pg' ? await createPgDatabase('api') : undefined;
      let server: Child | undefined;
      try {
        server = await startBulb({ databaseUrl: db?.url, cpuProfDir: o.cpuProfDir });
        const m = new Measure(rows, backend === 'pg' ? 'PostgreSQL' : 'PGlite (embedded, worker thread)', seconds, warm);
        byId[backend] = await measureBackend(m, server, hello, receiver, backend, db?.url, o);
        if (db) {
          rows.push(await revocationRow(server, db.url, o.quick ? 5 : 15));
          await server.stop();
          // The token cache off: one more round trip per request (what every request cost before the cache).
          server = await startBulb({ databaseUrl: db.url, cpuProfDir: o.cpuProfDir, env: { BULB_AUTH_CACHE_MS: '0' } });
          await withFloor(db.url, async (floor) => {
            const ids = await listAll(server!.url, 500);
            const mm = new Measure(rows, 'PostgreSQL, BULB_AUTH_CACHE_MS=0', seconds, warm);
            await mm.pair('GET customer by id', byIdTarget(server!.url, ids), { url: floor.url, make: (n) => ({ path: `/customers/${ids[n % ids.length].uuid}` }) }, 'Fastify + pg floor, one SELECT by uuid', undefined);
          });
        }
      } finally {
        await server?.stop();
        await db?.drop();
      }
    }
  } finally {
    await hello.stop();
    await receiver.stop();
  }
  if (byId.pg && byId.pglite) rows.push(await embeddedVsPostgres(seconds, warm, o));
  return rows;
}

/**
 * The embedded default against PostgreSQL, both servers up at once and measured in alternating slices (figures
 * taken minutes apart on this shared machine are not comparable).
 */
async function embeddedVsPostgres(seconds: number, warm: number, o: ApiBenchOptions): Promise<Row> {
  const db = await createPgDatabase('apicmp');
  const servers: Child[] = [];
  try {
    const pg = await startBulb({ databaseUrl: db.url, cpuProfDir: o.cpuProfDir });
    servers.push(pg);
    const lite = await startBulb({ cpuProfDir: o.cpuProfDir });
    servers.push(lite);
    const pgIds = await seedCustomers(pg.url, 500, 'cmp-pg');
    const liteIds = await seedCustomers(lite.url, 500, 'cmp-lite');
    const tmp: Row[] = [];
    const m = new Measure(tmp, 'PGlite (embedded default, worker thread)', seconds, warm);
    const t = await m.pair('GET customer by id', byIdTarget(lite.url, liteIds), byIdTarget(pg.url, pgIds), 'the same on PostgreSQL', 0.5);
    const r = tmp[0];
    const pgP99 = t.baseline.p99;
    const p99 = t.p99 / Math.max(1, pgP99);
    r.goal = `${r.goal}; p99 ${t.p99} ms vs ${pgP99} ms = ${round(p99)}× (goal ≤ 3×: ${p99 <= 3 ? 'met' : `missed by ${round(p99 - 3)}×`})`;
    r.note += '; both servers role all with the token cache (default), 500 seeded customers each';
    return r;
  } finally {
    for (const s of servers) await s.stop();
    await db.drop();
  }
}

/** A table of pairs: each target measured in slices alternating with its baseline. */
class Measure {
  constructor(readonly rows: Row[], private name: string, private seconds: number, private warm: number) {}

  async pair(what: string, target: Target, baseline: Target, baselineName: string, goal: number | undefined, extra: () => Promise<string> = async () => ''): Promise<LoadResult & { baseline: LoadResult }> {
    await load({ ...target, seconds: this.warm });
    await load({ ...baseline, seconds: this.warm });
    const b = await interleaved(baseline, target, this.seconds);
    const t = b.target;
    const ratio = t.rps / b.rps;
    log(`api [${this.name}] ${what} vs ${baselineName}: ${round(t.rps, 0)} req/s vs ${round(b.rps, 0)} (${round(ratio)}) p99 ${t.p99} ms; non-2xx ${t.non2xx}, errors ${t.errors}`);
    this.rows.push({
      what: `${what}, ${this.name} (baseline: ${baselineName})`,
      value: round(t.rps, 0),
      unit: 'req/s',
      baseline: round(b.rps, 0),
      ratio: round(ratio),
      goal: goal === undefined ? 'reported' : ratioGoal(ratio, goal),
      command: COMMAND,
      note: `latency p50 ${t.p50} ms, p99 ${t.p99} ms (baseline p50 ${b.p50} ms, p99 ${b.p99} ms; median p50 and largest p99 of the slices); ${failures(t)}${await extra()}`,
    });
    return { ...t, baseline: b };
  }
}

const byIdTarget = (base: string, ids: { uuid: string }[]): Target => ({ url: base, make: (n) => ({ path: `/api/${V}/crm/customers/${ids[n % ids.length].uuid}` }) });

async function withFloor<T>(dbUrl: string, fn: (floor: Child) => Promise<T>): Promise<T> {
  const floor = await spawnNode('bench/hello-pg.ts', [], { DATABASE_URL: dbUrl }, /hello-pg listening on (\d+)/);
  try {
    return await fn(floor);
  } finally {
    await floor.stop();
  }
}

async function measureBackend(m: Measure, server: Child, hello: Child, receiver: Child, backend: 'pg' | 'pglite', dbUrl: string | undefined, o: ApiBenchOptions): Promise<LoadResult> {
  const base = server.url;
  log(`api [${backend}]: seeding`);
  const seeded = await seedCustomers(base, 500, `seed-${backend}`);
  await subscribe(base, `${receiver.url}/hook`, ['customerCreate', 'customerCreate', 'customerCreate']);
  const run = randomUUID().slice(0, 8);
  const create: Target = { url: base, method: 'POST', make: (n) => ({ path: `/api/${V}/crm/customers`, body: JSON.stringify(customerBody(`bench-${run}-${n}`)) }) };
  const page: Target = { url: base, path: `/api/${V}/crm/customers?limit=50` };
  const before = (await api(receiver.url, 'GET', '/count')).body.received as number;
  const delivered = async () => `; the in-process worker (role all) delivered ${await receiverCountAfter(receiver, before)} webhooks by the end of the run`;

  const helloById = await m.pair('GET customer by id', byIdTarget(base, seeded), { url: hello.url, path: '/api/x/crm/customers/1' }, 'Fastify hello world', undefined);
  if (backend === 'pglite' || !dbUrl) {
    await m.pair('GET list page of 50', page, { url: hello.url, path: '/list' }, 'Fastify hello world', undefined);
    await m.pair('POST create, 3 webhook subscriptions', create, { url: hello.url, method: 'POST', path: '/create', body: JSON.stringify(customerBody(`x-${run}`)) }, 'Fastify hello world', undefined, delivered);
    return helloById;
  }
  return withFloor(dbUrl, async (floor) => {
    const t = await m.pair('GET customer by id', byIdTarget(base, seeded), { url: floor.url, make: (n) => ({ path: `/customers/${seeded[n % seeded.length].uuid}` }) }, 'Fastify + pg floor, one SELECT by uuid, no auth', 0.9);
    await m.pair('GET list page of 50', page, { url: floor.url, path: '/customers' }, 'Fastify + pg floor, the same SELECT, the same rows serialised', 0.7);
    await m.pair('POST create, 3 webhook subscriptions', create, { url: floor.url, method: 'POST', make: (n) => ({ path: '/customers', body: JSON.stringify(customerBody(`floor-${run}-${n}`)) }) },
      'Fastify + pg floor, one statement inserting customer, event, 3 deliveries', 0.6, delivered);
    if (!o.quick || process.env.BENCH_BULK) await bulkRow(m, base, dbUrl);
    return t;
  });
}

/** Bulk of 100 new customers (4 requests in flight) against the hand-written statement (4 connections). */
async function bulkRow(m: Measure, base: string, dbUrl: string) {
  const run = randomUUID().slice(0, 8);
  const seconds = 6;
  const bulk: Target = { url: base, method: 'POST', connections: 4, make: (n) => ({ path: `/api/${V}/crm/customers/bulk`, body: JSON.stringify(Array.from({ length: 100 }, (_, i) => customerBody(`bulk-${run}-${n}-${i}`))) }) };
  await load({ ...bulk, seconds: 1 });
  const rates: number[] = [];
  const floors: number[] = [];
  let last: LoadResult | undefined;
  for (let i = 0; i < 2; i++) {
    floors.push((await runBulkFloor(dbUrl, seconds / 2, 4, `bulkfloor-${run}-${i}`)).customersPerSec);
    last = await load({ ...bulk, seconds: seconds / 2 });
    rates.push((last.total * 100) / (seconds / 2));
  }
  const value = rates.reduce((a, b) => a + b) / rates.length;
  const floor = floors.reduce((a, b) => a + b) / floors.length;
  log(`api bulk of 100: ${round(value, 0)} customers/s vs floor ${round(floor, 0)} (${round(value / floor)})`);
  m.rows.push({
    what: 'POST /crm/customers/bulk of 100 new customers, PostgreSQL (baseline: bench/bulk-floor.ts, one hand-written statement per 100)',
    value: round(value, 0), unit: 'customers/s', baseline: round(floor, 0), ratio: round(value / floor),
    goal: ratioGoal(value / floor, 0.5), command: COMMAND,
    note: `4 requests in flight vs 4 connections; 3 customerCreate subscriptions, so 3 deliveries per customer on both sides; last slice p99 ${last?.p99} ms, ${failures(last!)}`,
  } satisfies Row);
}

/**
 * Cross-process revocation: a second API process on the same database caches a key; the key is revoked through
 * the first; the time until the second answers 401 (polled every 2 ms).
 */
async function revocationRow(server: Child, dbUrl: string, n: number): Promise<Row> {
  const other = await startBulb({ databaseUrl: dbUrl, role: 'api' });
  const times: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const created = await api(server.url, 'POST', '/integrations/apiKeys', { name: `revoke-${i}`, scopes: ['read'] });
      const get = async () => (await fetch(`${other.url}/api/${V}/crm/customers?limit=1`, { headers: { authorization: `Bearer ${created.body.key}` } })).status;
      if ((await get()) !== 200 || (await get()) !== 200) throw new Error('the new key does not work in the other process');
      const t0 = performance.now();
      const del = await api(server.url, 'DELETE', `/integrations/apiKeys/${created.body.uuid}`);
      if (del.status !== 204) throw new Error(`revoke failed: ${del.status}`);
      while ((await get()) !== 401) {
        if (performance.now() - t0 > 30_000) throw new Error('revocation not seen in 30 s');
        await new Promise((r) => setTimeout(r, 2));
      }
      times.push(performance.now() - t0);
    }
  } finally {
    await other.stop();
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  const max = times[times.length - 1];
  log(`api revocation across processes: median ${round(median, 1)} ms, max ${round(max, 1)} ms`);
  return {
    what: 'Key revoked in one process → refused by another (token cache on, PostgreSQL LISTEN/NOTIFY)',
    value: round(median, 1), unit: 'ms (median)', baseline: null, ratio: null,
    goal: max <= 1000 ? `≤ 1000 ms every time: met (max ${round(max, 1)} ms)` : `≤ 1000 ms every time: missed (max ${round(max, 1)} ms)`,
    command: COMMAND,
    note: `${n} revocations, measured from sending the DELETE (its answer included) to the other process's first 401; ${times.map((t) => round(t, 1)).join(', ')} ms`,
  };
}

/** `rounds` alternations of baseline then target, `seconds` in all for each; request rates from the totals. */
async function interleaved(baseline: Target, target: Target, seconds: number): Promise<LoadResult & { target: LoadResult }> {
  const rounds = seconds >= 8 ? 4 : 3;
  const slice = Math.max(1, Math.round(seconds / rounds));
  const bs: LoadResult[] = [];
  const ts: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    bs.push(await load({ ...baseline, seconds: slice }));
    ts.push(await load({ ...target, seconds: slice }));
  }
  const sum = (rs: LoadResult[]): LoadResult => {
    const total = rs.reduce((a, r) => a + r.total, 0);
    const p50s = rs.map((r) => r.p50).sort((x, y) => x - y);
    return {
      rps: total / (slice * rounds),
      p50: p50s[Math.floor(p50s.length / 2)],
      p99: Math.max(...rs.map((r) => r.p99)),
      non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      timeouts: rs.reduce((a, r) => a + r.timeouts, 0),
      total,
    };
  };
  return { ...sum(bs), target: sum(ts) };
}

/** The first n customers (for a second server on the same database). */
async function listAll(base: string, n: number): Promise<{ uuid: string; externalId: string }[]> {
  const out: { uuid: string; externalId: string }[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100 && out.length < n; i++) {
    const r: any = await api(base, 'GET', `/crm/customers?limit=250${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    out.push(...r.body.data);
    cursor = r.body.nextCursor;
    if (!cursor) break;
  }
  return out.slice(0, n);
}

async function receiverCountAfter(receiver: Child, before: number): Promise<number> {
  return ((await api(receiver.url, 'GET', '/count')).body.received as number) - before;
}

function failures(r: LoadResult): string {
  return `${r.total} requests, ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = parseArgs();
  const rows = await runApiBench({ quick: args.quick, cpuProfDir: process.env.BENCH_CPU_PROF, backends: args.only as any });
  console.log(JSON.stringify(rows, null, 2));
  process.exit(0);
}
