// Peers for the webhook drain bench, each in its own process (bench/webhooks.ts starts them):
//   raw <url> <n> <concurrency>            n undici POSTs of one pre-signed body, `concurrency` at a time
//   bullmq <url> <concurrency> <queue>     a BullMQ worker (Redis 127.0.0.1:6379) that builds, signs (hex HMAC +
//                                          Standard Webhooks) and POSTs each job's event, like Bulb's sender
//   bullmq-amqp <exchange> <concurrency> <queue>
//   bullmq-nats <subject> <concurrency> <queue>
//                                          the same worker publishing each signed event to the machine's RabbitMQ
//                                          (publisher confirms) or NATS JetStream (acknowledged) instead, as Bulb's
//                                          broker destinations do (bench/brokers.ts)
// The HTTP ones keep connections alive with an undici Agent of `concurrency` sockets and read the answer body.
import crypto from 'node:crypto';
import { Agent, request } from 'undici';
import { hmacHex, signatureHeader } from '../src/webhooks/signing.ts';

const [mode, url, a, b, c] = process.argv.slice(2);

function signed(ev: Record<string, unknown>, secret: string) {
  const body = JSON.stringify(ev);
  const ts = Math.floor(Date.now() / 1000);
  return {
    body,
    headers: {
      'content-type': 'application/json', accept: 'application/json', 'user-agent': 'peer',
      'x-tulip-hmac-256': hmacHex(secret, body), 'x-webhook-version': '2022-08',
      'webhook-id': String(ev.uuid), 'webhook-timestamp': String(ts), 'webhook-signature': signatureHeader([secret], String(ev.uuid), ts, body),
    },
  };
}

async function post(agent: Agent, body: string, headers: Record<string, string>) {
  const r = await request(url, { method: 'POST', headers, body, dispatcher: agent });
  await r.body.text();
  if (r.statusCode >= 300) throw new Error(`status ${r.statusCode}`);
}

if (mode === 'raw') {
  const n = Number(a);
  const conc = Number(b);
  const agent = new Agent({ connections: conc, keepAliveTimeout: 4000 });
  const secret = 'whsec_' + crypto.randomBytes(32).toString('base64');
  const { body, headers } = signed({ uuid: crypto.randomUUID(), subscription: crypto.randomUUID(), createdAt: new Date().toISOString(), eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'bench' }, source: 'TULIP_API' }, secret);
  let next = 0;
  console.log('peer ready');
  await Promise.all(Array.from({ length: conc }, async () => {
    while (next++ < n) await post(agent, body, headers);
  }));
  await agent.close();
  console.log('peer done');
  process.exit(0);
} else if (mode === 'bullmq') {
  const { Worker } = await import('bullmq');
  const conc = Number(a);
  const agent = new Agent({ connections: conc, keepAliveTimeout: 4000 });
  const worker = new Worker(b, async (job) => {
    const { secret, ...ev } = job.data as Record<string, unknown> & { secret: string };
    const { body, headers } = signed(ev, secret);
    await post(agent, body, headers);
  }, { connection: { host: '127.0.0.1', port: 6379 }, concurrency: conc, removeOnComplete: { count: 0 }, removeOnFail: { count: 1000 } });
  await worker.waitUntilReady();
  console.log('peer ready');
  process.on('SIGTERM', async () => {
    await worker.close();
    await agent.close();
    process.exit(0);
  });
} else if (mode === 'bullmq-amqp' || mode === 'bullmq-nats') {
  const { Worker } = await import('bullmq');
  const target = url;
  const conc = Number(a);
  let publish: (id: string, body: string, headers: Record<string, string>) => Promise<void>;
  let close: () => Promise<void>;
  if (mode === 'bullmq-amqp') {
    const { connect } = await import('amqplib');
    const conn = await connect('amqp://guest:guest@127.0.0.1:5672');
    const ch = await conn.createConfirmChannel();
    // The options Bulb's AMQP publisher sets (src/webhooks/destinations/amqp.ts).
    publish = (id, body, headers) => new Promise<void>((resolve, reject) => {
      ch.publish(target, 'customer.events', Buffer.from(body), { mandatory: true, persistent: true, contentType: 'application/json', messageId: id, timestamp: Math.floor(Date.now() / 1000), headers }, (err) => (err ? reject(err) : resolve()));
    });
    close = () => conn.close();
  } else {
    const { connect, headers: natsHeaders } = await import('nats');
    // Connected as Bulb's NATS publisher is (src/webhooks/destinations/nats.ts: no stack captured per request).
    const nc = await connect({ servers: '127.0.0.1:4222', noAsyncTraces: true });
    const js = nc.jetstream();
    publish = async (id, body, headers) => {
      const h = natsHeaders();
      for (const [k, v] of Object.entries(headers)) h.set(k, v);
      await js.publish(target, Buffer.from(body), { msgID: id, headers: h });
    };
    close = () => nc.close();
  }
  const worker = new Worker(b, async (job) => {
    const { secret, ...ev } = job.data as Record<string, unknown> & { secret: string };
    const { body, headers } = signed(ev, secret);
    await publish(String(ev.uuid), body, headers);
  }, { connection: { host: '127.0.0.1', port: 6379 }, concurrency: conc, removeOnComplete: { count: 0 }, removeOnFail: { count: 1000 } });
  await worker.waitUntilReady();
  console.log('peer ready');
  process.on('SIGTERM', async () => {
    await worker.close();
    await close();
    process.exit(0);
  });
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
void c;
