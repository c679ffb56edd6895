// Lean attempt rows (issue 25 item 3; docs/delivery.md "What an attempt row holds"): an attempt row stores its
// sending config's version, its signatures and timestamp, and the logs API rebuilds url, headers and body from them:
// the logs show exactly what was sent, a subscription changed afterwards (URL, auth, webhookVersion, a secret
// rotation) does not rewrite them, and attempts written before migration 051 read as they did.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription } from '../helpers/server.ts';
import { backends, emptyDb } from '../helpers/db.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { migrate, migrationFiles } from '../../src/db/migrate.ts';
import { listAttempts, type AttemptRow } from '../../src/webhooks/attempts-store.ts';
import { shapeAttempt } from '../../src/webhooks/service.ts';
import { LeanConfigs, leanRequest } from '../../src/webhooks/attempt-request.ts';
import { buildRequest } from '../../src/webhooks/request.ts';
import { newSigningSecret } from '../../src/webhooks/signing.ts';
import type { Claimed } from '../../src/webhooks/claimed.ts';
import { ok, status, waitFor, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.2,0.4', BULB_WEBHOOK_TIMEOUT_MS: '3000' };

await describeEachDb('lean attempt rows', (ctx) => {
  const api = () => ctx.srv.api;
  let rx: Receiver;
  useWorkerAndReceiver(ctx, ENV, (_w, r) => (rx = r));

  const subscribe = (body: Record<string, unknown>): Promise<{ uuid: string }> => createSubscription(api(), { url: rx.url, eventType: 'customerCreate', ...body });
  const logsOf = async (q: string) => (await api().get(`/integrations/webhooks/logs?limit=250&${q}`)).body.data as any[];

  it('the logs show what was sent, and still after the subscription changes (URL, auth, version, rotation)', async () => {
    const bearer = await subscribe({ authMethod: 'BEARER', bearerToken: 'tok-lean-1' });
    const basic = await subscribe({ authMethod: 'BASIC', basicUsername: 'ann', basicPassword: 'pw-lean' });
    const rotated = await subscribe({ webhookVersion: '2025-04' });
    assert.equal((await api().post(`/integrations/webhooks/subscriptions/${rotated.uuid}/rotateSecret`)).status, 200);
    const subs = [bearer.uuid, basic.uuid, rotated.uuid];
    // The BASIC subscription's first attempt fails (500): a failed attempt with its next attempt, then a success.
    let failedOnce = false;
    rx.behave((req, res, r) => {
      if (!failedOnce && r.body?.subscription === basic.uuid) {
        failedOnce = true;
        return status(500, 'nope, ann')(req, res, r);
      }
      return ok(req, res, r);
    });
    assert.equal((await api().post('/crm/customers', { externalId: 'lean-1' })).status, 201);
    assert.equal((await api().post(`/integrations/webhooks/subscriptions/${bearer.uuid}/test`)).status, 202);
    const count = async () => (await Promise.all(subs.map((s) => logsOf(`subscription=${s}`)))).flat().length;
    await waitFor(async () => (await count()) === 5, 'five attempts (one failed, retried)');
    rx.behave(ok);

    const read = async () => {
      const bySub = await Promise.all(subs.map((s) => api().get(`/integrations/webhooks/logs?limit=250&subscription=${s}`)));
      const all = bySub.flatMap((r) => r.body.data as any[]);
      const byDelivery = await Promise.all([...new Set(all.map((a) => a.deliveryUuid))].map((d) => api().get(`/integrations/webhooks/logs?delivery=${d}`)));
      const deliveries = await Promise.all(subs.map((s) => api().get(`/integrations/webhooks/deliveries?limit=250&subscription=${s}`)));
      return { bySub: bySub.map((r) => r.text), byDelivery: byDelivery.map((r) => r.text), deliveries: deliveries.map((r) => r.text), all };
    };
    const before = await read();

    // Each attempt's logged request is the one the receiver got: every header (credentials redacted), the body, the URL.
    for (const a of before.all) {
      const got = rx.received.find((r) => r.headers['webhook-signature'] === a.requestHeaders['webhook-signature']);
      assert.ok(got, `the request of attempt ${a.uuid} was received`);
      assert.equal(a.url, rx.url);
      assert.equal(a.requestBody, got.raw.toString('utf8'));
      for (const [k, v] of Object.entries(a.requestHeaders as Record<string, string>)) {
        if (k === 'Authorization') assert.match(v, /^(Bearer|Basic) \[redacted\]$/);
        else assert.equal(v, got.headers[k.toLowerCase()], k);
      }
      assert.deepEqual(Object.keys(a.requestHeaders).sort(), ['Accept', 'Content-Type', 'User-Agent', 'X-Tulip-Hmac-256', 'X-Webhook-Version', 'webhook-id', 'webhook-signature', 'webhook-timestamp',
        ...(a.subscriptionUuid === rotated.uuid ? [] : ['Authorization'])].sort());
      const asJsonb = (await ctx.tdb.db.query<{ h: Record<string, string> }>(`SELECT $1::jsonb AS h`, [JSON.stringify(a.requestHeaders)])).rows[0].h;
      assert.deepEqual(Object.keys(a.requestHeaders), Object.keys(asJsonb), 'keys in the order jsonb gave them before 051');
    }
    assert.equal(before.all.filter((a) => a.subscriptionUuid === rotated.uuid)[0].requestHeaders['webhook-signature'].split(' ').length, 2, 'two signatures during the rotation');
    assert.deepEqual(before.all.filter((a) => a.outcome === 'failure').map((a) => [a.responseBody, a.nextAttemptAt !== null]), [['nope, ann', true]]);
    assert.equal(new Set(before.all.map((a) => a.uuid)).size, 5, 'five distinct attempt uuids');
    for (const a of before.all) assert.match(a.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    // Stored lean: no url, headers, body, uuid or event in the rows; a version each.
    const rows = (await ctx.tdb.db.query<{ n: number; lean: number }>(
      `SELECT count(*)::int AS n, (count(*) FILTER (WHERE url IS NULL AND request_headers IS NULL AND request_body IS NULL AND uuid IS NULL
         AND event_id IS NULL AND version_id IS NOT NULL AND signatures IS NOT NULL))::int AS lean FROM webhook_attempts`,
    )).rows[0];
    assert.deepEqual(rows, { n: 5, lean: 5 });

    // The subscriptions change: URL and auth, auth and webhookVersion, another rotation.
    const patch = async (uuid: string, body: Record<string, unknown>) => assert.equal((await api().patch(`/integrations/webhooks/subscriptions/${uuid}`, body)).status, 200);
    await patch(bearer.uuid, { url: `${rx.url}-moved`, authMethod: 'BASIC', basicUsername: 'bob', basicPassword: 'pw2' });
    await patch(basic.uuid, { authMethod: 'BEARER', bearerToken: 'tok-lean-2', webhookVersion: '2025-04' });
    assert.equal((await api().post(`/integrations/webhooks/subscriptions/${rotated.uuid}/rotateSecret`)).status, 200);
    const after = await read();
    assert.deepEqual(after.bySub, before.bySub, 'the logs by subscription read exactly as before');
    assert.deepEqual(after.byDelivery, before.byDelivery, 'the logs by delivery read exactly as before');
    assert.deepEqual(after.deliveries, before.deliveries, 'the deliveries read exactly as before');

    // A new delivery reads its own config: the new URL and auth.
    assert.equal((await api().post('/crm/customers', { externalId: 'lean-2' })).status, 201);
    const fresh = await waitFor(async () => (await logsOf(`subscription=${bearer.uuid}`)).find((a) => a.url === `${rx.url}-moved`), 'the moved attempt');
    assert.equal(fresh.requestHeaders.Authorization, 'Basic [redacted]');
    const versions = (await ctx.tdb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_subscription_versions`)).rows[0].n;
    assert.ok(versions >= 4, `a version per config used (${versions})`);
  });

  it('a request that would not rebuild exactly is stored whole', () => {
    const src = {
      event_uuid: '0b6f7f5e-0000-4000-8000-000000000001', subscription_uuid: '0b6f7f5e-0000-4000-8000-000000000002', event_created_at: '2026-11-25 12:00:00.123456+00',
      event_type: 'customerCreate', resource_type: 'Customer', resource_uuid: '0b6f7f5e-0000-4000-8000-000000000003', resource_external_id: 'x', source: 'TULIP_API',
    };
    const sub = { subscriptionId: '1', url: 'https://example.com/h', webhookVersion: '2025-04' };
    const body = '{"uuid":"0b6f7f5e-0000-4000-8000-000000000001","subscription":"0b6f7f5e-0000-4000-8000-000000000002","createdAt":"2026-11-25T12:00:00.123Z","eventType":"customerCreate","resourceType":"Customer","resource":{"uuid":"0b6f7f5e-0000-4000-8000-000000000003","externalId":"x"},"source":"TULIP_API"}';
    const headers = {
      'Content-Type': 'application/json', 'X-Tulip-Hmac-256': 'ab'.repeat(32), 'webhook-id': src.event_uuid, 'webhook-timestamp': '1795608002',
      'webhook-signature': `v1,${Buffer.alloc(32, 7).toString('base64')}`,
    };
    const lean = leanRequest(headers, body, src, sub, 'X-Tulip-Hmac-256', 1795608000_500);
    assert.deepEqual(lean?.signed.timestampSkew, 2, 'a timestamp two seconds after the start');
    assert.equal(leanRequest(headers, `${body} `, src, sub, 'X-Tulip-Hmac-256', 0), null, 'another body');
    assert.equal(leanRequest({ ...headers, 'webhook-id': 'other' }, body, src, sub, 'X-Tulip-Hmac-256', 0), null, 'another message id');
    assert.equal(leanRequest({ ...headers, 'webhook-signature': 'v2,abc' }, body, src, sub, 'X-Tulip-Hmac-256', 0), null, 'another signature scheme');
    assert.equal(leanRequest({ ...headers, 'X-Tulip-Hmac-256': 'AB'.repeat(32) }, body, src, sub, 'X-Tulip-Hmac-256', 0), null, 'upper-case hex');
    assert.deepEqual(leanRequest({}, body, src, sub, 'X-Tulip-Hmac-256', 0)?.signed, { signatures: null, timestampSkew: null }, 'nothing signed: no headers');
  });
}, ENV);

/** The last migration before 051. */
const BEFORE = Math.max(...migrationFiles().filter((m) => m.version < 51).map((m) => m.version));

/** listAttempts as it read before migration 051 (its walk of the primary key). */
const OLD_LOGS = `SELECT a.id, a.uuid, d.uuid AS delivery_uuid, e.uuid AS event_uuid, s.uuid AS subscription_uuid, e.event_type, a.url,
    a.attempt_number, a.started_at, a.duration_ms, a.status_code, a.error_code, a.outcome, a.next_attempt_at,
    a.request_headers, a.request_body, a.response_body
  FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = a.event_id
    JOIN webhook_subscriptions s ON s.id = a.subscription_id
  ORDER BY a.id DESC LIMIT 51`;

for (const backend of await backends()) {
  describe(`lean attempt rows: upgrade (${backend})`, () => {
    it(`attempts written at migration ${BEFORE} read the same after 051`, async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, BEFORE);
        const sub = (await t.db.query<{ id: string }>(
          `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`,
        )).rows[0].id;
        const event = (await t.db.query<{ id: string }>(
          `INSERT INTO events (event_type, resource_type, resource_uuid, source, created_at) VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'TULIP_API', '2026-11-25T09:59:59Z') RETURNING id`,
        )).rows[0].id;
        // Made before their attempts (the fixture's times are fixed: a delivery made today would be days after them).
        const delivery = (await t.db.query<{ id: string }>(`INSERT INTO webhook_deliveries (event_id, subscription_id, created_at) VALUES ($1, $2, '2026-11-25T09:59:59.5Z') RETURNING id`, [event, sub])).rows[0].id;
        // As recordResults wrote them: the request whole (a success, and a failure that sent nothing).
        await t.db.query(
          `INSERT INTO webhook_attempts (delivery_id, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code,
             error_code, outcome, next_attempt_at, request_headers, request_body, response_body)
           VALUES ($1, $2, $3, 1, 'https://example.com/h', '2026-11-25T10:00:00.250Z', 0, NULL, 'SECRET_UNREADABLE', 'failure', '2026-11-25T10:00:05Z', '{}', '{"a":1}', 'not sent'),
                  ($1, $2, $3, 2, 'https://example.com/h', '2026-11-25T10:00:06.5Z', 31, 200, NULL, 'success', NULL,
                   '{"Content-Type":"application/json","User-Agent":"Bulb-Webhooks/0.1.0","Authorization":"Bearer [redacted]","webhook-id":"x","webhook-timestamp":"1795600806","webhook-signature":"v1,abc","X-Tulip-Hmac-256":"00"}',
                   '{"a":1}', '{"ok":true}')`,
          [delivery, sub, event],
        );
        const old = (await t.db.query<AttemptRow>(OLD_LOGS)).rows.map(shapeAttempt);
        assert.equal(old.length, 2);
        await migrate(t.db);
        const now = (await listAttempts(t.db, { limit: 50 }, null)).map(shapeAttempt);
        assert.deepEqual(now, old);
        assert.equal(JSON.stringify(now), JSON.stringify(old), 'the same text, header order included');
      } finally {
        await t.close();
      }
    });
  });
}

// LeanConfigs (the worker's lean records): the form leanRequest gives for every request buildRequest makes, its config
// checked once per subscription's config and kept, a changed config noticed, and a config that does not rebuild its
// requests checked each time (stored whole).
describe('lean records of built requests (LeanConfigs)', () => {
  const secret = newSigningSecret();
  const claimed = (i: number, over: Partial<Claimed> = {}): Claimed => ({
    event_uuid: `0b6f7f5e-0000-4000-8000-${String(i).padStart(12, '0')}`, subscription_uuid: '0b6f7f5e-0000-4000-8000-100000000000',
    event_created_at: '2026-11-25 12:00:00.123456+00', event_type: 'customerCreate', resource_type: 'Customer',
    resource_uuid: '0b6f7f5e-0000-4000-8000-200000000000', resource_external_id: null, source: 'TULIP_API', subscription_id: '7',
    url: 'amqp://127.0.0.1:5672?exchange=x', webhook_version: '2025-04', auth_method: 'NONE', bearer_token: null, basic_username: null,
    basic_password: null, signing_secret: secret, previous_secrets: [], ...over,
  } as Claimed);
  const both = (configs: LeanConfigs, c: Claimed, hmacHeader: string, startedAtMs: number, nowMs = startedAtMs) => {
    const req = buildRequest(c, hmacHeader, nowMs);
    const sub = { subscriptionId: c.subscription_id, url: c.url, webhookVersion: c.webhook_version };
    return { kept: configs.of(req.logHeaders, req.body, c, sub, hmacHeader, startedAtMs, req.signed), checked: leanRequest(req.logHeaders, req.body, c, sub, hmacHeader, startedAtMs) };
  };

  it('gives what leanRequest gives, request after request, and follows a changed config', () => {
    const configs = new LeanConfigs();
    const shapes: Partial<Claimed>[] = [
      {}, {}, { previous_secrets: [newSigningSecret(), newSigningSecret()] }, { auth_method: 'BEARER', bearer_token: 'tok' },
      { auth_method: 'BEARER', bearer_token: 'tok' }, { auth_method: 'BASIC', basic_username: 'ann', basic_password: 'pw' },
      { webhook_version: '2022-08' }, { url: 'nats://127.0.0.1:4222?subject=s' }, {},
    ];
    let first: unknown;
    shapes.forEach((over, i) => {
      const start = 1795608000_000 + i * 1_700;
      for (const skewMs of [0, 2_000]) {
        const { kept, checked } = both(configs, claimed(i * 2 + skewMs, over), 'X-Tulip-Hmac-256', start, start + skewMs);
        assert.ok(checked !== null, 'a built request is lean');
        assert.deepEqual(kept, checked, `request ${i} (${JSON.stringify(over)}, timestamp ${skewMs} ms after the start)`);
      }
      if (i === 0) first = both(configs, claimed(99), 'X-Tulip-Hmac-256', 1795608000_000).kept!.config;
      if (i === 1) assert.equal(both(configs, claimed(98), 'X-Tulip-Hmac-256', 1795608000_000).kept!.config, first, 'one config object kept per subscription');
    });
  });

  it('a config whose requests do not rebuild is checked each time: stored whole', () => {
    const configs = new LeanConfigs();
    for (let i = 0; i < 3; i++) {
      const { kept, checked } = both(configs, claimed(i), 'webhook-id', 1795608000_000); // the hex HMAC's header overwritten by webhook-id
      assert.equal(checked, null);
      assert.equal(kept, null);
    }
  });
});
