// Broker destinations under failure, on PostgreSQL with the machine's real RabbitMQ and NATS (docs/destinations.md):
// a broker that goes away mid-flood (a TCP switch the test controls, in front of each broker, pointed at nothing and
// back) loses nothing once it returns; dead brokers (hanging or refusing) delay no HTTP subscription (SPEC §11, as
// test/webhooks/isolation.test.ts: a generous bound a loaded machine keeps, the p50/p99 printed).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import { after, before, it } from 'node:test';
import { describePg } from '../helpers/suite.ts';
import { startSwitch, type Switch } from '../helpers/cluster.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { startReceiver, waitFor, sleep, type Receiver } from './receiver.ts';
import { brokersUp, useBrokerClients } from '../helpers/brokers.ts';

const skip = await brokersUp();
if (skip) console.log(`# SKIP broker outage tests: ${skip}`);

const tag = () => crypto.randomBytes(4).toString('hex');

await describePg('broker destinations under failure', (ctx) => {
  const api = () => ctx.srv.api;
  let worker: TestWorker;
  before(async () => {
    if (skip) return;
    // Many short retries: nothing runs out of attempts while a broker is away for a few seconds.
    worker = await startWorker(ctx.tdb.db, {
      BULB_WEBHOOK_ALLOW_PRIVATE: 'true',
      BULB_WEBHOOK_TIMEOUT_MS: '2000',
      BULB_WEBHOOK_RETRY_SCHEDULE: Array(40).fill('0.5').join(','),
    });
  });
  after(async () => {
    await worker?.stop();
  });
  const brokers = useBrokerClients(skip);
  const subscribe = async (url: string) => {
    const r = await api().post('/integrations/webhooks/subscriptions', { url, eventType: 'customerCreate', maxInFlight: 8 });
    assert.equal(r.status, 201, r.text);
    return r.body as { uuid: string };
  };
  const statusCount = async (sub: string, status: string) =>
    Number((await ctx.tdb.db.query(
      `SELECT count(*) AS n FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.uuid = $1 AND d.status = $2`,
      [sub, status],
    )).rows[0].n);

  it('a broker stopped mid-flood loses nothing after it returns', { skip: skip || false, timeout: 120_000 }, async () => {
    const amqpSwitch: Switch = await startSwitch(5672);
    const natsSwitch: Switch = await startSwitch(4222);
    const exchange = `bulb-flood-${tag()}`;
    await brokers.ch.assertExchange(exchange, 'topic', { durable: false });
    const { queue } = await brokers.ch.assertQueue('', { exclusive: true });
    await brokers.ch.bindQueue(queue, exchange, '#');
    const stream = `BULB_FLOOD_${tag()}`;
    const subject = `bulb.flood.${tag()}`;
    await brokers.jsm.streams.add({ name: stream, subjects: [subject] });
    try {
      const a = await subscribe(`amqp://guest:guest@127.0.0.1:${amqpSwitch.port}?exchange=${exchange}&routingKey=customers`);
      const n = await subscribe(`nats://127.0.0.1:${natsSwitch.port}?subject=${subject}`);
      const N = 120;
      const created = new Set<string>();
      for (let i = 0; i < N; i++) {
        if (i === N / 3) {
          // The brokers go away: every connection cut, new ones refused.
          amqpSwitch.pointAt(undefined);
          natsSwitch.pointAt(undefined);
        }
        const c = await api().post('/crm/customers', { externalId: `flood-${i}-${tag()}` });
        assert.equal(c.status, 201, c.text);
        created.add(c.body.uuid);
      }
      const failures = async () => Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM webhook_attempts WHERE outcome = 'failure' AND error_code LIKE 'BROKER_%'`)).rows[0].n);
      await waitFor(async () => (await failures()) >= 4, 'failed attempts while the brokers are away', 30_000);
      amqpSwitch.pointAt(5672);
      natsSwitch.pointAt(4222);
      await waitFor(async () => (await statusCount(a.uuid, 'delivered')) === N && (await statusCount(n.uuid, 'delivered')) === N, 'every delivery delivered', 90_000);
      assert.ok((await failures()) >= 4, 'attempts failed while the brokers were away');
      // RabbitMQ: every customer's event, at least once (a publish confirmed as the connection was cut is sent again).
      const seen = new Map<string, number>();
      for (;;) {
        const m = await brokers.ch.get(queue, { noAck: true });
        if (m === false) break;
        const ev = JSON.parse(m.content.toString());
        seen.set(ev.resource.uuid, (seen.get(ev.resource.uuid) ?? 0) + 1);
      }
      assert.deepEqual([...created].filter((u) => !seen.has(u)), [], 'no customer missing from the queue');
      console.log(`# amqp: ${N} events, ${[...seen.values()].reduce((x, y) => x + y, 0)} messages; failed attempts ${await failures()}`);
      // JetStream: exactly once (the event uuid is the message id; a second publish is dropped as a duplicate).
      const info = await brokers.jsm.streams.info(stream);
      assert.equal(info.state.messages, N, 'every event in the stream, once');
      const inStream = new Set<string>();
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) inStream.add(JSON.parse(Buffer.from((await brokers.jsm.streams.getMessage(stream, { seq })).data).toString()).resource.uuid);
      assert.deepEqual([...created].filter((u) => !inStream.has(u)), [], 'no customer missing from the stream');
    } finally {
      await brokers.jsm.streams.delete(stream).catch(() => {});
      await amqpSwitch.close();
      await natsSwitch.close();
    }
  });

  it('dead broker destinations delay no HTTP subscription', { skip: skip || false, timeout: 120_000 }, async () => {
    // Hanging brokers: accept the connection, never answer (each attempt ends at the 2 s deadline).
    const hung = new Set<net.Socket>();
    const hang = net.createServer((s) => hung.add(s.on('error', () => {})));
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    const hangPort = (hang.address() as net.AddressInfo).port;
    const refuse = net.createServer();
    await new Promise<void>((r) => refuse.listen(0, '127.0.0.1', r));
    const deadPort = (refuse.address() as net.AddressInfo).port;
    await new Promise((r) => refuse.close(r));
    const rx: Receiver = await startReceiver();
    const crowd: string[] = [];
    // The default retry schedule here (the flood's 0.5 s one would make 1,200 refused deliveries 2,400 attempts a second).
    await worker.stop();
    worker = await startWorker(ctx.tdb.db, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '2000' });
    try {
      for (let i = 0; i < 10; i++) {
        crowd.push((await subscribe(`amqp://guest:guest@127.0.0.1:${hangPort}?exchange=x${i}`)).uuid);
        crowd.push((await subscribe(`nats://127.0.0.1:${hangPort}?subject=hang.${i}`)).uuid);
        crowd.push((await subscribe(`amqp://127.0.0.1:${deadPort}?exchange=x${i}`)).uuid);
        crowd.push((await subscribe(`nats://127.0.0.1:${deadPort}?subject=dead.${i}`)).uuid);
      }
      const healthy = await subscribe(rx.url);
      const sentAt = new Map<string, number>();
      for (let i = 0; i < 60; i++) {
        const t = performance.now();
        const c = await api().post('/crm/customers', { externalId: `iso-${i}-${tag()}` });
        sentAt.set(c.body.uuid, t);
        await sleep(50);
      }
      await waitFor(() => rx.received.filter((r) => r.body?.subscription === healthy.uuid).length >= 60, 'every healthy delivery', 60_000);
      const delays = rx.received
        .filter((r) => r.body?.subscription === healthy.uuid && sentAt.has(r.body.resource.uuid))
        .map((r) => r.at - sentAt.get(r.body.resource.uuid)!)
        .sort((x, y) => x - y);
      const p = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
      const crowdFailures = Number((await ctx.tdb.db.query(
        `SELECT count(DISTINCT a.subscription_id) AS n FROM webhook_attempts a JOIN webhook_subscriptions s ON s.id = a.subscription_id
         WHERE s.uuid = ANY($1::uuid[]) AND a.outcome = 'failure' AND a.error_code IN ('BROKER_TIMEOUT', 'BROKER_UNREACHABLE')`,
        [crowd],
      )).rows[0].n);
      console.log(`# healthy delay p50 ${p(0.5).toFixed(1)} ms, p99 ${p(0.99).toFixed(1)} ms, max ${delays.at(-1)!.toFixed(1)} ms; crowd subscriptions failing ${crowdFailures}/${crowd.length}`);
      assert.equal(delays.length, 60);
      assert.equal(crowdFailures, crowd.length, 'every dead broker destination was being attempted');
      assert.ok(p(0.99) < 3000, `p99 ${p(0.99).toFixed(0)} ms (goal 100 ms; generous bound 3 s on a loaded machine)`);
    } finally {
      for (const u of crowd) await api().delete(`/integrations/webhooks/subscriptions/${u}`);
      for (const s of hung) s.destroy();
      hang.close();
      await rx.close();
    }
  });
}, { env: { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' } });
