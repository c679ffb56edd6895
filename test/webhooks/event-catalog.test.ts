// The event catalog (issue 26 item 4; src/events/catalog.ts): every event type has a description, a JSON Schema
// of its body and an example that validates against it; 2026-11's GET …/eventTypes answers the catalog and older
// versions the names; every version's OpenAPI document carries the types its subscriptions can receive in its
// `webhooks` section; real deliveries of every type match their schema; and the shared receiver catches a body
// that does not (which is how every delivery of the suite is checked, see test/webhooks/receiver.ts).
// The body and its fields are Tulip's: https://docs.tulip.com/integrating/webhooks/eventsoverview
import assert from 'node:assert/strict';
import { before, after, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { CATALOG } from '../../src/events/catalog.ts';
import { EVENT_TYPES } from '../../src/events/emit.ts';
import { VERSION_IDS } from '../../src/http/versioning/versions.ts';
import { describeEachDb } from '../helpers/suite.ts';
import { eventBodyProblems } from '../helpers/event-check.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { startReceiver, status, waitFor, type Receiver } from './receiver.ts';

const SUBS = '/integrations/webhooks/subscriptions';
const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.05', BULB_WEBHOOK_TIMEOUT_MS: '3000' };
const SOURCE = 'TULIP_API'; // https://docs.tulip.com/integrating/webhooks/eventsoverview: TULIP_APP, TULIP_API

describe('the event catalog', () => {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats.default(ajv);

  it('has one entry per event type, each with a description, a schema and an example that validates against it', () => {
    assert.deepEqual(CATALOG.map((e) => e.name), [...EVENT_TYPES]);
    for (const e of CATALOG) {
      assert.ok(e.description.length > 10, e.name);
      const validate = ajv.compile(e.schema);
      assert.equal(validate(e.example), true, `${e.name}: ${JSON.stringify(validate.errors)}`);
      assert.equal(e.example.eventType, e.name);
      assert.equal(e.example.resourceType, e.resourceType);
    }
  });

  it('pins eventType and resourceType per type and takes exactly the fields of the body', () => {
    const create = CATALOG.find((e) => e.name === 'customerCreate')!;
    const validate = ajv.compile(create.schema);
    const bad = (b: unknown) => assert.equal(validate(b), false, JSON.stringify(b));
    bad({ ...create.example, eventType: 'customerUpdate' });
    bad({ ...create.example, resourceType: 'CustomerNote' });
    bad({ ...create.example, extra: 1 });
    bad({ ...create.example, resource: { uuid: (create.example.resource as any).uuid } });
    bad({ ...create.example, source: 'somewhere' });
    bad({ ...create.example, createdAt: 'yesterday' });
    const { subscription: _s, ...noSubscription } = create.example;
    bad(noSubscription);
    // The operational types name no external id; a note may have one or not.
    const failed = CATALOG.find((e) => e.name === 'webhookDeliveryFailed')!;
    assert.equal(ajv.compile(failed.schema)({ ...failed.example, resource: { uuid: (failed.example.resource as any).uuid, externalId: 'x' } }), false);
    const note = CATALOG.find((e) => e.name === 'customerNoteCreate')!;
    assert.equal(ajv.compile(note.schema)({ ...note.example, resource: { uuid: (note.example.resource as any).uuid, externalId: null } }), true);
  });
});

describe('the shared receiver checks every body it receives against the catalog', () => {
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
  });
  after(async () => rx?.close());

  it('records a body that does not match its type, and close() throws naming it', async () => {
    const good = CATALOG[0].example;
    const post = (b: unknown) => fetch(rx.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) });
    await post(good);
    await post({ ...good, eventType: 'customerExploded' });
    await post({ ...good, resourceType: 'Order' });
    await post({ hello: 'not an event' }); // no eventType: not an event body, not checked
    assert.equal(rx.received.length, 4);
    assert.equal(rx.violations.length, 2);
    assert.match(rx.violations[0].problems.join(), /customerExploded.*not in the event catalog/);
    assert.match(rx.violations[1].problems.join(), /resourceType must be equal to constant/);
    // close() fails loudly; a second receiver proves it without losing this one.
    const other = await startReceiver();
    await fetch(other.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...good, source: 7 }) });
    await assert.rejects(other.close(), /do not match the event catalog[\s\S]*source must be string/);
    // This test sent them on purpose: take them back so that the process does not fail at exit.
    assert.equal(rx.takeViolations().length, 2);
    assert.deepEqual(rx.violations, []);
    assert.deepEqual(eventBodyProblems(good), []);
  });
});

await describeEachDb('event catalog over HTTP', (ctx) => {
  const api = (v = '2026-11') => ctx.srv.api.withVersion(v);

  it('2026-11 GET …/eventTypes answers the catalog: name, resourceType, description, schema and example per type', async () => {
    const r = await api().get('/integrations/webhooks/eventTypes');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, JSON.parse(JSON.stringify({ data: CATALOG.map(({ name, resourceType, description, schema, example }) => ({ name, resourceType, description, schema, example })) })));
    assert.equal(r.body.data.find((e: any) => e.name === 'customerNoteUpdate').schema.properties.eventType.const, 'customerNoteUpdate');
  });

  it('older versions keep their list of names: eventType, resourceType, description, no schema', async () => {
    for (const v of VERSION_IDS.filter((x) => x >= '2022-08' && x < '2026-11')) {
      const r = await api(v).get('/integrations/webhooks/eventTypes');
      assert.equal(r.status, 200, `${v}: ${r.text}`);
      assert.deepEqual(r.body, { data: CATALOG.map((e) => ({ eventType: e.name, resourceType: e.resourceType, description: e.description })) }, v);
    }
  });

  it('every version\'s OpenAPI document lists in `webhooks` the types its subscriptions can receive, each body the catalog schema', async () => {
    for (const v of VERSION_IDS) {
      const doc = (await api().withToken(undefined).get(`/api/${v}/openapi.json`)).body;
      const create = doc.paths[`/api/${v}${SUBS}`]?.post;
      const deref = (s: any) => (s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
      if (!create) {
        // 2022-04 serves no subscriptions, but a later version's subscription may have webhookVersion 2022-04: what it
        // receives is documented (found by a probe: it was documented nowhere).
        assert.deepEqual(Object.keys(doc.webhooks), CATALOG.map((e) => e.name), `${v}: every type a subscription with webhookVersion ${v} may receive`);
        assert.match(doc.webhooks[CATALOG[0].name].post.description, new RegExp(`webhookVersion: "${v}"`));
      } else {
        const body = deref(create.requestBody.content['application/json'].schema);
        const accepted = body.properties.eventTypes?.items ?? body.properties.eventType;
        assert.deepEqual(Object.keys(doc.webhooks), deref(accepted).enum, v);
      }
      for (const e of CATALOG) {
        const op = doc.webhooks[e.name].post;
        const content = op.requestBody.content['application/json'];
        assert.deepEqual(doc.components.schemas[content.schema.$ref.split('/').pop()], JSON.parse(JSON.stringify(e.schema)), `${v} ${e.name}`);
        assert.deepEqual(content.example, e.example);
        assert.ok(op.parameters.some((p: any) => p.in === 'header' && p.name === 'X-Tulip-Hmac-256'));
        // What each answer does, 410 Gone included (it said a 4xx is retried; a 410 disables the subscription).
        assert.match(op.responses['4XX'].description, /410 Gone disables the subscription at once/, `${v} ${e.name}`);
      }
    }
  });
});

await describeEachDb('every event type, delivered, matches its schema', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let worker: TestWorker;
  let rx: Receiver;
  let down: Receiver;
  before(async () => {
    worker = await startWorker(ctx.tdb.db, ENV);
    [rx, down] = await Promise.all([startReceiver(), startReceiver(status(500, 'down'))]);
  });
  after(async () => {
    await worker?.stop();
    for (const r of [rx, down]) await r?.close();
  });

  it('a subscription to every type receives each type once at least, every body valid', async () => {
    const all = await api().post(SUBS, { url: rx.url, eventTypes: [...EVENT_TYPES] });
    assert.equal(all.status, 201, all.text);
    const failing = await api().post(SUBS, { url: down.url, eventTypes: ['customerCreate'] });
    assert.equal(failing.status, 201, failing.text);

    assert.equal((await api().post('/crm/customers', { externalId: 'cat-1', firstName: 'Ada' })).status, 201);
    assert.equal((await api().post('/crm/customers', { externalId: 'cat-2' })).status, 201);
    assert.equal((await api().patch('/crm/customers/cat-1', { lastName: 'Lovelace' })).status, 200);
    const note = await api().post('/crm/customerNotes', { customer: 'cat-1', comments: 'first', type: 'CUSTOMER_OPTIN_LOG' });
    assert.equal(note.status, 201, note.text);
    assert.equal((await api().put(`/crm/customerNotes/${note.body.uuid}`, { customer: 'cat-1', comments: 'second', type: 'CUSTOMER_OPTIN_LOG' })).status, 200);
    const merge = await api().post('/crm/customers/cat-1/merge', { mergeWithCustomerIds: ['cat-2'] });
    assert.equal(merge.status, 200, merge.text);
    assert.equal((await api().post(`/crm/merges/${merge.body.mergeUuid}/undo`, {})).status, 200);
    assert.equal((await api().post(`${SUBS}/${all.body.uuid}/test`, {})).status, 202);
    // The failing subscription exhausts its one retry (webhookDeliveryFailed), then, its failure moved 121 h
    // back, is disabled by its next failure (webhookSubscriptionDisabled).
    await waitFor(async () => rx.received.some((r) => r.body?.eventType === 'webhookDeliveryFailed'), 'webhookDeliveryFailed');
    await ctx.tdb.db.query(`UPDATE webhook_subscriptions SET failing_since = now() - interval '121 hours' WHERE uuid = $1`, [failing.body.uuid]);
    assert.equal((await api().post('/crm/customers', { externalId: 'cat-3' })).status, 201);

    const seen = await waitFor(() => {
      const types = new Set(rx.received.map((r) => r.body?.eventType));
      return EVENT_TYPES.every((t) => types.has(t)) ? types : null;
    }, 'every event type delivered');
    assert.deepEqual([...seen].sort(), [...EVENT_TYPES].sort());
    for (const r of rx.received) {
      assert.deepEqual(eventBodyProblems(r.body), [], r.raw.toString());
      assert.equal(r.body.subscription, all.body.uuid);
      assert.equal(r.body.source, SOURCE);
    }
    assert.deepEqual(rx.violations, []);
  });
}, ENV);
