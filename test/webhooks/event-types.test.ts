// SPEC §10.2: in 2026-11 a subscription listens to several event types (eventTypes); older versions read the
// first one (with X-Bulb-Warning when there are more) and writing eventType replaces the list. Both directions:
// old clients against data written by new ones, and new clients against data written by old ones.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';

const SUBS = '/integrations/webhooks/subscriptions';

await describeEachDb('subscriptions with several event types', (ctx) => {
  const v26 = () => ctx.srv.api.withVersion('2026-11');
  const old = (v = '2025-04') => ctx.srv.api.withVersion(v);
  const url = 'https://8.8.8.8/hook';

  it('an old client reads the first type of a 2026-11 subscription, warned that there are more', async () => {
    const c = await v26().post(SUBS, { url, eventTypes: ['customerUpdate', 'customerCreate', 'customerMerge'], isActive: false });
    assert.equal(c.status, 201, c.text);
    assert.deepEqual(c.body.eventTypes, ['customerUpdate', 'customerCreate', 'customerMerge'], 'order kept');
    assert.ok(!('eventType' in c.body));
    assert.equal(c.headers.get('x-bulb-warning'), null);
    for (const v of ['2022-08', '2025-04']) {
      const g = await old(v).get(`${SUBS}/${c.body.uuid}`);
      assert.equal(g.status, 200);
      assert.equal(g.body.eventType, 'customerUpdate');
      assert.ok(!('eventTypes' in g.body));
      assert.equal(g.headers.get('x-bulb-warning'), 'subscription has 3 event types; use 2026-11 to see all');
    }
    const l = await old().get(SUBS);
    const item = l.body.data.find((s: any) => s.uuid === c.body.uuid);
    assert.equal(item.eventType, 'customerUpdate');
    assert.ok(!('eventTypes' in item));
    assert.match(String(l.headers.get('x-bulb-warning')), new RegExp(`subscription ${c.body.uuid} has 3 event types; use 2026-11 to see all`));
    // A patch of another field through an old version keeps the list; the answer warns.
    const p = await old().patch(`${SUBS}/${c.body.uuid}`, { url: 'https://8.8.4.4/hook' });
    assert.equal(p.status, 200);
    assert.equal(p.headers.get('x-bulb-warning'), 'subscription has 3 event types; use 2026-11 to see all');
    assert.deepEqual((await v26().get(`${SUBS}/${c.body.uuid}`)).body.eventTypes, ['customerUpdate', 'customerCreate', 'customerMerge']);
    // Writing eventType through an old version replaces the list with that one type.
    const w = await old().patch(`${SUBS}/${c.body.uuid}`, { eventType: 'customerNoteCreate' });
    assert.equal(w.status, 200);
    assert.equal(w.body.eventType, 'customerNoteCreate');
    assert.equal(w.headers.get('x-bulb-warning'), null);
    assert.deepEqual((await v26().get(`${SUBS}/${c.body.uuid}`)).body.eventTypes, ['customerNoteCreate']);
  });

  it('a new client reads what an old client wrote as a one-type list, and may extend it', async () => {
    const c = await old('2022-08').post(SUBS, { url, eventType: 'customerMerge', isActive: false });
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.eventType, 'customerMerge');
    assert.ok(c.body.signingSecret.startsWith('whsec_'));
    const g = await v26().get(`${SUBS}/${c.body.uuid}`);
    assert.deepEqual(g.body.eventTypes, ['customerMerge']);
    assert.ok(!('eventType' in g.body));
    const p = await v26().patch(`${SUBS}/${c.body.uuid}`, { eventTypes: ['customerMerge', 'webhookDeliveryFailed'] });
    assert.deepEqual(p.body.eventTypes, ['customerMerge', 'webhookDeliveryFailed']);
    const filtered = await v26().get(`${SUBS}?eventType=webhookDeliveryFailed`);
    assert.ok(filtered.body.data.some((s: any) => s.uuid === c.body.uuid), 'the eventType filter matches any type of the list');
  });

  it('the fan-out delivers to every subscription whose list contains the type', async () => {
    const a = (await v26().post(SUBS, { url, eventTypes: ['customerMerge', 'customerCreate'] })).body;
    const b = (await v26().post(SUBS, { url, eventTypes: ['customerUpdate'] })).body;
    const cust = await v26().post('/crm/customers', { externalId: `et-${crypto.randomUUID()}` });
    assert.equal(cust.status, 201);
    const rows = (await ctx.tdb.db.query(
      `SELECT s.uuid FROM webhook_deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE e.resource_uuid = $1`, [cust.body.uuid])).rows.map((r) => r.uuid);
    assert.ok(rows.includes(a.uuid), 'the second type of the list matches');
    assert.ok(!rows.includes(b.uuid));
    for (const s of [a, b]) await v26().delete(`${SUBS}/${s.uuid}`);
  });

  it('each version validates its own shape; the list is 1–20 distinct known types', async () => {
    const bad = async (client: ReturnType<typeof v26>, body: unknown) => {
      const r = await client.post(SUBS, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual([...new Set(errorCodes(r))], ['InvalidParameterError']);
    };
    await bad(v26(), { url, eventType: 'customerCreate' });
    await bad(v26(), { url, eventTypes: [] });
    await bad(v26(), { url, eventTypes: ['customerCreate', 'customerCreate'] });
    await bad(v26(), { url, eventTypes: ['nope'] });
    await bad(v26(), { url, eventTypes: 'customerCreate' });
    await bad(v26(), { url, eventTypes: Array.from({ length: 21 }, () => 'customerCreate') });
    await bad(old(), { url, eventTypes: ['customerCreate'] });
    const p = await old().patch(`${SUBS}/${crypto.randomUUID()}`, { eventTypes: ['customerCreate'] });
    assert.equal(p.status, 400);
    const before = (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM webhook_subscriptions`)).rows[0].n;
    await bad(v26(), { url, eventTypes: ['customerCreate', 'x'] });
    assert.equal((await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM webhook_subscriptions`)).rows[0].n, before, 'nothing written');
  });

  it('the OpenAPI documents eventTypes in 2026-11 and eventType before', async () => {
    const doc26 = (await v26().get('/api/2026-11/openapi.json')).text;
    const doc25 = (await v26().get('/api/2025-04/openapi.json')).text;
    assert.match(doc26, /"eventTypes"/);
    assert.doesNotMatch(doc25, /"eventTypes"/);
  });
});
