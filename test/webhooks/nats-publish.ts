// One publish by Bulb's NATS publisher, its outcome printed as JSON: run by brokers-tls.test.ts in a child process whose
// NODE_EXTRA_CA_CERTS trusts the test's CA (a running Node 20 process cannot add a root certificate), for a server
// whose certificate the public roots would check. Arguments: the nats URL, then BULB_WEBHOOK_PROXY's URL or nothing.
import crypto from 'node:crypto';
import { NatsPublisher } from '../../src/webhooks/destinations/nats.ts';

const [url, proxy] = process.argv.slice(2);
const publisher = new NatsPublisher(url, null, { timeoutMs: 5_000, allowPrivate: true, name: 'bulb test', subscription: crypto.randomUUID(), proxy: proxy ? new URL(proxy) : null });
const id = crypto.randomUUID();
const outcome = await publisher.publish({ id, body: JSON.stringify({ uuid: id }), headers: { 'webhook-id': id } });
await publisher.close();
console.log(JSON.stringify({ id, outcome }));
