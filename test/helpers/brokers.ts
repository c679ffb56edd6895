// The machine's message brokers for tests: where they answer, and whether to run (CI=true: they must; else skip
// with the reason printed). .ci/run starts RabbitMQ and NATS (JetStream) where their ports do not answer.
import crypto from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import { after, before } from 'node:test';
import { connect as amqpConnect, type Channel, type ChannelModel } from 'amqplib';
import { connect as natsConnect, type ConnectionOptions as NatsOptions, type JetStreamManager, type NatsConnection } from 'nats';
import { CI } from './db.ts';
import type { TestCerts } from '../webhooks/tls-certs.ts';

export const AMQP = 'amqp://guest:guest@127.0.0.1:5672';
export const NATS = 'nats://127.0.0.1:4222';

/** Whether something answers on a local port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Both brokers up, or (outside CI) the reason to skip; with CI=true a missing broker fails the run. */
export async function brokersUp(): Promise<string | false> {
  const missing = [];
  if (!(await listening(5672))) missing.push('RabbitMQ on 127.0.0.1:5672');
  if (!(await listening(4222))) missing.push('NATS on 127.0.0.1:4222');
  if (missing.length === 0) return false;
  if (CI) throw new Error(`CI=true but ${missing.join(' and ')} is not answering (.ci/run starts them)`);
  return `no ${missing.join(', no ')}`;
}


/**
 * The test's own clients of the brokers (a RabbitMQ channel, a JetStream manager), opened before the suite's tests and
 * closed after; nothing when `skip`. `nats`: where its NATS client connects (read when the hook runs).
 */
export function useBrokerClients(skip: string | false, nats: () => NatsOptions = () => ({ servers: NATS })): { ch: Channel; jsm: JetStreamManager } {
  const clients = {} as { ch: Channel; jsm: JetStreamManager };
  let conn: ChannelModel | undefined;
  let nc: NatsConnection | undefined;
  before(async () => {
    if (skip) return;
    conn = await amqpConnect(AMQP);
    clients.ch = await conn.createChannel();
    nc = await natsConnect(nats());
    clients.jsm = await nc.jetstreamManager();
  });
  after(async () => {
    await conn?.close().catch(() => {});
    await nc?.close().catch(() => {});
  });
  return clients;
}

/** A topic exchange of its own and a queue bound to it for `routingKey`. */
export async function amqpQueue(ch: Channel, routingKey = 'customer.events') {
  const exchange = `bulb-test-${crypto.randomBytes(4).toString('hex')}`;
  await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
  const { queue } = await ch.assertQueue('', { exclusive: true });
  await ch.bindQueue(queue, exchange, routingKey);
  return { exchange, queue };
}

/** Every message in a queue now, acknowledged. */
export async function drainQueue(ch: Channel, queue: string) {
  const out = [];
  for (let m = await ch.get(queue, { noAck: true }); m !== false; m = await ch.get(queue, { noAck: true })) out.push(m);
  return out;
}

/** AMQP header values as strings (amqplib hands long strings back as strings or Buffers). */
export const headerText = (h: Record<string, unknown>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('utf8') : String(v)]));

/**
 * A TLS endpoint requiring a client certificate the test CA signed, piping each connection to the machine's RabbitMQ
 * (as a TLS-terminating load balancer would): amqps with mutual TLS. `peers`: the client certificates' common names.
 */
export async function amqpsEndpoint(certs: TestCerts) {
  const peers: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, requestCert: true, rejectUnauthorized: true }, (s) => {
    peers.push(String(s.getPeerCertificate().subject?.CN));
    const up = net.connect(5672, '127.0.0.1');
    for (const x of [s, up]) {
      sockets.add(x);
      x.on('error', () => {});
      x.on('close', () => (s.destroy(), up.destroy()));
    }
    s.pipe(up).pipe(s);
  });
  server.on('tlsClientError', () => {}); // a rogue certificate's handshake
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port, peers,
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}
