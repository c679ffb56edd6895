// Broker destinations (docs/destinations.md; issue 27, goal ≥ 0.5 × direct): N deliveries queued on PostgreSQL for
// one subscription whose URL is the machine's RabbitMQ (an exchange with a bound queue) or NATS JetStream (a stream's
// subject), drained by one worker process (BULB_ROLE=worker), against the broker's own client publishing the same
// bodies and headers directly from this process, with the same acknowledgement (publisher confirms; JetStream acks),
// in the same run: as many at a time as a broker lane of the default maxInFlight keeps (16 × BROKER_PIPELINE = 64),
// the goal's baseline, and as many as the default maxInFlight (16), shown beside it. Each rate is counted at the broker's side: a
// consumer of the bound queue, a core NATS subscriber of the subject (which sees every publish the stream stores),
// from the first arrival to the last. Beside them, the peer a user would pick instead: a BullMQ worker on the local
// Redis, as many at a time as the lane, signing each job's event and publishing it to the same broker with the same
// client and acknowledgement (bench/webhook-peers.ts), from a backlog written first, as Bulb's is.
// `npm run bench -- --only brokers [--quick]`, or `node --import tsx bench/brokers.ts [--quick]`.
import crypto from 'node:crypto';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect, headers as natsHeaders } from 'nats';
import { PgDb } from '../src/db/pg.ts';
import { migrate } from '../src/db/migrate.ts';
import { emitEvents } from '../src/events/emit.ts';
import { buildRequest } from '../src/webhooks/request.ts';
import type { Claimed } from '../src/webhooks/claimed.ts';
import { newSigningSecret } from '../src/webhooks/signing.ts';
import { BROKER_PIPELINE } from '../src/webhooks/lanes.ts';
import { createPgDatabase, log, pgAvailable, ratioGoal, round, spawnNode, type Row } from './lib.ts';
import { backendCpu, bulbWorker, cpuMs, event, redisUp, serverPid, subscribe, withBullBacklog } from './webhooks.ts';

const AMQP = 'amqp://guest:guest@127.0.0.1:5672';
const NATS = '127.0.0.1:4222';
/** The default maxInFlight (16), and what a broker lane of it keeps in flight (lanes.ts): the direct publishers' counts. */
const MAX_IN_FLIGHT = 16;
const IN_FLIGHT = MAX_IN_FLIGHT * BROKER_PIPELINE;
const GOAL = 0.5;
const COMMAND = 'npm run bench -- --only brokers';

/** Arrival times (performance.now()) at the broker's side. */
interface Arrivals {
  at: number[];
  close(): Promise<void>;
}

/** Deliveries per second from the first arrival to the last. */
const rateOf = (at: number[]) => (at.length - 1) / ((at[at.length - 1] - at[0]) / 1000);

async function waitArrivals(a: Arrivals, n: number, timeoutMs = 600_000): Promise<number> {
  const end = Date.now() + timeoutMs;
  while (a.at.length < n) {
    if (Date.now() > end) throw new Error(`only ${a.at.length}/${n} arrived`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return rateOf(a.at.slice(0, n));
}

/** A same-sized signed body and its headers, as a delivery carries them. */
function sample(): { body: string; headers: Record<string, string> } {
  const e = event();
  const c = {
    event_uuid: crypto.randomUUID(), subscription_uuid: crypto.randomUUID(), event_created_at: new Date().toISOString(), event_type: e.eventType,
    resource_type: e.resourceType, resource_uuid: e.resource.uuid, resource_external_id: e.resource.externalId, source: e.source,
    signing_secret: newSigningSecret(), previous_secrets: [], webhook_version: '2022-08', auth_method: 'NONE',
  } as unknown as Claimed;
  const r = buildRequest(c, 'X-Tulip-Hmac-256');
  return { body: r.body, headers: r.headers };
}

/** `n` publishes, `inFlight` at a time, each awaited (a confirm, an ack). */
async function directly(n: number, inFlight: number, publish: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < n) await publish(next++);
  }));
}

/** CPU (ms) per delivery of each process taking part in a drain, by role. */
type CpuShare = Record<string, number>;

/** This process's CPU (ms) so far: the direct client's publishing and every consumer's counting. */
function selfMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Runs `work`; the CPU per delivery it cost this process (as `self`) and the broker's server process (`comm`). */
async function withCpu<T>(comm: string, n: number, self: string, work: () => Promise<T>): Promise<{ result: T; cpu: CpuShare }> {
  const broker = serverPid(comm);
  const b0 = broker ? cpuMs(broker) : NaN;
  const s0 = selfMs();
  const result = await work();
  return { result, cpu: { [self]: (selfMs() - s0) / n, broker: broker ? (cpuMs(broker) - b0) / n : NaN } };
}

const total = (c: CpuShare) => Object.values(c).reduce((a, b) => a + b, 0);
const shares = (c: CpuShare) => Object.entries(c).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(' + ');

/**
 * Bulb's drain of `n` queued deliveries to `url` by one worker process, counted by `arrivals`, and the CPU per
 * delivery of the worker and its PostgreSQL backends (from the worker being ready to the last arrival).
 */
async function bulbDrain(url: string, n: number, arrivals: Arrivals, comm: string): Promise<{ rate: number; cpu: CpuShare }> {
  const pgdb = await createPgDatabase('brokers');
  const db = new PgDb(pgdb.url, 4);
  try {
    await migrate(db);
    await subscribe(db, url);
    for (let i = 0; i < n; i += 500) await db.transaction((tx) => emitEvents(tx, Array.from({ length: Math.min(500, n - i) }, event)));
    // BENCH_BROKERS_EXPLAIN: every statement of the drain with its plan in the server log (auto_explain).
    if (process.env.BENCH_BROKERS_EXPLAIN) {
      await db.query(`ALTER DATABASE ${pgdb.name} SET session_preload_libraries = 'auto_explain'`);
      await db.query(`ALTER DATABASE ${pgdb.name} SET auto_explain.log_min_duration = 0`);
      await db.query(`ALTER DATABASE ${pgdb.name} SET auto_explain.log_nested_statements = on`);
    }
    const from = arrivals.at.length;
    // BENCH_CPU_PROF=dir: a .cpuprofile of the draining worker (bench/profile-summary.ts summarises it).
    const w = await bulbWorker(pgdb.url, {}, process.env.BENCH_CPU_PROF);
    const w0 = cpuMs(w.pid);
    const pg0 = await backendCpu(db, pgdb.name);
    try {
      const { cpu: others } = await withCpu(comm, n, 'consumer', () => waitArrivals(arrivals, from + n));
      const pg1 = await backendCpu(db, pgdb.name);
      let pg = 0;
      for (const [pid, t] of pg1) pg += t - (pg0.get(pid) ?? 0);
      if (process.env.BENCH_BROKERS_STATS) {
        await new Promise((r) => setTimeout(r, 700)); // the statistics collector's flush
        const st = await db.query(`SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname LIKE 'webhook_%' AND n_tup_ins + n_tup_upd > 0 ORDER BY relname`);
        for (const r of st.rows) log(JSON.stringify(r));
      }
      return { rate: rateOf(arrivals.at.slice(from, from + n)), cpu: { worker: (cpuMs(w.pid) - w0) / n, postgres: pg / n, ...others } };
    } finally {
      await w.stop();
    }
  } finally {
    await db.close();
    await pgdb.drop();
  }
}

/**
 * The same backlog of `n` events drained by a BullMQ worker process (`mode`: bullmq-amqp or bullmq-nats, publishing to
 * `target`, IN_FLIGHT jobs at a time), counted by `arrivals`; the CPU per delivery of the worker, Redis, the consumer and
 * the broker, as bulbDrain counts Bulb's.
 */
function bullmqDrain(mode: string, target: string, n: number, arrivals: Arrivals, comm: string): Promise<{ rate: number; cpu: CpuShare }> {
  return withBullBacklog(n, async (name) => {
    const from = arrivals.at.length;
    const redis = serverPid('redis-server');
    const r0 = redis ? cpuMs(redis) : NaN;
    const w = await spawnNode('bench/webhook-peers.ts', [mode, target, String(IN_FLIGHT), name], {}, /peer ready/);
    const w0 = cpuMs(w.pid);
    try {
      const { cpu: others } = await withCpu(comm, n, 'consumer', () => waitArrivals(arrivals, from + n));
      return { rate: rateOf(arrivals.at.slice(from, from + n)), cpu: { worker: (cpuMs(w.pid) - w0) / n, redis: redis ? (cpuMs(redis) - r0) / n : NaN, ...others } };
    } finally {
      await w.stop();
    }
  });
}

/** The peer's row: Bulb's drain against BullMQ's, the same backlog to the same broker, the CPU of each beside. */
function peerRow(broker: string, n: number, bulb: { rate: number; cpu: CpuShare }, bull: { rate: number; cpu: CpuShare } | undefined): Row {
  const what = `${broker}: drain of ${n} queued deliveries by one worker process, ${IN_FLIGHT} in flight: Bulb (PostgreSQL) vs a BullMQ worker (Redis) publishing with the same client`;
  if (!bull) return { what, value: 'skipped', unit: '', baseline: null, ratio: null, goal: 'skipped: no Redis at 127.0.0.1:6379', command: COMMAND };
  log(`${broker} CPU ms per delivery: BullMQ ${shares(bull.cpu)} = ${total(bull.cpu).toFixed(3)}`);
  const ratio = bulb.rate / bull.rate;
  return {
    what, value: round(bulb.rate, 0), unit: 'deliveries/s', baseline: round(bull.rate, 0), ratio: round(ratio), goal: `≥ 1.0 × BullMQ: ${ratio >= 1 ? 'met' : 'missed'}`, command: COMMAND,
    note: `CPU per delivery: Bulb ${shares(bulb.cpu)} = ${total(bulb.cpu).toFixed(3)} ms; BullMQ ${shares(bull.cpu)} = ${total(bull.cpu).toFixed(3)} ms`,
  };
}

/**
 * The goal's row (the direct publisher as many in flight as the lane), the one against the default maxInFlight, and
 * where the CPU went: per delivery, Bulb's drain against the direct client's at the lane's in-flight count.
 */
function rows(broker: string, what: string, bulb: number, same: number, fewer: number, bulbCpu: CpuShare, directCpu: CpuShare): Row[] {
  log(`${broker} CPU ms per delivery: Bulb ${shares(bulbCpu)} = ${total(bulbCpu).toFixed(3)}; direct ${shares(directCpu)} = ${total(directCpu).toFixed(3)}`);
  const cpuRow: Row = {
    what: `${broker}: CPU per delivery (ms, all processes of the drain), Bulb (${shares(bulbCpu)}) vs the direct client at ${IN_FLIGHT} in flight (${shares(directCpu)})`,
    value: round(total(bulbCpu), 3), unit: 'ms CPU per delivery', baseline: round(total(directCpu), 3), ratio: round(total(bulbCpu) / total(directCpu)),
    goal: 'information: on 2 shared cores the drain is bound by CPU, so its rate ratio follows the inverse of this one', command: COMMAND,
  };
  return [...[[same, IN_FLIGHT, true], [fewer, MAX_IN_FLIGHT, false]].map(([base, inFlight, goal]) => {
    const ratio = bulb / (base as number);
    return {
      what: `${broker}: ${what}, ${inFlight} in flight${goal ? ' (as many as the lane)' : ' (the default maxInFlight; information)'}`,
      value: round(bulb, 0), unit: 'deliveries/s', baseline: round(base as number, 0), ratio: round(ratio),
      goal: goal ? ratioGoal(ratio, GOAL) : '', command: COMMAND,
    };
  }), cpuRow];
}

async function amqpRows(n: number): Promise<Row[]> {
  const conn = await amqpConnect(AMQP);
  try {
    const ch = await conn.createConfirmChannel();
    const exchange = `bulb-bench-${crypto.randomBytes(4).toString('hex')}`;
    await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: true });
    const { queue } = await ch.assertQueue('', { exclusive: true });
    await ch.bindQueue(queue, exchange, '#');
    const arrivals: Arrivals = { at: [], close: async () => {} };
    const rx = await conn.createChannel();
    await rx.consume(queue, () => arrivals.at.push(performance.now()), { noAck: true });
    const s = sample();
    const direct = async (inFlight: number) => {
      arrivals.at.length = 0;
      const { result: rate, cpu } = await withCpu('beam.smp', n, 'client and consumer', async () => {
        await directly(n, inFlight, (i) => new Promise<void>((resolve, reject) => {
          ch.publish(exchange, 'customer.events', Buffer.from(s.body), { mandatory: true, persistent: true, contentType: 'application/json', messageId: `direct-${i}`, headers: s.headers }, (err) => (err ? reject(err) : resolve()));
        }));
        return waitArrivals(arrivals, n);
      });
      log(`amqp direct, ${inFlight} in flight: ${rate.toFixed(0)}/s`);
      arrivals.at.length = 0;
      return { rate, cpu };
    };
    const [direct16, direct64] = [await direct(MAX_IN_FLIGHT), await direct(IN_FLIGHT)];
    const bulb = await bulbDrain(`amqp://127.0.0.1:5672?exchange=${exchange}&routingKey=customer.events`, n, arrivals, 'beam.smp');
    log(`amqp bulb: ${bulb.rate.toFixed(0)}/s`);
    const bull = (await redisUp()) ? await bullmqDrain('bullmq-amqp', exchange, n, arrivals, 'beam.smp') : undefined;
    if (bull) log(`amqp bullmq: ${bull.rate.toFixed(0)}/s`);
    return [...rows('RabbitMQ', `drain of ${n} queued deliveries (publisher confirms) vs amqplib publishing the same bodies directly`, bulb.rate, direct64.rate, direct16.rate,
      bulb.cpu, direct64.cpu), peerRow('RabbitMQ', n, bulb, bull)];
  } finally {
    await conn.close().catch(() => {});
  }
}

async function natsRows(n: number): Promise<Row[]> {
  // No stack captured per request, as Bulb's publisher connects (destinations/nats.ts): the same client configuration.
  const nc = await natsConnect({ servers: NATS, noAsyncTraces: true });
  const tag = crypto.randomBytes(4).toString('hex');
  const stream = `BULB_BENCH_${tag}`;
  const subject = `bulb.bench.${tag}`;
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: stream, subjects: [subject] });
  try {
    const arrivals: Arrivals = { at: [], close: async () => {} };
    nc.subscribe(subject, { callback: () => arrivals.at.push(performance.now()) });
    await nc.flush();
    const js = nc.jetstream();
    const s = sample();
    const direct = async (inFlight: number) => {
      arrivals.at.length = 0;
      const { result: rate, cpu } = await withCpu('nats-server', n, 'client and consumer', async () => {
        await directly(n, inFlight, async (i) => {
          const h = natsHeaders();
          for (const [k, v] of Object.entries(s.headers)) h.set(k, v);
          await js.publish(subject, Buffer.from(s.body), { msgID: `direct-${tag}-${inFlight}-${i}`, headers: h });
        });
        return waitArrivals(arrivals, n);
      });
      log(`nats direct, ${inFlight} in flight: ${rate.toFixed(0)}/s`);
      arrivals.at.length = 0;
      return { rate, cpu };
    };
    const [direct16, direct64] = [await direct(MAX_IN_FLIGHT), await direct(IN_FLIGHT)];
    const bulb = await bulbDrain(`nats://127.0.0.1:4222?subject=${subject}`, n, arrivals, 'nats-server');
    log(`nats bulb: ${bulb.rate.toFixed(0)}/s`);
    const bull = (await redisUp()) ? await bullmqDrain('bullmq-nats', subject, n, arrivals, 'nats-server') : undefined;
    if (bull) log(`nats bullmq: ${bull.rate.toFixed(0)}/s`);
    return [...rows('NATS JetStream', `drain of ${n} queued deliveries (acknowledged publish) vs the nats client publishing the same bodies directly`, bulb.rate, direct64.rate, direct16.rate,
      bulb.cpu, direct64.cpu), peerRow('NATS JetStream', n, bulb, bull)];
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
    await nc.close();
  }
}

export async function runBrokersBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('the broker bench needs PostgreSQL');
  // BENCH_BROKERS_N: another size (a longer drain to profile, with BENCH_CPU_PROF); BENCH_BROKERS_ONLY=amqp|nats: one broker.
  const n = Number(process.env.BENCH_BROKERS_N ?? (opts.quick ? 2_000 : 10_000));
  const only = process.env.BENCH_BROKERS_ONLY;
  return [...(only === 'nats' ? [] : await amqpRows(n)), ...(only === 'amqp' ? [] : await natsRows(n))];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runBrokersBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(rows, null, 2));
}
