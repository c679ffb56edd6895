// Broker destinations through BULB_WEBHOOK_PROXY (issue 27 item 3; docs/destinations.md): a worker whose egress must
// leave through an HTTP CONNECT proxy publishes to the machine's RabbitMQ and NATS JetStream through it (the proxy is
// asked for the address the guard checked), amqps with mutual TLS included; a proxy refusing the tunnel is a failed
// attempt, BROKER_UNREACHABLE with the proxy's answer. Mandatory with CI=true; skipped with the reason otherwise.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import { after, before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { amqpQueue, amqpsEndpoint, brokersUp, drainQueue, headerText, useBrokerClients } from '../helpers/brokers.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { verifyWebhook } from '../../packages/client/src/verify.ts';
import { startProxy } from './connect-proxy.ts';
import { makeCerts, type TestCerts } from './tls-certs.ts';
import { waitFor } from './receiver.ts';

const skip = await brokersUp();
if (skip) console.log(`# SKIP broker proxy tests: ${skip}`);

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.2,0.4,0.8', BULB_WEBHOOK_TIMEOUT_MS: '3000' };
const tag = () => crypto.randomBytes(4).toString('hex');

/** A CONNECT proxy that reads what it is sent and never answers: its open sockets, and what each was sent. */
async function silentProxy() {
  const held = new Map<net.Socket, string>();
  const server = net.createServer((sock) => {
    held.set(sock, '');
    sock.on('data', (d) => held.set(sock, held.get(sock) + d.toString('latin1'))); // reads the CONNECT, answers nothing
    sock.on('error', () => {}).on('close', () => held.delete(sock));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    held,
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: async () => {
      for (const sock of held.keys()) sock.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

await describeEachDb('broker destinations through BULB_WEBHOOK_PROXY', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let worker: TestWorker | undefined;
  let certs: TestCerts;
  let amqps: Awaited<ReturnType<typeof amqpsEndpoint>>;
  before(async () => {
    if (skip) return;
    proxy = await startProxy();
    worker = await startWorker(ctx.tdb.db, { ...ENV, BULB_WEBHOOK_PROXY: proxy.url });
    certs = await makeCerts();
    amqps = await amqpsEndpoint(certs); // the test CA's client certificate required, in front of the machine's RabbitMQ
  });
  after(async () => {
    await worker?.stop();
    await amqps?.close();
    await proxy?.close();
  });
  const brokers = useBrokerClients(skip);
  const it_ = (name: string, fn: () => Promise<void>) => it(name, { skip: skip || false, timeout: 60_000 }, fn);
  const subscribe = async (body: Record<string, unknown>) => {
    const r = await api().post('/integrations/webhooks/subscriptions', { eventTypes: ['customerCreate'], ...body });
    assert.equal(r.status, 201, r.text);
    return r.body as { uuid: string; signingSecret: string };
  };
  const lastAttempt = async (sub: string) => waitFor(async () => (await api().get(`/integrations/webhooks/logs?limit=10&subscription=${sub}`)).body.data[0], 'an attempt', 15_000);

  it_('RabbitMQ (amqp, and amqps with mutual TLS) and NATS JetStream are reached through the proxy, asked for the checked address', async () => {
    const { exchange, queue } = await amqpQueue(brokers.ch);
    const stream = `BULB_PROXY_${tag()}`;
    const subject = `bulb.proxy.${tag()}`;
    await brokers.jsm.streams.add({ name: stream, subjects: [subject] });
    try {
      const amqpPort = amqps.port;
      const viaAmqp = await subscribe({ url: `amqp://guest:guest@localhost:5672?exchange=${exchange}&routingKey=customer.events` });
      const viaAmqps = await subscribe({
        url: `amqps://guest:guest@localhost:${amqpPort}?exchange=${exchange}&routingKey=customer.events`,
        tls: { clientCertificate: certs.clientCert, clientKey: certs.clientKey, caCertificate: certs.ca },
      });
      const viaNats = await subscribe({ url: `nats://localhost:4222?subject=${subject}` });
      const c = await api().post('/crm/customers', { externalId: `proxy-${tag()}` });
      assert.equal(c.status, 201, c.text);
      for (const sub of [viaAmqp, viaAmqps, viaNats]) {
        const a = await lastAttempt(sub.uuid);
        assert.equal(a.outcome, 'success', `${a.url}: ${a.errorCode} ${a.responseBody}`);
      }
      // By name: the worker resolved localhost itself and asked the proxy for the address it checked.
      for (const t of ['127.0.0.1:5672', `127.0.0.1:${amqpPort}`, '127.0.0.1:4222']) assert.ok(proxy.targets.includes(t), `CONNECT ${t}: ${proxy.targets}`);
      const msgs = await drainQueue(brokers.ch, queue);
      assert.equal(msgs.length, 2, 'one message from each amqp subscription');
      const secrets = new Map([[viaAmqp.uuid, viaAmqp.signingSecret], [viaAmqps.uuid, viaAmqps.signingSecret]]);
      for (const m of msgs) {
        const sub = JSON.parse(m.content.toString('utf8')).subscription as string;
        assert.equal(verifyWebhook(m.content, headerText(m.properties.headers ?? {}), secrets.get(sub)!).resource.uuid, c.body.uuid);
      }
      assert.equal((await brokers.jsm.streams.info(stream)).state.messages, 1);
    } finally {
      await brokers.jsm.streams.delete(stream);
    }
  });

  it_('a proxy refusing the tunnel is a failed attempt, BROKER_UNREACHABLE with its answer', async () => {
    proxy.refuse = true;
    try {
      const sub = await subscribe({ url: `nats://127.0.0.1:4222?subject=bulb.refused.${tag()}` });
      await api().post('/crm/customers', { externalId: `refused-${tag()}` });
      const a = await lastAttempt(sub.uuid);
      assert.equal(a.outcome, 'failure');
      assert.equal(a.errorCode, 'BROKER_UNREACHABLE');
      assert.match(String(a.responseBody), /BULB_WEBHOOK_PROXY: the proxy refused CONNECT 127\.0\.0\.1:4222: 403/);
    } finally {
      proxy.refuse = false;
    }
  });

  it_('a proxy that never answers CONNECT is BROKER_TIMEOUT saying the proxy did not answer, as TIMEOUT is for HTTP', async () => {
    // It said "no confirm from the broker", which the publish never reached (found 2026-11-30).
    const silent = await silentProxy();
    const hanging = await startWorker(ctx.tdb.db, { ...ENV, BULB_WEBHOOK_TIMEOUT_MS: '1500', BULB_WEBHOOK_PROXY: silent.url });
    await worker?.stop(); // only the worker behind the silent proxy claims
    worker = undefined;
    try {
      const amqp = await subscribe({ url: `amqp://guest:guest@127.0.0.1:5672?exchange=x-${tag()}` });
      const nats = await subscribe({ url: `nats://127.0.0.1:4222?subject=bulb.hanging.${tag()}` });
      await api().post('/crm/customers', { externalId: `hanging-${tag()}` });
      for (const [sub, port] of [[amqp, 5672], [nats, 4222]] as const) {
        const a = await lastAttempt(sub.uuid);
        assert.equal(a.errorCode, 'BROKER_TIMEOUT', a.responseBody);
        assert.equal(a.responseBody, `through BULB_WEBHOOK_PROXY: the proxy did not answer CONNECT 127.0.0.1:${port} within 1500 ms`);
        await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
      }
    } finally {
      await hanging.stop();
      await silent.close();
    }
  });

  it_('a publisher closed while the proxy has not answered CONNECT leaves no socket open to the proxy', async () => {
    // The tunnel's socket to the proxy stayed open after its publisher closed (a worker's stop, here), until the
    // connector's own deadline: BULB_WEBHOOK_TIMEOUT_MS later, 30 s with this worker's (found 2026-11-30).
    const silent = await silentProxy();
    await worker?.stop();
    worker = undefined;
    const hanging = await startWorker(ctx.tdb.db, { ...ENV, BULB_WEBHOOK_TIMEOUT_MS: '30000', BULB_WEBHOOK_PROXY: silent.url }, { drainMs: 0 });
    try {
      const subs = [
        await subscribe({ url: `amqp://guest:guest@127.0.0.1:5672?exchange=x-${tag()}` }),
        await subscribe({ url: `nats://127.0.0.1:4222?subject=bulb.closed.${tag()}` }),
      ];
      await api().post('/crm/customers', { externalId: `closed-${tag()}` });
      const asked = () => new Set([...silent.held.values()].map((sent) => /^CONNECT (\S+)/.exec(sent)?.[1]));
      await waitFor(() => asked().has('127.0.0.1:5672') && asked().has('127.0.0.1:4222'), 'both CONNECTs sent to the proxy', 15_000);
      await hanging.stop(); // aborts the two attempts and closes their publishers
      await waitFor(() => silent.held.size === 0, 'every socket to the proxy closed', 15_000);
      for (const sub of subs) await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
    } finally {
      await hanging.stop();
      await silent.close();
    }
  });
}, ENV);
