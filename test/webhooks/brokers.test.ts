// Broker destinations (docs/destinations.md) against the machine's real RabbitMQ (127.0.0.1:5672) and NATS with
// JetStream (127.0.0.1:4222): a customer created reaches a bound queue and a stream once, verifiable with Bulb's verify
// helper; the password is sealed and never shown; refusals, missing routes and unreachable brokers are failed attempts
// with their errorCode, replayable once fixed; bad URLs are a 400 naming "url" that changes nothing. Mandatory with
// CI=true; skipped with the reason printed otherwise.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { amqpQueue, brokersUp, drainQueue, headerText, useBrokerClients } from '../helpers/brokers.ts';
import { errorCodes } from '../helpers/server.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { verifyWebhook } from '../../packages/client/src/verify.ts';
import { newSubscription } from '../../src/webhooks/service.ts';
import type { Claimed } from '../../src/webhooks/claimed.ts';
import { waitFor } from './receiver.ts';
import { DiscardPolicy } from 'nats';

const skip = await brokersUp();
if (skip) console.log(`# SKIP broker destination tests: ${skip}`);

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.2,0.4,0.8', BULB_WEBHOOK_TIMEOUT_MS: '3000' };
const tag = () => crypto.randomBytes(4).toString('hex');

await describeEachDb('broker destinations', (ctx) => {
  const api = () => ctx.srv.api;
  useWorkerAndReceiver(ctx, ENV, () => {});
  const brokers = useBrokerClients(skip);
  const it_ = (name: string, fn: () => Promise<void>) => it(name, { skip: skip || false, timeout: 60_000 }, fn);
  const subscribe = async (url: string, eventType = 'customerCreate') => {
    const r = await api().post('/integrations/webhooks/subscriptions', { url, eventType });
    assert.equal(r.status, 201, r.text);
    return r.body as { uuid: string; url: string; signingSecret: string };
  };
  const attemptsOf = async (sub: string) => (await api().get(`/integrations/webhooks/logs?limit=250&subscription=${sub}`)).body.data as any[];
  const subscriptionCount = async () => Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM webhook_subscriptions`)).rows[0].n);

  it_('a customer created reaches a bound RabbitMQ queue once, signed, with the password sealed and never shown', async () => {
    const { exchange, queue } = await amqpQueue(brokers.ch);
    const sub = await subscribe(`amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}&routingKey=customer.events`);
    assert.equal(sub.url, `amqp://guest:***@127.0.0.1:5672?exchange=${exchange}&routingKey=customer.events`);
    const stored = (await ctx.tdb.db.query(`SELECT url, destination_password FROM webhook_subscriptions WHERE uuid = $1`, [sub.uuid])).rows[0];
    assert.ok(!stored.url.includes(':guest@'), 'the url column holds no password');
    assert.match(stored.destination_password, /^v1:/, 'the password is sealed (SPEC §15)');
    const c = await api().post('/crm/customers', { externalId: `amqp-${tag()}` });
    assert.equal(c.status, 201, c.text);
    await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
    const msgs = await drainQueue(brokers.ch, queue);
    assert.equal(msgs.length, 1, 'exactly one message');
    const m = msgs[0];
    const headers = headerText(m.properties.headers ?? {});
    const ev = verifyWebhook(m.content, headers, sub.signingSecret);
    assert.equal(ev.eventType, 'customerCreate');
    assert.equal(ev.resource.uuid, c.body.uuid);
    assert.equal(ev.subscription, sub.uuid);
    assert.equal(m.properties.messageId, ev.uuid);
    assert.equal(m.properties.contentType, 'application/json');
    assert.equal(m.fields.routingKey, 'customer.events');
    for (const h of ['X-Tulip-Hmac-256', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'X-Webhook-Version', 'Content-Type']) assert.ok(headers[h], `header ${h}`);
    assert.equal(headers['X-Tulip-Hmac-256'], crypto.createHmac('sha256', sub.signingSecret).update(m.content).digest('hex'));
    const [a] = await attemptsOf(sub.uuid);
    assert.equal(a.outcome, 'success');
    assert.equal(a.statusCode, null);
    assert.equal(a.errorCode, null);
    assert.equal(a.url, sub.url, 'the log shows the redacted URL');
    const all = (await api().get(`/integrations/webhooks/subscriptions/${sub.uuid}`)).text + JSON.stringify(await attemptsOf(sub.uuid));
    assert.ok(!all.includes('guest:guest'), 'no answer shows the password');
    // Written back as shown, the URL keeps its stored password.
    const p = await api().patch(`/integrations/webhooks/subscriptions/${sub.uuid}`, { url: sub.url, maxInFlight: 4 });
    assert.equal(p.status, 200, p.text);
    await api().post('/crm/customers', { externalId: `amqp-${tag()}` });
    await waitFor(async () => (await attemptsOf(sub.uuid)).length > 1, 'an attempt', 15_000);
    assert.equal((await attemptsOf(sub.uuid))[0].outcome, 'success');
    assert.equal((await drainQueue(brokers.ch, queue)).length, 1);
  });

  it_('a customer created reaches a JetStream stream once for each subscription publishing to it, signed', async () => {
    const name = `BULB_TEST_${tag()}`;
    const subject = `bulb.test.${tag()}.events`;
    await brokers.jsm.streams.add({ name, subjects: [subject] });
    try {
      // Two subscriptions on one subject (two consumers' middleware reading one stream, say): each gets its message,
      // signed with its own secret. The stream's duplicate window keyed on the event alone kept the first and
      // acknowledged the second as a duplicate: a success logged for a message never stored.
      const subs = [await subscribe(`nats://127.0.0.1:4222?subject=${subject}`), await subscribe(`nats://127.0.0.1:4222?subject=${subject}`)];
      const c = await api().post('/crm/customers', { externalId: `nats-${tag()}` });
      for (const sub of subs) await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
      const info = await brokers.jsm.streams.info(name);
      assert.equal(info.state.messages, 2, 'exactly one message in the stream for each subscription');
      const seen = new Set<string>();
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await brokers.jsm.streams.getMessage(name, { seq });
        const headers: Record<string, string> = {};
        for (const [k] of m.header) headers[k] = m.header.get(k);
        const sub = subs.find((s) => JSON.parse(new TextDecoder().decode(m.data)).subscription === s.uuid)!;
        const ev = verifyWebhook(m.data, headers, sub.signingSecret);
        assert.equal(ev.eventType, 'customerCreate');
        assert.equal(ev.resource.uuid, c.body.uuid);
        assert.equal(headers['Nats-Msg-Id'], `${ev.uuid}:${sub.uuid}`, 'the event and subscription are the message id (JetStream drops a second publish of this delivery)');
        assert.equal(headers['webhook-id'], ev.uuid);
        for (const h of ['X-Tulip-Hmac-256', 'webhook-id', 'webhook-signature', 'X-Webhook-Version', 'Content-Type']) assert.ok(headers[h], `header ${h}`);
        seen.add(sub.uuid);
      }
      assert.equal(seen.size, 2);
      for (const sub of subs) {
        const [a] = await attemptsOf(sub.uuid);
        assert.equal(a.outcome, 'success');
        assert.equal(a.statusCode, null);
      }
    } finally {
      await brokers.jsm.streams.delete(name);
    }
  });

  it_('a server that is no AMQP broker (an SSH banner) is BROKER_UNREACHABLE saying so, not spelling its first bytes', async () => {
    const socks = new Set<net.Socket>();
    const banner = net.createServer((sock) => {
      socks.add(sock);
      sock.write('SSH-2.0-OpenSSH_9.6 internal-bastion\r\n');
    });
    await new Promise<void>((r) => banner.listen(0, '127.0.0.1', r));
    try {
      const sub = await subscribe(`amqp://guest:guest@127.0.0.1:${(banner.address() as net.AddressInfo).port}?exchange=x`, 'webhookTest');
      assert.equal((await api().post(`/integrations/webhooks/subscriptions/${sub.uuid}/test`, {})).status, 202);
      await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
      const a = (await attemptsOf(sub.uuid)).at(-1);
      assert.equal(a.errorCode, 'BROKER_UNREACHABLE', a.responseBody);
      assert.equal(a.responseBody, 'the server did not answer as an AMQP 0-9-1 broker');
      await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
    } finally {
      for (const sock of socks) sock.destroy(); // never read, so this end does not see the client's close by itself
      await new Promise((r) => banner.close(r));
    }
  });

  it_('a connection whose opening fails leaves no socket open: a server that answers a byte now and then is dropped after the attempt', async () => {
    // amqplib closes a socket it gave up on itself, but not one whose opening our deadline or close ended: it waited for
    // its idle timeout, which a server sending a byte now and then never lets fire (found 2026-11-30: open for good).
    // This one promises a 1,000-byte frame and sends it a byte every 200 ms.
    const open = new Set<net.Socket>();
    const timers = new Set<NodeJS.Timeout>();
    const slow = net.createServer((sock) => {
      open.add(sock);
      sock.resume(); // read, so the client's close is seen
      sock.on('error', () => {}).on('close', () => {
        open.delete(sock);
        clearInterval(timer);
      });
      sock.write(Buffer.from([1, 0, 0, 0, 0, 0x03, 0xe8])); // a method frame header on channel 0, size 1000
      const timer = setInterval(() => sock.write(Buffer.from([0])), 200);
      timers.add(timer);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    try {
      const sub = await subscribe(`amqp://guest:guest@127.0.0.1:${(slow.address() as net.AddressInfo).port}?exchange=x`, 'webhookTest');
      assert.equal((await api().post(`/integrations/webhooks/subscriptions/${sub.uuid}/test`, {})).status, 202);
      await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
      const a = (await attemptsOf(sub.uuid)).at(-1);
      assert.equal(a.errorCode, 'BROKER_TIMEOUT', a.responseBody);
      // No more attempts (a retry under way still fails at its deadline), then every connection made is closed.
      assert.equal((await api().patch(`/integrations/webhooks/subscriptions/${sub.uuid}`, { isActive: false })).status, 200);
      await waitFor(() => open.size === 0, 'the failed connections closed by the worker', 20_000);
      await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
    } finally {
      for (const t of timers) clearInterval(t);
      for (const sock of open) sock.destroy();
      await new Promise((r) => slow.close(r));
    }
  });

  it_('a NATS connection whose opening fails leaves no socket open: a server that never answers, or answers a byte now and then, is dropped after the attempt', async () => {
    // The nats client gives up at its timeout but leaves its socket to the server open while the server neither answers
    // nor closes (found 2026-11-30: still open 11 s after a 1.5 s deadline). One server here accepts and says nothing,
    // the other sends a byte every 200 ms (never a whole line, so never the INFO the client waits for).
    const open = new Set<net.Socket>();
    const timers = new Set<NodeJS.Timeout>();
    const listen = async (trickle: boolean) => {
      const server = net.createServer((sock) => {
        open.add(sock);
        sock.resume(); // read, so the client's close is seen
        const timer = trickle ? setInterval(() => sock.write('x'), 200) : undefined;
        if (timer) timers.add(timer);
        sock.on('error', () => {}).on('close', () => {
          open.delete(sock);
          clearInterval(timer);
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return server;
    };
    const servers = [await listen(false), await listen(true)];
    try {
      const subs = [];
      for (const server of servers) {
        const sub = await subscribe(`nats://127.0.0.1:${(server.address() as net.AddressInfo).port}?subject=bulb.silent`, 'webhookTest');
        assert.equal((await api().post(`/integrations/webhooks/subscriptions/${sub.uuid}/test`, {})).status, 202);
        subs.push(sub);
      }
      for (const sub of subs) {
        await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
        const a = (await attemptsOf(sub.uuid)).at(-1);
        assert.equal(a.errorCode, 'BROKER_TIMEOUT', a.responseBody);
        // No more attempts (a retry under way still fails at its deadline), then every connection made is closed.
        assert.equal((await api().patch(`/integrations/webhooks/subscriptions/${sub.uuid}`, { isActive: false })).status, 200);
      }
      await waitFor(() => open.size === 0, 'the failed connections closed by the worker', 20_000);
      for (const sub of subs) await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
    } finally {
      for (const t of timers) clearInterval(t);
      for (const sock of open) sock.destroy();
      for (const server of servers) await new Promise((r) => server.close(r));
    }
  });

  it_('refusals, missing routes and unreachable brokers are failed attempts with their errorCode; a replay delivers once fixed', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r)); // nothing listens there now
    const unbound = `bulb-test-${tag()}`;
    await brokers.ch.assertExchange(unbound, 'topic', { durable: false });
    const noStream = `bulb.nostream.${tag()}`;
    // A stream that refuses the message (full, discard new) answers 503 too, with a JetStream API error: logged as no
    // stream at all before (found by a probe).
    const fullStream = `BULB_FULL_${tag()}`;
    const fullSubject = `bulb.full.${tag()}`;
    await brokers.jsm.streams.add({ name: fullStream, subjects: [fullSubject], max_bytes: 16, discard: DiscardPolicy.New });
    const cases: [string, string][] = [
      [`amqp://guest:wrong-pass-${tag()}@127.0.0.1:5672?exchange=${unbound}`, 'BROKER_REFUSED'],
      [`amqp://guest:guest@127.0.0.1:5672?exchange=missing-${tag()}`, 'BROKER_REFUSED'],
      [`amqp://guest:guest@127.0.0.1:5672/no-vhost-${tag()}?exchange=${unbound}`, 'BROKER_REFUSED'], // RabbitMQ's 530 on connection.open
      [`amqp://guest:guest@127.0.0.1:5672?exchange=${unbound}&routingKey=nowhere`, 'NO_ROUTE'],
      [`amqp://guest:guest@127.0.0.1:${deadPort}?exchange=x`, 'BROKER_UNREACHABLE'],
      [`nats://127.0.0.1:4222?subject=${noStream}`, 'NO_ROUTE'],
      [`nats://127.0.0.1:4222?subject=${fullSubject}`, 'BROKER_REFUSED'],
      [`nats://127.0.0.1:${deadPort}?subject=x`, 'BROKER_UNREACHABLE'],
    ];
    const subs = [];
    for (const [url, code] of cases) {
      const sub = await subscribe(url, 'webhookTest');
      const t = await api().post(`/integrations/webhooks/subscriptions/${sub.uuid}/test`, {});
      assert.equal(t.status, 202, t.text);
      subs.push({ sub, code, url, delivery: t.body.deliveryUuid as string });
    }
    for (const { sub, code, url } of subs) {
      await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
      const a = (await attemptsOf(sub.uuid)).at(-1);
      assert.equal(a.outcome, 'failure', url);
      assert.equal(a.statusCode, null, url);
      assert.equal(a.errorCode, code, `${url}: ${a.responseBody}`);
      assert.ok(!String(a.responseBody).includes('wrong-pass'), 'no password in the log');
      if (url.includes('no-vhost')) assert.match(a.responseBody, /vhost/, 'the answer says what was refused');
      if (url.includes(fullSubject)) {
        assert.match(a.responseBody, /maximum bytes exceeded/, 'the stream\'s own reason');
        await brokers.jsm.streams.delete(fullStream);
      }
      const health = (await api().get(`/integrations/webhooks/subscriptions/${sub.uuid}`)).body.health;
      assert.equal(health.state, 'failing', url);
      assert.ok(health.consecutiveFailures >= 1);
    }
    // Replay: bind a queue for the NO_ROUTE one, let its retries run out, then retry by hand: it arrives.
    const noRoute = subs[3];
    await waitFor(async () => (await api().get(`/integrations/webhooks/deliveries?subscription=${noRoute.sub.uuid}`)).body.data[0].status === 'failed', 'the delivery state', 20_000);
    const { queue } = await brokers.ch.assertQueue('', { exclusive: true });
    await brokers.ch.bindQueue(queue, unbound, 'nowhere');
    const r = await api().post(`/integrations/webhooks/deliveries/${noRoute.delivery}/retry`, {});
    assert.equal(r.status, 202, r.text);
    await waitFor(async () => (await api().get(`/integrations/webhooks/deliveries?subscription=${noRoute.sub.uuid}`)).body.data[0].status === 'delivered', 'the delivery state', 15_000);
    const msgs = await drainQueue(brokers.ch, queue);
    assert.equal(msgs.length, 1);
    assert.equal(verifyWebhook(msgs[0].content, headerText(msgs[0].properties.headers ?? {}), noRoute.sub.signingSecret).eventType, 'webhookTest');
    for (const { sub } of subs) await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
  });

  it_('a PATCH writing the password as *** keeps it only with the stored URL unchanged: another URL is a 400 naming "url" until its password is given', async () => {
    const { exchange, queue } = await amqpQueue(brokers.ch);
    const query = `?exchange=${exchange}&routingKey=customer.events`;
    const sub = await subscribe(`amqp://guest:guest@127.0.0.1:5672${query}`);
    const path = `/integrations/webhooks/subscriptions/${sub.uuid}`;
    const elsewhere = [
      `amqp://guest:***@localhost:5672${query}`, // another host
      `amqp://guest:***@127.0.0.1:5673${query}`, // another port
      `amqps://guest:***@127.0.0.1${query}`, // another scheme
      `amqp://admin:***@127.0.0.1:5672${query}`, // another user
      `amqp://guest:***@127.0.0.1:5672/other${query}`, // another vhost
      `amqp://guest:***@127.0.0.1:5672?exchange=${exchange}&routingKey=other`, // another routing key
    ];
    for (const url of elsewhere) {
      const r = await api().patch(path, { url });
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
      assert.equal(r.body.errors[0].moreInfo, 'url', url);
      assert.match(r.body.errors[0].message, /give its password again/);
    }
    assert.equal((await api().get(path)).body.url, sub.url, 'nothing changed');
    // With its password given, the other host takes it (and the deliveries go there with it).
    const moved = await api().patch(path, { url: `amqp://guest:guest@localhost:5672${query}` });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.url, `amqp://guest:***@localhost:5672${query}`);
    await api().post('/crm/customers', { externalId: `moved-${tag()}` });
    await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
    assert.equal((await attemptsOf(sub.uuid))[0].outcome, 'success', JSON.stringify(await attemptsOf(sub.uuid)));
    assert.equal((await drainQueue(brokers.ch, queue)).length, 1);
    await api().delete(path);
  });

  it_('a broker URL with its scheme in capitals is a broker URL: stored in lower case with the password sealed, and published to', async () => {
    // AMQP:// was validated as amqp, then stored and sent as an HTTP URL with the password in clear (found by a probe).
    const { exchange, queue } = await amqpQueue(brokers.ch);
    const sub = await subscribe(`AMQP://guest:guest@127.0.0.1:5672?exchange=${exchange}&routingKey=customer.events`);
    assert.equal(sub.url, `amqp://guest:***@127.0.0.1:5672?exchange=${exchange}&routingKey=customer.events`);
    const stored = (await ctx.tdb.db.query(`SELECT url, destination_password FROM webhook_subscriptions WHERE uuid = $1`, [sub.uuid])).rows[0];
    assert.ok(!stored.url.includes('guest:guest'));
    assert.match(stored.destination_password, /^v1:/);
    await api().post('/crm/customers', { externalId: `caps-${tag()}` });
    await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
    assert.equal((await attemptsOf(sub.uuid))[0].outcome, 'success', JSON.stringify(await attemptsOf(sub.uuid)));
    assert.equal((await drainQueue(brokers.ch, queue)).length, 1);
  });

  it_('a "+" in a routing key or subject is a plus (AMQP URIs are percent-encoded, not form-encoded); %2B and %20 decode; the shown URL round-trips', async () => {
    // URLSearchParams read "+" as a space: routingKey=customer+events published to "customer events", and a NATS subject
    // with a "+" was refused (found 2026-11-30).
    const { exchange, queue: plusQueue } = await amqpQueue(brokers.ch, 'customer+events');
    const { queue: spaceQueue } = await brokers.ch.assertQueue('', { exclusive: true });
    await brokers.ch.bindQueue(spaceQueue, exchange, 'customer events');
    const t = tag();
    const stream = `BULB_PLUS_${t}`;
    await brokers.jsm.streams.add({ name: stream, subjects: [`bulb.plus+${t}`] });
    try {
      const plus = await subscribe(`amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}&routingKey=customer+events`);
      const encoded = await subscribe(`amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}&routingKey=customer%2Bevents`);
      const space = await subscribe(`amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}&routingKey=customer%20events`);
      const nats = await subscribe(`nats://127.0.0.1:4222?subject=bulb.plus+${t}`);
      // Stored and shown with the plus as %2B, which a process of the release before 080 reads as a plus too (migration
      // 083: it read a "+" as a space, and may still run during an upgrade).
      assert.equal(plus.url, `amqp://guest:***@127.0.0.1:5672?exchange=${exchange}&routingKey=customer%2Bevents`);
      assert.equal(new URLSearchParams(new URL(plus.url).search).get('routingKey'), 'customer+events', 'as the release before read it');
      assert.equal(nats.url, `nats://127.0.0.1:4222?subject=bulb.plus%2B${t}`);
      // The shown URL sent back keeps the stored one (and its password).
      const back = await api().patch(`/integrations/webhooks/subscriptions/${plus.uuid}`, { url: plus.url });
      assert.equal(back.status, 200, back.text);
      assert.equal(back.body.url, plus.url);
      await api().post('/crm/customers', { externalId: `plus-${t}` });
      for (const sub of [plus, encoded, space, nats]) {
        await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
        const a = (await attemptsOf(sub.uuid))[0];
        assert.equal(a.outcome, 'success', `${a.url}: ${a.errorCode} ${a.responseBody}`);
      }
      const plusMsgs = await drainQueue(brokers.ch, plusQueue);
      assert.deepEqual(plusMsgs.map((m) => m.fields.routingKey), ['customer+events', 'customer+events'], 'the "+" and %2B subscriptions');
      assert.deepEqual(new Set(plusMsgs.map((m) => JSON.parse(m.content.toString('utf8')).subscription)), new Set([plus.uuid, encoded.uuid]));
      const spaceMsgs = await drainQueue(brokers.ch, spaceQueue);
      assert.deepEqual(spaceMsgs.map((m) => JSON.parse(m.content.toString('utf8')).subscription), [space.uuid], 'only the %20 subscription');
      assert.equal((await brokers.jsm.streams.info(stream)).state.messages, 1);
      for (const sub of [plus, encoded, space, nats]) await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
    } finally {
      await brokers.jsm.streams.delete(stream);
    }
  });

  it_('an AMQP user name and password are sent to the broker as UTF-8, as written in the URL', async () => {
    // amqplib decodes a URL's credentials with the Latin-1 unescape(): p%C3%A9 reached RabbitMQ as "pÃ©" and was refused
    // (found by a probe). What the broker gets is read off the wire by a proxy in front of it.
    const seen: Buffer[] = [];
    const proxy = net.createServer((client) => {
      const upstream = net.connect(5672, '127.0.0.1');
      client.on('data', (b) => seen.push(Buffer.from(b)));
      client.pipe(upstream).pipe(client);
      const end = () => (client.destroy(), upstream.destroy());
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const port = (proxy.address() as net.AddressInfo).port;
      const sub = await subscribe(`amqp://us%C3%A9r:p%C3%A9-%40%2F@127.0.0.1:${port}?exchange=x`, 'webhookTest');
      await api().post(`/integrations/webhooks/subscriptions/${sub.uuid}/test`, {});
      await waitFor(async () => (await attemptsOf(sub.uuid)).length > 0, 'an attempt', 15_000);
      const wire = Buffer.concat(seen);
      assert.ok(wire.includes(Buffer.from('\u0000usér\u0000pé-@/', 'utf8')), `PLAIN response as UTF-8: ${wire.toString('latin1').slice(0, 300)}`);
      assert.equal(wire.includes(Buffer.from('pÃ©', 'utf8')), false, 'not decoded as Latin-1');
      assert.equal((await attemptsOf(sub.uuid))[0].errorCode, 'BROKER_REFUSED', 'no such user: refused, as the broker says');
    } finally {
      proxy.close();
    }
  });

  it_('bad broker URLs are a 400 naming "url" and change nothing', async () => {
    const before = await subscriptionCount();
    const bad = [
      'amqp://guest:guest@127.0.0.1:5672', // no exchange
      'amqp://guest:guest@127.0.0.1:5672?routingKey=a', // no exchange
      'amqps://127.0.0.1?exchange=', // empty exchange
      'nats://127.0.0.1:4222', // no subject
      'nats://127.0.0.1:4222?subject=bulb.*', // a wildcard is no subject to publish to
      'nats://127.0.0.1:4222/path?subject=a', // a path
      'amqp://127.0.0.1?exchange=x&exchnage=y', // unknown parameter
      'kafka://127.0.0.1:9092?topic=x', // unknown scheme
      'mqtt://127.0.0.1?topic=x',
      'amqp://guest:g%ZZ@127.0.0.1:5672?exchange=x', // a password with a malformed escape
      'nats://u:p%ZZ@127.0.0.1:4222?subject=a',
      'amqp://g%E0%A4@127.0.0.1:5672?exchange=x', // a user name whose escapes are no UTF-8
      'amqp://127.0.0.1?exchange=x&routingKey=%zz+', // a query with a malformed escape (its "+" stored as %2B changed it)
      'nats://127.0.0.1:4222?subject=a%E0%A4', // escapes that are no UTF-8
      `amqp://127.0.0.1?exchange=${'x'.repeat(256)}`, // AMQP names are at most 255 bytes
      `amqp://127.0.0.1?exchange=x&routingKey=${'%C3%A9'.repeat(128)}`, // 128 characters, 256 bytes
      `amqp://127.0.0.1/${'v'.repeat(256)}?exchange=x`, // the vhost
    ];
    for (const url of bad) {
      const r = await api().post('/integrations/webhooks/subscriptions', { url, eventType: 'customerCreate' });
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
      assert.equal(r.body.errors[0].moreInfo, 'url', url);
    }
    const longest = await subscribe(`amqp://127.0.0.1?exchange=${'x'.repeat(255)}&routingKey=${'%C3%A9'.repeat(127)}`);
    await api().delete(`/integrations/webhooks/subscriptions/${longest.uuid}`); // 255 and 254 bytes are taken
    const withAuth = await api().post('/integrations/webhooks/subscriptions', { url: 'nats://127.0.0.1:4222?subject=a', eventType: 'customerCreate', authMethod: 'BEARER', bearerToken: 't' });
    assert.equal(withAuth.status, 400);
    assert.equal(withAuth.body.errors[0].moreInfo, 'authMethod');
    // A patch to a bad broker URL changes nothing either.
    const ok = await subscribe(`nats://127.0.0.1:4222?subject=bulb.ok.${tag()}`);
    const p = await api().patch(`/integrations/webhooks/subscriptions/${ok.uuid}`, { url: 'amqp://127.0.0.1:5672' });
    assert.equal(p.status, 400);
    assert.equal((await api().get(`/integrations/webhooks/subscriptions/${ok.uuid}`)).body.url, ok.url);
    // The address guard covers broker hosts (here without BULB_WEBHOOK_ALLOW_PRIVATE).
    for (const url of ['amqp://guest:guest@127.0.0.1:5672?exchange=x', 'nats://10.1.2.3:4222?subject=a', 'amqps://[::1]?exchange=x']) {
      await assert.rejects(newSubscription({ url, eventTypes: ['customerCreate'] }, false, async () => {}, [5, 20, 125]), (e: any) => {
        assert.equal(e.status, 400);
        assert.match(e.message, /not allowed: .*(loopback|private)/);
        return true;
      });
    }
    await api().delete(`/integrations/webhooks/subscriptions/${ok.uuid}`);
    assert.equal(await subscriptionCount(), before + 2, 'only the valid subscriptions were created');
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });

// The address guard again at connect time (a URL written while private addresses were allowed, or a name that
// resolves elsewhere since): the worker's publisher refuses the address without connecting.
it('a broker address the guard refuses at connect time is a BLOCKED_ADDRESS attempt', { skip: skip || false }, async () => {
  const { BrokerDestinations } = await import('../../src/webhooks/destinations/registry.ts');
  const brokers = new BrokerDestinations({ timeoutMs: 2000, allowPrivate: false });
  try {
    for (const url of ['amqp://guest:***@127.0.0.1:5672?exchange=x', 'nats://localhost:4222?subject=a']) {
      const row = { subscription_id: '1', subscription_uuid: crypto.randomUUID(), url, destination_password: 'guest' } as Claimed;
      const r = await brokers.send(row, { id: crypto.randomUUID(), body: '{}', headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.ok, false, url);
      assert.equal(r.errorCode, 'BLOCKED_ADDRESS', `${url}: ${r.responseBody}`);
      assert.equal(r.statusCode, null);
    }
  } finally {
    await brokers.close();
  }
});
