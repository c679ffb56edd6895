// Webhook delivery benchmark, PostgreSQL and PGlite:
//  1. throughput: N deliveries queued, then drained by the real Dispatcher (claim, sign, send, record),
//     next to a baseline measured in the same run: raw undici POSTs of the same body to the same receiver
//     at the same concurrency (the per-subscription in-flight cap);
//  2. latency: events committed one per transaction at 200 events/s; time from commit acknowledged to
//     the request arriving at the receiver (p50, p99).
// Run: node --import tsx bench/webhooks.ts [--quick]   (writes the "Webhook delivery" section of BENCHMARKS.md)
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import type { Db } from '../src/db/db.ts';
import { PgDb } from '../src/db/pg.ts';
import { PgliteDb } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import { loadConfig } from '../src/config.ts';
import { emitEvents, type NewEvent } from '../src/events/emit.ts';
import { insertSubscription } from '../src/webhooks/store.ts';
import { newSigningSecret } from '../src/webhooks/signing.ts';
import { Dispatcher } from '../src/webhooks/dispatcher.ts';
import { createPgDatabase, pgAvailable, replaceSection, rowsTable, type Row } from './lib.ts';

const COMMAND = 'node --import tsx bench/webhooks.ts';
const CONCURRENCY = 16; // = the default per-subscription in-flight cap

interface Rx {
  url: string;
  count: number;
  onEvent?: (uuid: string, at: number) => void;
  close(): Promise<void>;
}

async function receiver(): Promise<Rx> {
  const rx: Rx = { url: '', count: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      rx.count++;
      if (rx.onEvent) rx.onEvent(JSON.parse(Buffer.concat(chunks).toString()).uuid, at);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  rx.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  rx.close = () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); });
  return rx;
}

const event = (): NewEvent => ({ eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'bench' }, source: 'TULIP_API' });
const config = loadConfig({ BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_LOG_LEVEL: 'silent' });

async function subscribe(db: Db, url: string) {
  return insertSubscription(db, { url, eventTypes: ['customerCreate'], isActive: true, authMethod: 'NONE', bearerToken: null, basicUsername: null, basicPassword: null, webhookVersion: '2022-08' }, newSigningSecret());
}

async function waitCount(rx: Rx, n: number, timeoutMs = 300_000) {
  const end = Date.now() + timeoutMs;
  while (rx.count < n) {
    if (Date.now() > end) throw new Error(`only ${rx.count}/${n} delivered`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Raw undici POSTs of a same-sized signed body, CONCURRENCY at a time, keep-alive: requests/s. */
async function baseline(rx: Rx, n: number): Promise<number> {
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 4000 });
  const body = JSON.stringify({ uuid: crypto.randomUUID(), subscription: crypto.randomUUID(), createdAt: new Date().toISOString(), eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'bench' }, source: 'TULIP_API' });
  const headers = { 'content-type': 'application/json', accept: 'application/json', 'x-tulip-hmac-256': 'x'.repeat(64), 'webhook-signature': 'v1,' + 'x'.repeat(44) };
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next++ < n) {
      const r = await request(rx.url, { method: 'POST', headers, body, dispatcher: agent });
      await r.body.text();
    }
  }));
  const s = (performance.now() - t0) / 1000;
  await agent.close();
  return n / s;
}

/** Queues n deliveries with the dispatcher stopped, then times the drain: deliveries/s. */
async function throughput(db: Db, rx: Rx, n: number): Promise<number> {
  const sub = await subscribe(db, rx.url);
  for (let i = 0; i < n; i += 500) await db.transaction((tx) => emitEvents(tx, Array.from({ length: Math.min(500, n - i) }, event)));
  const start = rx.count;
  const d = new Dispatcher(db, config, { log: () => {} });
  const t0 = performance.now();
  await d.start();
  await waitCount(rx, start + n);
  const s = (performance.now() - t0) / 1000;
  await d.stop();
  await db.query(`UPDATE webhook_subscriptions SET is_active = false WHERE id = $1`, [sub.id]);
  return n / s;
}

/** One event per transaction at `rate`/s for `count` events: commit→receiver latencies in ms. */
async function latency(db: Db, rx: Rx, rate: number, count: number): Promise<number[]> {
  await subscribe(db, rx.url);
  const d = new Dispatcher(db, config, { log: () => {} });
  await d.start();
  const committed = new Map<string, number>();
  const arrived = new Map<string, number>();
  rx.onEvent = (uuid, at) => arrived.set(uuid, at);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const [uuid] = await db.transaction((tx) => emitEvents(tx, [event()]));
    committed.set(uuid, performance.now());
  }
  const end = Date.now() + 30_000;
  while (arrived.size < count && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  rx.onEvent = undefined;
  await d.stop();
  // A NOTIFY can reach the worker before the commit acknowledgement reaches the writer: clamp at 0.
  return [...committed].map(([u, c]) => Math.max(0, (arrived.get(u) ?? Infinity) - c)).sort((a, b) => a - b);
}

const log = (m: string) => console.error(`[webhooks bench] ${m}`);
const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const r2 = (x: number) => Math.round(x * 100) / 100;

export async function runWebhookBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  const n = opts.quick ? 300 : 2000;
  const latCount = opts.quick ? 200 : 1000;
  const rows: Row[] = [];
  const backends: ('pg' | 'pglite')[] = (await pgAvailable()) ? ['pg', 'pglite'] : ['pglite'];
  for (const backend of backends) {
    const label = backend === 'pg' ? 'PostgreSQL' : 'PGlite';
    const pgdb = backend === 'pg' ? await createPgDatabase('webhooks') : undefined;
    const db: Db = pgdb ? new PgDb(pgdb.url, 10) : await PgliteDb.open('memory://');
    const rx = await receiver();
    try {
      await migrate(db);
      await baseline(rx, Math.min(n, 100)); // warm-up
      const base = await baseline(rx, n);
      log(`${label}: baseline ${Math.round(base)}/s`);
      const value = await throughput(db, rx, n);
      log(`${label}: bulb ${Math.round(value)}/s`);
      const ratio = r2(value / base);
      rows.push({
        what: `delivery throughput, ${n} deliveries to one endpoint (${label})`, value: Math.round(value), unit: 'deliveries/s',
        baseline: Math.round(base), ratio, goal: `≥ 0.5 × raw undici POST: ${ratio >= 0.5 ? 'met' : 'missed'}`, command: COMMAND,
        note: `${label}: baseline = raw undici POSTs of a same-sized body to the same in-process receiver, ${CONCURRENCY} at a time (Bulb's per-subscription in-flight cap), keep-alive; Bulb = claim under lease, sign (2 HMACs), send, record attempt + delivery state, in batches.`,
      });
      const lat = await latency(db, rx, 200, latCount);
      const p50 = r2(pct(lat, 50));
      const p99 = r2(pct(lat, 99));
      rows.push({ what: `commit → receiver latency p50 at 200 events/s (${label})`, value: p50, unit: 'ms', baseline: null, ratio: null, goal: `≤ 5 ms: ${p50 <= 5 ? 'met' : 'missed'}`, command: COMMAND });
      rows.push({
        what: `commit → receiver latency p99 at 200 events/s (${label})`, value: p99, unit: 'ms', baseline: null, ratio: null, goal: `≤ 25 ms: ${p99 <= 25 ? 'met' : 'missed'}`, command: COMMAND,
        note: `${label}: ${latCount} events, one transaction each, paced at 200/s; from the commit's acknowledgement to the request's arrival at the receiver (same process, same clock); max ${r2(lat[lat.length - 1])} ms.`,
      });
    } finally {
      await rx.close();
      await db.close();
      await pgdb?.drop();
    }
  }
  return rows;
}

/** Replaces (or appends) the "## Webhook delivery" section of BENCHMARKS.md. */
function writeSection(rows: Row[]) {
  replaceSection('Webhook delivery', [
    `Written by \`${COMMAND}\` on ${new Date().toISOString()}. Bulb's dispatcher, receiver and database in one process (PGlite) or`,
    'with a local PostgreSQL server; the machine is shared, so compare ratios, not absolute figures.',
    '',
    ...rowsTable(rows),
  ]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runWebhookBench({ quick: process.argv.includes('--quick') });
  console.table(rows.map((r) => ({ what: r.what, value: `${r.value} ${r.unit}`, baseline: r.baseline === null ? '—' : `${r.baseline} ${r.unit}`, ratio: r.ratio, goal: r.goal })));
  if (!process.argv.includes('--no-write')) writeSection(rows);
  process.exit(0);
}
