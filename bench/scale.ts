// Scale-out: the same POST create load (3 webhook subscriptions) through 2 API + 2 worker processes on one
// PostgreSQL, compared with 1 API + 1 worker measured in the same run. The load generator splits its
// connections round-robin over the API ports (one autocannon per port, run at the same time).
// Also measures how fast the workers drain the resulting deliveries to a receiver.
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { V, api, createPgDatabase, customerBody, load, log, parseArgs, round, sleep, startBulb, startReceiver, subscribe, type Child, type Row } from './lib.ts';

const COMMAND = 'npm run bench -- --only scale';

interface Figure {
  rps: number;
  deliveriesPerSec: number | undefined;
  drained: boolean;
  errors: number;
}

async function measure(apis: number, workers: number, seconds: number, connections: number): Promise<Figure> {
  const db = await createPgDatabase('scale');
  const procs: Child[] = [];
  let receiver: Child | undefined;
  try {
    receiver = await startReceiver();
    procs.push(await startBulb({ databaseUrl: db.url, role: 'api' })); // migrates
    for (let i = 1; i < apis; i++) procs.push(await startBulb({ databaseUrl: db.url, role: 'api' }));
    const apiProcs = [...procs];
    for (let i = 0; i < workers; i++) procs.push(await startBulb({ databaseUrl: db.url, role: 'worker' }));
    const subs = await subscribe(apiProcs[0].url, `${receiver.url}/hook`, ['customerCreate', 'customerCreate', 'customerCreate']);
    const run = randomUUID().slice(0, 8);
    const make = (n: number) => ({ path: `/api/${V}/crm/customers`, body: JSON.stringify(customerBody(`scale-${run}-${n}`)) });
    // Warm-up (JIT, pools) on every API process, then let the workers catch up.
    await Promise.all(apiProcs.map((p) => load({ url: p.url, method: 'POST', make, seconds: 2, connections: 4 })));
    await waitDrained(db.url, 60_000);
    const before = (await api(receiver.url, 'GET', '/count')).body.received as number;
    const t0 = Date.now();
    const per = Math.max(1, Math.floor(connections / apis));
    const results = await Promise.all(apiProcs.map((p) => load({ url: p.url, method: 'POST', make, seconds, connections: per })));
    const rps = results.reduce((a, r) => a + r.rps, 0);
    const created = results.reduce((a, r) => a + r.total - r.non2xx, 0);
    let deliveriesPerSec: number | undefined;
    let drained = false;
    if (subs) {
      const want = created * subs.length;
      const until = Date.now() + 120_000;
      let got = 0;
      while (Date.now() < until) {
        got = ((await api(receiver.url, 'GET', '/count')).body.received as number) - before;
        if (got >= want) break;
        await sleep(250);
      }
      drained = got >= want;
      deliveriesPerSec = got / ((Date.now() - t0) / 1000);
    }
    return { rps, deliveriesPerSec, drained, errors: results.reduce((a, r) => a + r.errors + r.non2xx, 0) };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await receiver?.stop();
    await db.drop();
  }
}

/** Waits until no delivery is pending (or the time is up). */
async function waitDrained(url: string, ms: number) {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const r = await c.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`).catch(() => ({ rows: [{ n: '0' }] }));
      if (Number(r.rows[0].n) === 0) return;
      await sleep(250);
    }
  } finally {
    await c.end();
  }
}

export async function runScaleBench(o: { quick: boolean }): Promise<Row[]> {
  const seconds = o.quick ? 4 : 10;
  const connections = 16;
  log('scale: 1 API + 1 worker');
  const one = await measure(1, 1, seconds, connections);
  log(`scale: 1+1: ${round(one.rps, 0)} req/s, ${one.deliveriesPerSec === undefined ? '—' : round(one.deliveriesPerSec, 0)} deliveries/s`);
  log('scale: 2 API + 2 workers');
  const two = await measure(2, 2, seconds, connections);
  log(`scale: 2+2: ${round(two.rps, 0)} req/s, ${two.deliveriesPerSec === undefined ? '—' : round(two.deliveriesPerSec, 0)} deliveries/s`);
  const cores = os.cpus().length;
  const why = cores <= 2
    ? `this machine has ${cores} cores shared by PostgreSQL, every Bulb process, the receiver and the load generator, so a second API process has no idle core to use: the figure shows the cost of the extra processes, not the gain on a bigger machine`
    : 'reported';
  const rows: Row[] = [
    {
      what: 'POST create (3 subscriptions), 2 API + 2 worker processes (baseline: 1 + 1)',
      value: round(two.rps, 0), unit: 'req/s', baseline: round(one.rps, 0), ratio: round(two.rps / one.rps),
      goal: two.rps >= one.rps ? 'more than 1 + 1: met' : `more than 1 + 1: missed (${round((1 - two.rps / one.rps) * 100, 0)}% less)`,
      command: COMMAND,
      note: `Scale-out: ${connections} connections split over the API ports, ${seconds} s; errors/non-2xx: ${two.errors} (2+2), ${one.errors} (1+1). ${why}.`,
    },
  ];
  if (one.deliveriesPerSec !== undefined && two.deliveriesPerSec !== undefined) {
    rows.push({
      what: 'webhook deliveries drained, 2 workers (baseline: 1 worker)',
      value: round(two.deliveriesPerSec, 0), unit: 'deliveries/s', baseline: round(one.deliveriesPerSec, 0), ratio: round(two.deliveriesPerSec / one.deliveriesPerSec),
      goal: `every delivery made: ${one.drained && two.drained ? 'met' : 'missed (not drained within 120 s)'}`,
      command: COMMAND,
      note: 'Deliveries per second from the start of the load until the receiver had every delivery of the events created in it (3 per create).',
    });
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runScaleBench({ quick: parseArgs().quick });
  console.log(JSON.stringify(rows, null, 2));
  process.exit(0);
}
