// Webhook replay bench (issue 26 item 2; PostgreSQL): a replay of 1,000,000 events (--quick: 100,000) queued by a
// running Bulb (role all: API, dispatcher, replay worker) against the floor, one INSERT … SELECT FROM events writing
// the same rows into webhook_deliveries, while live deliveries to another subscription go on; their latency is
// measured at a receiver in this process (arrival − the event's createdAt). `npm run bench -- --only replay`.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { api, createPgDatabase, log, pgAvailable, ratioGoal, round, startBulb, startReceiver, type Child, type Row } from './lib.ts';

const V26 = '/api/2026-11';

/** A receiver that records how late each delivery arrives (ms after its event's createdAt). */
async function latencyReceiver() {
  const lat: number[] = [];
  let recording = false;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (recording) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        lat.push(Date.now() - Date.parse(body.createdAt));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/live`,
    start: () => { lat.length = 0; recording = true; },
    stop: () => { recording = false; return [...lat]; },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

export async function runReplayBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed for the replay bench');
  const n = opts.quick ? 100_000 : 1_000_000;
  const cmd = `npm run bench -- --only replay${opts.quick ? ' --quick' : ''}`;
  const db = await createPgDatabase('replay');
  const c = new pg.Client({ connectionString: db.url });
  let bulb: Child | undefined;
  let sink: Child | undefined;
  const live = await latencyReceiver();
  let liveTimer: NodeJS.Timeout | undefined;
  try {
    bulb = await startBulb({ databaseUrl: db.url, role: 'all' });
    sink = await startReceiver();
    await c.connect();
    const base = `http://127.0.0.1:${bulb.port}`;
    log(`replay: seeding ${n} customerCreate events of the last hour`);
    await c.query(
      `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
       SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'rp-' || g, 'TULIP_API', now() - interval '1 hour' + g * (interval '50 minutes' / $1)
       FROM generate_series(1, $1) g`,
      [n],
    );
    await c.query('VACUUM ANALYZE events');
    const since = new Date(Date.now() - 2 * 3600_000).toISOString();

    // The floor: the same rows by one statement, into an inactive subscription (its deliveries wait).
    const floorSub = await api(base, 'POST', `${V26}/integrations/webhooks/subscriptions`, { url: `http://127.0.0.1:${sink.port}/floor`, eventTypes: ['customerCreate'], isActive: false });
    const t0 = performance.now();
    const f = await c.query(
      `INSERT INTO webhook_deliveries (event_id, subscription_id, next_attempt_at)
       SELECT e.id, s.id, NULL FROM events e, webhook_subscriptions s
       WHERE s.uuid = $1 AND e.event_type = 'customerCreate' AND e.created_at >= $2 ORDER BY e.id`,
      [floorSub.body.uuid, since],
    );
    const floorRate = f.rowCount! / ((performance.now() - t0) / 1000);
    log(`replay: floor ${f.rowCount} rows at ${Math.round(floorRate)}/s`);
    await c.query('VACUUM ANALYZE webhook_deliveries');

    // Live traffic: customers created at ~20/s through the API, delivered to the live subscription (and to the replayed one).
    const liveSub = await api(base, 'POST', `${V26}/integrations/webhooks/subscriptions`, { url: live.url, eventTypes: ['customerCreate'] });
    const replaySub = await api(base, 'POST', `${V26}/integrations/webhooks/subscriptions`, { url: `http://127.0.0.1:${sink.port}/replayed`, eventTypes: ['customerCreate'] });
    if (liveSub.status !== 201 || replaySub.status !== 201) throw new Error(`subscriptions: ${liveSub.status} ${replaySub.status}`);
    let k = 0;
    liveTimer = setInterval(() => void api(base, 'POST', `${V26}/crm/customers`, { externalId: `live-${k++}`, firstName: 'Live' }).catch(() => {}), 50);
    await new Promise((r) => setTimeout(r, 3000)); // warm
    live.start();
    await new Promise((r) => setTimeout(r, 10_000));
    const before = live.stop();

    live.start();
    const r = await api(base, 'POST', `${V26}/integrations/webhooks/subscriptions/${replaySub.body.uuid}/replay`, { since });
    if (r.status !== 202) throw new Error(`replay: ${r.status} ${JSON.stringify(r.body)}`);
    let g = r.body;
    while (g.status === 'queued' || g.status === 'running') {
      await new Promise((res) => setTimeout(res, 250));
      g = (await api(base, 'GET', `${V26}/integrations/webhooks/replays/${r.body.uuid}`)).body;
    }
    const during = live.stop();
    const secs = (Date.parse(g.finishedAt) - Date.parse(g.startedAt)) / 1000;
    const rate = g.eventsQueued / secs;
    log(`replay: ${g.status}, ${g.eventsQueued} queued in ${secs.toFixed(1)} s (${Math.round(rate)}/s); live p99 ${pct(during, 99)} ms over ${during.length} deliveries (before: ${pct(before, 99)} ms)`);
    const p99 = pct(during, 99);
    return [
      {
        what: `replay of ${n.toLocaleString('en-US')} events: deliveries queued per second (chunks of 10,000 event ids, one INSERT … SELECT each)`,
        value: Math.round(rate), unit: 'rows/s', baseline: Math.round(floorRate), ratio: round(rate / floorRate),
        goal: ratioGoal(rate / floorRate, 0.5), command: cmd,
        note: `floor: one INSERT … SELECT FROM events of the same ${f.rowCount} rows into webhook_deliveries (no chunks, no API), measured first in the same database; the replay ran in a Bulb of role all (API, dispatcher delivering the replayed subscription's deliveries to a receiver meanwhile, replay worker), status ${g.status}`,
      },
      {
        what: `live delivery latency (p99) to another subscription while the replay queues (p50 ${pct(during, 50)} ms, ${during.length} deliveries at ~20/s)`,
        value: p99, unit: 'ms', baseline: pct(before, 99), ratio: null,
        goal: p99 <= 100 ? '≤ 100 ms: met' : `≤ 100 ms: missed`, command: cmd,
        note: 'latency: arrival at the receiver − the event\'s createdAt; baseline: the same live load for 10 s before the replay',
      },
    ];
  } finally {
    if (liveTimer) clearInterval(liveTimer);
    await c.end().catch(() => {});
    await bulb?.stop().catch(() => {});
    await sink?.stop().catch(() => {});
    await live.close();
    await db.drop().catch(() => {});
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runReplayBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(rows, null, 2));
  process.exit(0);
}
