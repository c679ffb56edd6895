// Fault injection (`npm run chaos [-- --seconds N]`, loopback only, PostgreSQL): a sustained mixed load
// (creates, updates, orders, merges) through two API processes, two webhook workers delivering to
// receivers that fail, hang and recover, while processes are SIGKILLed and restarted at random and the
// database connections are cut (pg_terminate_backend). Then it lets retries drain and checks: every event
// delivered to every subscription (at the receivers), no row lost or duplicated, the 5xx answered, the
// largest duplicate count of one event at a receiver. Exits non-zero if anything is lost.
import http from 'node:http';
import pg from 'pg';
import { api, createPgDatabase, freePort, log, parseArgs, sleep, startBulb, subscribe, type Child, type Row } from './lib.ts';
import { MixedLoad } from './mixed.ts';

export interface ChaosOptions {
  seconds: number;
  /** How long to wait for retries to deliver everything after the load stops. */
  drainSeconds?: number;
  /** Faults to inject (all by default). */
  kill?: boolean;
  cutDb?: boolean;
  receiverFaults?: boolean;
}

export interface ChaosResult {
  ok: boolean;
  report: string[];
  eventsExpected: number; // (event, subscription) pairs
  eventsDelivered: number;
  eventsLost: number;
  maxDuplicates: number;
  webhooks: boolean;
  customersAcked: number;
  customersLost: number;
  customersWithoutEvent: number;
  ordersAcked: number;
  ordersUnknown: number;
  ordersInDb: number;
  ordersLost: number;
  ordersDuplicated: number;
  ordersLeftOnMergedAway: number;
  fiveXX: number;
  kills: number;
  dbCuts: number;
  receiverFlips: number;
  requests: number;
}

// About a minute of retries: longer than any receiver fault below (at most 8 s), so that every event is
// delivered in the end. A receiver down for longer than the whole schedule gives a `failed` delivery, which
// is the product working as specified, not a loss.
const RETRY = ['0.1', '0.2', '0.5', ...Array(60).fill('1')].join(',');
const MAX_FAULT_MS = 8000;
const EVENT_TYPES = ['customerCreate', 'customerUpdate', 'customerMerge'];
type Mode = 'ok' | 'fail' | 'hang';

/** A webhook receiver whose behaviour can be switched: answer 200, answer 500, or never answer. */
class Receiver {
  mode: Mode = 'ok';
  /** "subscription event" → number of 2xx answers given. */
  readonly delivered = new Map<string, number>();
  received = 0;
  private server: http.Server;
  private hanging = new Set<http.ServerResponse>();
  port = 0;

  constructor(readonly name: string) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.received++;
        if (this.mode === 'fail') return void res.writeHead(500).end('failing on purpose');
        if (this.mode === 'hang') {
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          return;
        }
        try {
          const ev = JSON.parse(Buffer.concat(chunks).toString());
          const k = `${ev.subscription} ${ev.uuid}`;
          this.delivered.set(k, (this.delivered.get(k) ?? 0) + 1);
        } catch {
          /* not an event: still 200 */
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    this.server.keepAliveTimeout = 5_000;
  }

  async listen() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as import('node:net').AddressInfo).port;
  }

  private recover: NodeJS.Timeout | undefined;

  /** Switches behaviour; a fault ends by itself after at most MAX_FAULT_MS. */
  set(mode: Mode) {
    this.mode = mode;
    clearTimeout(this.recover);
    if (mode !== 'hang') for (const res of this.hanging) res.destroy();
    if (mode !== 'ok') this.recover = setTimeout(() => this.set('ok'), 1000 + Math.random() * (MAX_FAULT_MS - 1000));
  }

  async close() {
    clearTimeout(this.recover);
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

interface Proc {
  name: string;
  role: 'api' | 'worker';
  port: number;
  child?: Child;
}

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const report: string[] = [];
  const say = (s: string) => {
    report.push(s);
    log(`chaos: ${s}`);
  };
  const db = await createPgDatabase('chaos');
  const receivers = [new Receiver('steady'), new Receiver('flaky'), new Receiver('hanging')];
  const procs: Proc[] = [
    { name: 'api1', role: 'api', port: await freePort() },
    { name: 'api2', role: 'api', port: await freePort() },
    { name: 'worker1', role: 'worker', port: 0 },
    { name: 'worker2', role: 'worker', port: 0 },
  ];
  const env = { BULB_WEBHOOK_RETRY_SCHEDULE: RETRY, BULB_WEBHOOK_TIMEOUT_MS: '1000' };
  const start = async (p: Proc) => {
    for (let i = 1; ; i++) {
      try {
        p.child = await startBulb({ databaseUrl: db.url, role: p.role, port: p.port, env });
        return;
      } catch (err) {
        // A start can fail while the database connections are being cut: try again (bounded).
        if (i >= 5) throw err;
        await sleep(300);
      }
    }
  };
  const admin = new pg.Client({ connectionString: db.url });
  let load: MixedLoad | undefined;
  let chaosTimer: Promise<void> | undefined;
  const counters = { kills: 0, dbCuts: 0, flips: 0 };
  const restarting = new Map<Proc, Promise<void>>();
  try {
    for (const r of receivers) await r.listen();
    await start(procs[0]); // migrates the database
    await Promise.all(procs.slice(1).map(start));
    await admin.connect();
    const base = procs[0].child!.url;

    // Subscriptions: every receiver gets every event type we cause.
    const subs = new Map<string, string[]>(); // eventType → subscription uuids
    let webhooks = true;
    for (const r of receivers) {
      const uuids = await subscribe(base, `http://127.0.0.1:${r.port}/hook/${r.name}`, EVENT_TYPES);
      if (!uuids) {
        webhooks = false;
        break;
      }
      uuids.forEach((u, i) => subs.set(EVENT_TYPES[i], [...(subs.get(EVENT_TYPES[i]) ?? []), u]));
    }
    if (!webhooks) say('webhook subscriptions API absent: webhook delivery is not checked');

    // Which features exist (they land during development).
    const probe = await api(base, 'POST', '/crm/customers', { externalId: 'chaos-probe-1' });
    await api(base, 'POST', '/crm/customers', { externalId: 'chaos-probe-2' });
    const orderProbe = await api(base, 'POST', '/crm/customers/chaos-probe-1/orders', { externalId: 'chaos-probe-order', orderedAt: new Date().toISOString(), currency: 'EUR', total: '1.00' });
    const mergeProbe = await api(base, 'POST', '/crm/customers/chaos-probe-1/merge?dryRun=true', { mergeWithCustomerIds: ['chaos-probe-2'] });
    const features = { orders: orderProbe.status === 201, merges: mergeProbe.status === 200 };
    if (probe.status !== 201) throw new Error(`cannot create a customer: ${probe.status}`);
    say(`features: orders ${features.orders ? 'yes' : `no (${orderProbe.status})`}, merges ${features.merges ? 'yes' : `no (${mergeProbe.status})`}, webhooks ${webhooks ? 'yes' : 'no'}`);

    // Load and faults, both bounded by the deadline.
    const deadline = Date.now() + o.seconds * 1000;
    load = new MixedLoad({ targets: procs.filter((p) => p.role === 'api').map((p) => `http://127.0.0.1:${p.port}`), features, prefix: 'chaos', concurrency: 8, timeoutMs: 10_000 });
    load.createdAcked.add('chaos-probe-1').add('chaos-probe-2');
    if (features.orders) load.orders.set('chaos-probe-order', 'acked');
    load.start(deadline);
    chaosTimer = (async () => {
      for (let i = 0; i < 100_000 && Date.now() < deadline - 2000; i++) {
        await sleep(1500 + Math.random() * 2500);
        const r = Math.random();
        if (r < 0.4 && o.kill !== false) {
          const p = procs[Math.floor(Math.random() * procs.length)];
          if (!p.child || restarting.has(p)) continue;
          counters.kills++;
          const dead = p.child;
          p.child = undefined;
          // SIGKILL: no drain; its claims and open transactions die with it. Restarted in the background
          // (a start takes seconds) so that the faults keep coming meanwhile.
          const again = (async () => {
            await dead.kill();
            await sleep(200 + Math.random() * 1500);
            await start(p);
          })().finally(() => restarting.delete(p));
          restarting.set(p, again);
        } else if (r < 0.7 && o.cutDb !== false) {
          counters.dbCuts++;
          await admin.query('SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]).catch(() => {});
        } else if (o.receiverFaults !== false) {
          counters.flips++;
          receivers[1].set(receivers[1].mode === 'ok' ? 'fail' : 'ok');
          receivers[2].set(Math.random() < 0.5 ? 'hang' : 'ok');
        }
      }
    })();
    await chaosTimer;
    chaosTimer = undefined;
    await Promise.all(restarting.values());
    await load.stop();
    say(`load: ${load.stats.requests} requests over ${o.seconds} s (${load.stats.creates} creates, ${load.stats.updates} updates, ${load.stats.orders} orders, ${load.stats.merges} merges acknowledged); ` +
      `faults: ${counters.kills} SIGKILLs, ${counters.dbCuts} connection cuts, ${counters.flips} receiver flips; statuses ${JSON.stringify(load.stats.byStatus)}, ${load.stats.connectionErrors} connection errors`);

    // Recovery: receivers healthy, every process up; then wait for the retries.
    for (const r of receivers) r.set('ok');
    for (const p of procs) if (!p.child || p.child.proc.exitCode !== null || p.child.proc.signalCode !== null) await start(p);

    // ---- webhook deliveries
    let expected: [string, string][] = [];
    let delivered = 0;
    let maxDup = 0;
    let lost = 0;
    if (webhooks) {
      const events = (await admin.query<{ uuid: string; event_type: string }>('SELECT uuid, event_type FROM events')).rows;
      expected = events.flatMap((e) => (subs.get(e.event_type) ?? []).map((s) => [s, e.uuid] as [string, string]));
      const count = () => expected.filter(([s, e]) => receivers.some((r) => r.delivered.has(`${s} ${e}`))).length;
      const drainUntil = Date.now() + (o.drainSeconds ?? 90) * 1000;
      while (Date.now() < drainUntil && count() < expected.length) await sleep(500);
      delivered = count();
      lost = expected.length - delivered;
      for (const r of receivers) for (const n of r.delivered.values()) maxDup = Math.max(maxDup, n);
      const st = (await admin.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status ORDER BY status').catch(() => ({ rows: [] as any[] }))).rows;
      say(`webhooks: ${events.length} events, ${expected.length} (event, subscription) pairs expected, ${delivered} delivered at the receivers, ${lost} lost; ` +
        `largest number of 2xx deliveries of one event to one subscription: ${maxDup}; delivery rows by status: ${st.map((x) => `${x.status} ${x.n}`).join(', ')}`);
      if (maxDup > 2) {
        // Explain the worst duplicate from the database: how many attempts were recorded for it.
        let worst = '';
        for (const r of receivers) for (const [k, n] of r.delivered) if (n === maxDup && !worst) worst = k;
        const [sub, ev] = worst.split(' ');
        const d = (await admin.query(
          `SELECT d.status, d.attempt_count, (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempts,
                  (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.outcome = 'success') AS successes,
                  (SELECT string_agg(coalesce(a.error_code, 'none') || ' ' || a.duration_ms || ' ms', ', ' ORDER BY a.attempt_number)
                     FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.outcome = 'failure') AS failures
             FROM webhook_deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_subscriptions s ON s.id = d.subscription_id
            WHERE e.uuid = $1 AND s.uuid = $2`, [ev, sub]).catch(() => ({ rows: [] as any[] }))).rows[0];
        if (d) say(`worst duplicate: event ${ev} → subscription ${sub}: ${maxDup} 2xx at the receiver; the database recorded ${d.attempts} attempts (${d.successes} successful), attempt_count ${d.attempt_count}, status ${d.status}; failed attempts: ${d.failures ?? 'none'}`);
      }
      if (lost > 0) {
        const missing = expected.filter(([s, e]) => !receivers.some((r) => r.delivered.has(`${s} ${e}`))).slice(0, 5);
        say(`first lost pairs (subscription event): ${missing.map((m) => m.join(' ')).join('; ')}`);
      }
    }

    // ---- rows
    const custRows = (await admin.query<{ external_id: string }>('SELECT external_id FROM customers')).rows;
    const inDb = new Set(custRows.map((r) => r.external_id));
    const customersLost = [...load.createdAcked].filter((x) => !inDb.has(x)).length;
    const creates = Number((await admin.query(`SELECT count(*) AS n FROM events WHERE event_type = 'customerCreate'`)).rows[0].n);
    const customersWithoutEvent = Math.max(0, custRows.length - creates);
    say(`customers: ${load.createdAcked.size} acknowledged, ${custRows.length} in the database, ${customersLost} acknowledged but missing; ${creates} customerCreate events (${customersWithoutEvent} customers without their event)`);

    let ordersInDb = 0, ordersLost = 0, ordersDup = 0, leftOnMerged = 0, ordersUnknown = 0, ordersAcked = 0;
    if (features.orders) {
      const rows = (await admin.query<{ external_id: string; n: string; disabled: string }>(
        `SELECT o.external_id, count(*) AS n, count(*) FILTER (WHERE c.status = 'disabled') AS disabled
           FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY o.external_id`)).rows;
      const byId = new Map(rows.map((r) => [r.external_id, r]));
      ordersInDb = rows.reduce((a, r) => a + Number(r.n), 0);
      ordersDup = rows.filter((r) => Number(r.n) > 1).length;
      leftOnMerged = rows.reduce((a, r) => a + Number(r.disabled), 0);
      const unexpected = rows.filter((r) => !load!.orders.has(r.external_id)).length;
      for (const [id, st] of load.orders) {
        if (st === 'acked') {
          ordersAcked++;
          if (!byId.has(id)) ordersLost++;
        } else ordersUnknown++;
      }
      say(`orders: ${ordersAcked} acknowledged, ${ordersUnknown} with an unknown outcome (connection lost or 5xx), ${ordersInDb} rows in the database; ` +
        `${ordersLost} acknowledged but missing, ${ordersDup} duplicated, ${unexpected} never sent, ${leftOnMerged} left on a merged-away customer`);
      ordersLost += unexpected;
    }
    say(`5xx answered: ${load.stats.fiveXX}${load.stats.fiveXXSamples.length ? ` (e.g. ${load.stats.fiveXXSamples.join(' | ')})` : ''}`);

    const ok = lost === 0 && customersLost === 0 && customersWithoutEvent === 0 && ordersLost === 0 && ordersDup === 0 && leftOnMerged === 0;
    say(ok ? 'RESULT: nothing lost' : 'RESULT: LOST OR DUPLICATED DATA');
    return {
      ok, report, webhooks,
      eventsExpected: expected.length, eventsDelivered: delivered, eventsLost: lost, maxDuplicates: maxDup,
      customersAcked: load.createdAcked.size, customersLost, customersWithoutEvent,
      ordersAcked, ordersUnknown, ordersInDb, ordersLost, ordersDuplicated: ordersDup, ordersLeftOnMergedAway: leftOnMerged,
      fiveXX: load.stats.fiveXX, kills: counters.kills, dbCuts: counters.dbCuts, receiverFlips: counters.flips, requests: load.stats.requests,
    };
  } finally {
    await load?.stop().catch(() => {});
    await chaosTimer?.catch(() => {});
    await Promise.allSettled(restarting.values());
    await Promise.all(procs.map((p) => p.child?.stop(5000)));
    await admin.end().catch(() => {});
    for (const r of receivers) await r.close();
    await db.drop().catch((err) => log('could not drop the chaos database', err));
  }
}

/** The chaos run as BENCHMARKS.md rows. */
export function chaosRows(r: ChaosResult, seconds: number): Row[] {
  const command = `npm run chaos -- --seconds ${seconds}`;
  const zero = (n: number) => (n === 0 ? '0: met' : `0: missed (${n})`);
  const rows: Row[] = [];
  if (r.webhooks) {
    rows.push(
      { what: 'webhook (event, subscription) pairs delivered / expected', value: r.eventsDelivered, unit: '', baseline: r.eventsExpected, ratio: r.eventsExpected ? Math.round((r.eventsDelivered / r.eventsExpected) * 1000) / 1000 : null, goal: r.eventsLost === 0 ? 'all delivered: met' : `all delivered: missed (${r.eventsLost} lost)`, command },
      { what: 'largest number of deliveries of one event to one subscription', value: r.maxDuplicates, unit: '', baseline: null, ratio: null, goal: 'reported (at-least-once: > 1 is allowed)', command },
    );
  } else {
    rows.push({ what: 'webhook delivery under faults', value: 'not measured', unit: '', baseline: null, ratio: null, goal: 'subscriptions API absent when measured', command });
  }
  rows.push(
    { what: 'customers acknowledged but lost', value: r.customersLost, unit: '', baseline: r.customersAcked, ratio: null, goal: zero(r.customersLost), command },
    { what: 'customers without their customerCreate event', value: r.customersWithoutEvent, unit: '', baseline: null, ratio: null, goal: zero(r.customersWithoutEvent), command },
    { what: 'orders lost, duplicated or left on a merged-away customer', value: r.ordersLost + r.ordersDuplicated + r.ordersLeftOnMergedAway, unit: '', baseline: r.ordersAcked, ratio: null, goal: zero(r.ordersLost + r.ordersDuplicated + r.ordersLeftOnMergedAway), command },
    { what: '5xx answered under faults', value: r.fiveXX, unit: '', baseline: r.requests, ratio: null, goal: 'reported (a request whose database connection is cut mid-way may answer 500)', command },
  );
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = parseArgs();
  const seconds = args.seconds ?? (args.quick ? 30 : 120);
  const r = await runChaos({ seconds });
  console.log(r.report.join('\n'));
  process.exit(r.ok ? 0 : 1);
}
