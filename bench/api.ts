// API throughput: GET by id, GET a list page of 50, POST create (with 3 matching webhook subscriptions)
// against PostgreSQL and PGlite, each next to the Fastify hello-world baseline measured just before it.
// Servers run in child processes; autocannon runs here. `node --import tsx bench/api.ts [--quick]`
import { randomUUID } from 'node:crypto';
import {
  V, api, createPgDatabase, customerBody, load, log, parseArgs, pgAvailable, ratioGoal, round, seedCustomers,
  spawnNode, startBulb, startHello, startReceiver, subscribe, type Child, type LoadOptions, type LoadResult, type Row,
} from './lib.ts';

export interface ApiBenchOptions {
  quick: boolean;
  /** Write CPU profiles of the Bulb servers here (node --cpu-prof). */
  cpuProfDir?: string;
  backends?: ('pg' | 'pglite')[];
}

const COMMAND = 'npm run bench -- --only api';

export async function runApiBench(o: ApiBenchOptions): Promise<Row[]> {
  const seconds = o.quick ? 3 : 8;
  const warm = o.quick ? 1 : 2;
  const rows: Row[] = [];
  const hello = await startHello();
  const receiver = await startReceiver();
  try {
    const backends = o.backends ?? ((await pgAvailable()) ? ['pg', 'pglite'] : ['pglite']);
    for (const backend of backends) {
      const db = backend === 'pg' ? await createPgDatabase('api') : undefined;
      let server: Child | undefined;
      try {
        server = await startBulb({ databaseUrl: db?.url, cpuProfDir: o.cpuProfDir });
        rows.push(...(await measureBackend(server, hello, receiver, backend, seconds, warm, false, db?.url)));
        if (backend === 'pg') {
          // The same database behind a server with the optional token cache: one round trip less per request.
          await server.stop();
          server = await startBulb({ databaseUrl: db?.url, cpuProfDir: o.cpuProfDir, env: { BULB_AUTH_CACHE_MS: '5000' } });
          rows.push(...(await measureBackend(server, hello, receiver, backend, seconds, warm, true, db?.url)));
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
  return rows;
}

async function measureBackend(server: Child, hello: Child, receiver: Child, backend: 'pg' | 'pglite', seconds: number, warm: number, cached = false, dbUrl?: string): Promise<Row[]> {
  const name = (backend === 'pg' ? 'PostgreSQL' : 'PGlite') + (cached ? ' with BULB_AUTH_CACHE_MS=5000' : '');
  const base = server.url;
  log(`api [${name}]: seeding`);
  const seeded = cached ? await listAll(base, 500) : await seedCustomers(base, 500, `seed-${backend}`);
  const subs = cached ? ['(existing)'] : await subscribe(base, `${receiver.url}/hook`, ['customerCreate', 'customerCreate', 'customerCreate']);
  const rows: Row[] = [];

  const pair = async (what: string, target: Omit<LoadOptions, 'seconds'>, baseline: Omit<LoadOptions, 'seconds'>, goal: number | undefined, extra: () => Promise<string> = async () => '') => {
    await load({ ...target, seconds: warm });
    // Baseline and target alternate in short slices, so that a change in the machine's other load hits both.
    const b = await interleaved(baseline, target, seconds);
    const t = b.target;
    const ratio = t.rps / b.rps;
    log(`api [${name}] ${what}: ${round(t.rps, 0)} req/s vs baseline ${round(b.rps, 0)} (${round(ratio)}) p99 ${t.p99} ms; non-2xx ${t.non2xx}, errors ${t.errors}`);
    rows.push({
      what: `${what}, ${name}`,
      value: round(t.rps, 0),
      unit: 'req/s',
      baseline: round(b.rps, 0),
      ratio: round(ratio),
      goal: goal === undefined ? 'reported' : ratioGoal(ratio, goal),
      command: COMMAND,
      note: `${what}, ${name}: latency p50 ${t.p50} ms, p99 ${t.p99} ms (baseline p99 ${b.p99} ms; median p50 and largest p99 of the slices); ${failures(t)}${await extra()}`,
    });
  };

  await pair(
    'GET customer by id',
    { url: base, make: (n) => ({ path: `/api/${V}/crm/customers/${seeded[n % seeded.length].uuid}` }) },
    { url: hello.url, path: '/api/x/crm/customers/1' },
    backend === 'pg' ? 0.5 : undefined,
  );
  if (backend === 'pg' && !cached && dbUrl) {
    // The database-backed floor: the same customer by uuid through Fastify + pg with one SELECT and nothing else.
    const floor = await spawnNode('bench/hello-pg.ts', [], { DATABASE_URL: dbUrl }, /hello-pg listening on (\d+)/);
    try {
      await load({ url: floor.url, make: (n) => ({ path: `/customers/${seeded[n % seeded.length].uuid}` }), seconds: warm });
      const f = await interleaved({ url: floor.url, make: (n) => ({ path: `/customers/${seeded[n % seeded.length].uuid}` }) }, { url: base, make: (n) => ({ path: `/api/${V}/crm/customers/${seeded[n % seeded.length].uuid}` }) }, seconds);
      const ratio = f.target.rps / f.rps;
      log(`api [${name}] GET by id vs Fastify + pg floor: ${round(f.target.rps, 0)} vs ${round(f.rps, 0)} (${round(ratio)})`);
      rows.push({
        what: `GET customer by id, ${name} (baseline: Fastify + pg, one SELECT by uuid, no auth)`,
        value: round(f.target.rps, 0), unit: 'req/s', baseline: round(f.rps, 0), ratio: round(ratio),
        goal: 'reported (Bulb makes 2 queries: token and customer)',
        command: COMMAND,
        note: `GET by id against the database-backed floor (bench/hello-pg.ts on the same database): latency p99 ${f.target.p99} ms vs ${f.p99} ms; shows how much of the gap to the hello-world baseline is the database's.`,
      });
    } finally {
      await floor.stop();
    }
  }
  if (!cached) await pair('GET list page of 50', { url: base, path: `/api/${V}/crm/customers?limit=50` }, { url: hello.url, path: '/list' }, undefined);

  const run = randomUUID().slice(0, 8);
  const body = JSON.stringify(customerBody(`bench-${run}-0`));
  const before = (await api(receiver.url, 'GET', '/count')).body.received as number;
  await pair(
    subs ? 'POST create, 3 webhook subscriptions' : 'POST create (no webhook subscriptions: API absent)',
    { url: base, method: 'POST', make: (n) => ({ path: `/api/${V}/crm/customers`, body: JSON.stringify(customerBody(`bench-${run}-${n}`)) }) },
    { url: hello.url, method: 'POST', path: '/create', body },
    backend === 'pg' ? 0.25 : undefined,
    async () => (subs ? `; the in-process worker (role all) delivered ${await receiverCountAfter(receiver, before)} webhooks by the end of the run` : ''),
  );
  return rows;
}

/** `rounds` alternations of baseline then target, `seconds` in all for each; request rates from the totals. */
async function interleaved(baseline: Omit<LoadOptions, 'seconds'>, target: Omit<LoadOptions, 'seconds'>, seconds: number): Promise<LoadResult & { target: LoadResult }> {
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
