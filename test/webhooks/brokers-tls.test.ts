// Broker destinations over TLS with a subscription's mutual TLS (`tls`: client certificate, key, CA; docs/destinations.md,
// docs/receiver-auth.md), against real brokers: amqps through a TLS endpoint that requires a client certificate in
// front of the machine's RabbitMQ (as a TLS-terminating load balancer would be), and a NATS server with JetStream
// started by the test with TLS and client certificate verification. Delivered and verifiable with the right
// certificate; a certificate the broker's CA did not sign, or TLS asked of a server that offers none, is a failed
// attempt with errorCode TLS. Without a client certificate, a NATS server requiring TLS is checked for the URL's host
// name (a certificate for localhost only), directly and through the proxy. Mandatory with CI=true (.ci/run installs nats-server); skipped with the reason otherwise.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { amqpQueue, amqpsEndpoint, brokersUp, drainQueue, headerText, listening, NATS, useBrokerClients } from '../helpers/brokers.ts';
import { CI } from '../helpers/db.ts';
import { freePort } from '../helpers/cluster.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { verifyWebhook } from '../../packages/client/src/verify.ts';
import { connect as natsConnect } from 'nats';
import { startProxy } from './connect-proxy.ts';
import { makeCerts, type TestCerts } from './tls-certs.ts';
import { waitFor } from './receiver.ts';

const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) => fs.existsSync(p));
const skip = (await brokersUp()) || (NATS_SERVER ? false : 'no nats-server binary');
if (skip && CI) throw new Error(`CI=true but ${skip}`);
if (skip) console.log(`# SKIP broker TLS tests: ${skip}`);

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.2,0.4,0.8', BULB_WEBHOOK_TIMEOUT_MS: '3000' };
const tag = () => crypto.randomBytes(4).toString('hex');

/** A NATS server with JetStream requiring TLS and (unless `verify` is false) a client certificate the test CA signed, on a port of its own. */
async function natsTlsServer(certs: TestCerts, verify = true) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-nats-tls-'));
  const file = (n: string, text: string) => (fs.writeFileSync(path.join(dir, n), text), path.join(dir, n));
  const port = await freePort();
  const proc: ChildProcess = spawn(NATS_SERVER!, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', path.join(dir, 'js'),
    '--tls', '--tlscert', file('server.pem', certs.serverCert), '--tlskey', file('server.key', certs.serverKey),
    ...(verify ? ['--tlsverify', '--tlscacert', file('ca.pem', certs.ca)] : [])], { stdio: 'ignore' });
  await waitFor(() => listening(port), 'the TLS NATS server', 15_000);
  return {
    port,
    close: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

await describeEachDb('broker destinations over TLS with a client certificate', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let certs: TestCerts;
  let amqps: Awaited<ReturnType<typeof amqpsEndpoint>>;
  let natsTls: Awaited<ReturnType<typeof natsTlsServer>>;
  useWorkerAndReceiver(ctx, ENV, () => {});
  before(async () => {
    if (skip) return;
    certs = await makeCerts();
    amqps = await amqpsEndpoint(certs);
    natsTls = await natsTlsServer(certs);
  });
  after(async () => {
    await amqps?.close();
    await natsTls?.close();
  });
  // The test's NATS client is the TLS server's, with the client certificate.
  const brokers = useBrokerClients(skip, () => ({ servers: `127.0.0.1:${natsTls.port}`, tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey } }));
  const it_ = (name: string, fn: () => Promise<void>) => it(name, { skip: skip || false, timeout: 60_000 }, fn);
  const subscribe = async (url: string, mtls: { clientCertificate: string; clientKey: string; caCertificate?: string }) => {
    const r = await api().post('/integrations/webhooks/subscriptions', { url, eventTypes: ['customerCreate'], tls: mtls });
    assert.equal(r.status, 201, r.text);
    return r.body as { uuid: string; url: string; signingSecret: string };
  };
  const attemptsOf = async (sub: string) => (await api().get(`/integrations/webhooks/logs?limit=250&subscription=${sub}`)).body.data as any[];
  const lastAttempt = async (sub: string) => {
    await waitFor(async () => (await attemptsOf(sub)).length > 0, 'an attempt', 15_000);
    return (await attemptsOf(sub)).at(-1);
  };

  it_('amqps: a customer created reaches the bound queue once through an endpoint requiring a client certificate; a rogue certificate is errorCode TLS', async () => {
    const { exchange, queue } = await amqpQueue(brokers.ch);
    const url = `amqps://guest:guest@127.0.0.1:${amqps.port}?exchange=${exchange}&routingKey=customer.events`;
    const good = await subscribe(url, { clientCertificate: certs.clientCert, clientKey: certs.clientKey, caCertificate: certs.ca });
    const rogue = await subscribe(url, { clientCertificate: certs.rogueCert, clientKey: certs.rogueKey, caCertificate: certs.ca });
    const c = await api().post('/crm/customers', { externalId: `amqps-${tag()}` });
    assert.equal(c.status, 201, c.text);
    const a = await lastAttempt(good.uuid);
    assert.equal(a.outcome, 'success', `${a.errorCode}: ${a.responseBody}`);
    assert.ok(amqps.peers.includes('bulb-client'), `the endpoint saw Bulb's client certificate: ${amqps.peers}`);
    const msgs = await drainQueue(brokers.ch, queue);
    assert.equal(msgs.length, 1, 'exactly one message (the rogue subscription published none)');
    const ev = verifyWebhook(msgs[0].content, headerText(msgs[0].properties.headers ?? {}), good.signingSecret);
    assert.equal(ev.resource.uuid, c.body.uuid);
    const r = await lastAttempt(rogue.uuid);
    assert.equal(r.outcome, 'failure');
    assert.equal(r.errorCode, 'TLS', String(r.responseBody));
  });

  it_('nats: a customer created reaches the stream of a server requiring TLS and a client certificate; a rogue certificate, or TLS asked of a plain server, is errorCode TLS', async () => {
    const name = `BULB_TLS_${tag()}`;
    const subject = `bulb.tls.${tag()}`;
    await brokers.jsm.streams.add({ name, subjects: [subject] });
    const mine = { clientCertificate: certs.clientCert, clientKey: certs.clientKey, caCertificate: certs.ca };
    const good = await subscribe(`nats://127.0.0.1:${natsTls.port}?subject=${subject}`, mine);
    const rogue = await subscribe(`nats://127.0.0.1:${natsTls.port}?subject=${subject}`, { clientCertificate: certs.rogueCert, clientKey: certs.rogueKey, caCertificate: certs.ca });
    const plain = await subscribe(`${NATS}?subject=${subject}`, mine); // the machine's NATS offers no TLS
    const c = await api().post('/crm/customers', { externalId: `natstls-${tag()}` });
    assert.equal(c.status, 201, c.text);
    const a = await lastAttempt(good.uuid);
    assert.equal(a.outcome, 'success', `${a.errorCode}: ${a.responseBody}`);
    const info = await brokers.jsm.streams.info(name);
    assert.equal(info.state.messages, 1, 'exactly one message in the stream');
    const m = await brokers.jsm.streams.getMessage(name, { seq: info.state.first_seq });
    const headers: Record<string, string> = {};
    for (const [k] of m.header) headers[k] = m.header.get(k);
    assert.equal(verifyWebhook(m.data, headers, good.signingSecret).resource.uuid, c.body.uuid);
    for (const sub of [rogue, plain]) {
      const r = await lastAttempt(sub.uuid);
      assert.equal(r.outcome, 'failure');
      assert.equal(r.errorCode, 'TLS', String(r.responseBody));
    }
  });

  it_('nats without a client certificate: a server requiring TLS is checked for the URL\'s host name, directly and through the proxy; a name its certificate does not hold is errorCode TLS', async () => {
    // A server certificate for the name localhost only (no IP address in it), signed by a CA that the publishing
    // process trusts as a public root (NODE_EXTRA_CA_CERTS: a child process, nats-publish.ts), the server requiring TLS.
    const named = await makeCerts('DNS:localhost');
    const server = await natsTlsServer(named, false);
    const proxy = await startProxy();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-nats-ca-'));
    fs.writeFileSync(path.join(dir, 'ca.pem'), named.ca);
    const nc = await natsConnect({ servers: `localhost:${server.port}`, tls: { ca: named.ca } });
    try {
      const stream = `BULB_NAMED_${tag()}`;
      const subject = `bulb.named.${tag()}`;
      await (await nc.jetstreamManager()).streams.add({ name: stream, subjects: [subject] });
      const publish = async (url: string, viaProxy = false) => {
        const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'nats-publish.ts'), url, ...(viaProxy ? [proxy.url] : [])],
          { env: { ...process.env, NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.pem') } });
        return JSON.parse(stdout.trim().split('\n').at(-1)!) as { id: string; outcome: { ok: boolean; errorCode?: string; message?: string } };
      };
      const direct = await publish(`nats://localhost:${server.port}?subject=${subject}`);
      assert.ok(direct.outcome.ok, JSON.stringify(direct.outcome));
      const tunnelled = await publish(`nats://localhost:${server.port}?subject=${subject}`, true);
      assert.ok(tunnelled.outcome.ok, JSON.stringify(tunnelled.outcome));
      assert.deepEqual(proxy.targets, [`127.0.0.1:${server.port}`], 'the proxy was asked for the checked address');
      // The same server named by its address: its certificate does not hold 127.0.0.1, and TLS is not given up for it.
      const byAddress = await publish(`nats://127.0.0.1:${server.port}?subject=${subject}`);
      assert.equal(byAddress.outcome.ok, false);
      assert.equal(byAddress.outcome.errorCode, 'TLS', byAddress.outcome.message);
      const jsm = await nc.jetstreamManager();
      assert.equal((await jsm.streams.info(stream)).state.messages, 2, 'the two publishes that succeeded, stored once each');
      const ids = new Set<string>();
      for (const seq of [1, 2]) ids.add(JSON.parse(new TextDecoder().decode((await jsm.streams.getMessage(stream, { seq })).data)).uuid);
      assert.deepEqual(ids, new Set([direct.id, tunnelled.id]));
    } finally {
      await nc.close();
      await proxy.close();
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it_('mutual TLS on a plain amqp URL is a 400 naming tls, and changes nothing', async () => {
    const before = (await api().get('/integrations/webhooks/subscriptions')).body.data.length;
    const r = await api().post('/integrations/webhooks/subscriptions', {
      url: 'amqp://guest:guest@127.0.0.1:5672?exchange=x', eventTypes: ['customerCreate'],
      tls: { clientCertificate: certs.clientCert, clientKey: certs.clientKey },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.errors[0].moreInfo, 'tls');
    assert.match(r.body.errors[0].message, /amqps/);
    assert.equal((await api().get('/integrations/webhooks/subscriptions')).body.data.length, before);
  });
}, ENV);
