// The published contract (issue 11): the document's shape (named schemas, per-status errors, OAuth2), the
// contract check itself (it must catch a mismatch), and the HTTP defects fixed with it: body-less POST with
// a JSON Content-Type, unknown query parameters, 204 without a body, /docs headers and logo.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { checkContract } from '../helpers/contract.ts';
import { startReceiver, type Receiver } from '../webhooks/receiver.ts';
import { VERSION_IDS } from '../../src/http/versioning/versions.ts';

const RESOURCES = [
  'Customer', 'CustomerPage', 'Order', 'FollowUp', 'Note', 'Message', 'Preference', 'ProductShare', 'Association', 'Associate',
  'MergeResult', 'MergeRecord', 'Subscription', 'Delivery', 'Attempt', 'ApiKey', 'ApiKeyCreated', 'AuthClient', 'AuthClientCreated',
  'Error', 'TokenResponse', 'OAuthError', 'BulkResult', 'CustomerBulkItem',
];

await describeEachDb('contract', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => receiver?.close());

  it('the 2026-11 document names every resource and refers to it by $ref (no inlined Customer)', async () => {
    const doc = (await api().get('/api/2026-11/openapi.json')).body;
    for (const name of RESOURCES) assert.ok(doc.components.schemas[name], `components.schemas.${name}`);
    const get = doc.paths['/api/2026-11/crm/customers/{id}'].get;
    assert.deepEqual(get.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Customer' });
    const bulk = doc.paths['/api/2026-11/crm/customers/bulk'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(bulk.items, { $ref: '#/components/schemas/CustomerBulkItem' }, 'bulk items are typed');
    // An import is a file sent as the body (read raw by its route): a client generator must see both media types.
    const upload = doc.paths['/api/2026-11/crm/imports'].post.requestBody;
    assert.equal(upload.required, true);
    assert.deepEqual(Object.keys(upload.content).sort(), ['application/x-ndjson', 'text/csv']);
    const text = JSON.stringify(doc.paths);
    assert.ok(!text.includes('"mergedInto"'), 'Customer is never inlined in paths');
    assert.equal(doc.info.license.identifier, 'MIT');
    assert.ok(doc.servers.length > 0);
  });

  it('every version: camelCase operationIds, descriptions, per-status error responses with examples, no default', async () => {
    for (const v of VERSION_IDS) {
      const doc = (await api().get(`/api/${v}/openapi.json`)).body;
      const ids = new Set<string>();
      for (const [p, item] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(item)) {
          const where = `${v} ${method} ${p}`;
          assert.match(op.operationId, /^[a-z][A-Za-z0-9]*$/, where);
          assert.ok(!ids.has(op.operationId), `${where}: operationId unique`);
          ids.add(op.operationId);
          assert.ok(op.description?.length > 10, `${where}: description`);
          assert.equal(op.responses.default, undefined, `${where}: no default response`);
          const errors = Object.keys(op.responses).filter((s) => Number(s) >= 400);
          assert.ok(errors.includes('400'), `${where}: 400 declared`);
          for (const s of errors) assert.ok(op.responses[s].content['application/json'].example, `${where} ${s}: example`);
          if (p.startsWith('/api/')) {
            assert.ok(errors.includes('401') && errors.includes('429'), `${where}: 401 and 429`);
            assert.deepEqual(op.security, [{ bearer: [] }, { oauth2: [op['x-scope']] }], where);
          }
        }
      }
      assert.equal(doc.components.securitySchemes.oauth2.flows.clientCredentials.tokenUrl, '/auth/oauth2/token');
      assert.ok(doc.paths['/auth/oauth2/token'].post.requestBody.content['application/x-www-form-urlencoded']);
    }
  });

  it('DELETE of an API key, an auth client and a subscription: 204 without a body, documented without content', async () => {
    const doc = (await api().get('/api/2026-11/openapi.json')).body;
    for (const p of ['/api/2026-11/integrations/apiKeys/{uuid}', '/api/2026-11/integrations/authClients/{uuid}', '/api/2026-11/integrations/webhooks/subscriptions/{uuid}']) {
      const del = doc.paths[p].delete;
      assert.deepEqual(Object.keys(del.responses).filter((s) => s.startsWith('2')), ['204'], p);
      assert.equal(del.responses['204'].content, undefined, p);
    }
    const key = await api().post('/integrations/apiKeys', { name: 'doomed', scopes: ['read'] });
    const revoked = await api().delete(`/integrations/apiKeys/${key.body.uuid}`);
    assert.equal(revoked.status, 204);
    assert.equal(revoked.text, '');
    const client = await api().post('/integrations/authClients', { name: 'doomed', scopes: ['read'] });
    const gone = await api().delete(`/integrations/authClients/${client.body.uuid}`, { 'content-type': 'application/json' });
    assert.equal(gone.status, 204);
    assert.equal(gone.text, '');
  });

  it('a body-less POST with Content-Type: application/json is served (…/test, …/rotateSecret, …/retry)', async () => {
    const json = { 'content-type': 'application/json' };
    const sub = await ctx.srv.api.withVersion('2025-04').post('/integrations/webhooks/subscriptions', { url: receiver.url, eventType: 'webhookTest' });
    assert.equal(sub.status, 201, sub.text);
    const base = `/integrations/webhooks/subscriptions/${sub.body.uuid}`;
    const test = await api().req('POST', `${base}/test`, undefined, json);
    assert.equal(test.status, 202, test.text);
    const rotated = await api().req('POST', `${base}/rotateSecret`, undefined, json);
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.signingSecret, /^whsec_/);
    const retry = await api().req('POST', `/integrations/webhooks/deliveries/${test.body.deliveryUuid}/retry`, undefined, json);
    assert.ok(retry.status === 202 || retry.status === 409, retry.text);
    assert.ok(!errorCodesOrEmpty(retry).includes('InvalidJson'), retry.text);
    // A route that takes a body still refuses an empty JSON one.
    const empty = await api().req('POST', '/crm/customers', undefined, json);
    assert.deepEqual(errorCodes(empty), ['InvalidJson']);
    const del = await api().delete(base, json);
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
  });

  it('unknown query parameters are a 400 naming them, also on routes without a query schema', async () => {
    for (const path of ['/integrations/apiKeys?foo=1', '/crm/customers/nobody?foo=1', '/integrations/webhooks/eventTypes?foo=1']) {
      const r = await api().get(path);
      assert.equal(r.status, 400, path);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError'], path);
      assert.match(r.body.errors[0].message, /foo/, path);
    }
    assert.equal((await api().get('/integrations/apiKeys?limit=1')).status, 200, 'known parameters still work');
  });

  it('/docs: Bulb logo (not Fastify\'s) and the console\'s security headers', async () => {
    for (const path of ['/docs', '/docs/static/swagger-initializer.js', '/docs/static/index.html']) {
      const r = await api().withToken(undefined).get(path);
      assert.equal(r.status, 200, path);
      const csp = r.headers.get('content-security-policy') ?? '';
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.match(csp, /script-src 'self'(;|$)/, path);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(r.headers.get('referrer-policy'), 'no-referrer', path);
    }
    const init = (await api().withToken(undefined).get('/docs/static/swagger-initializer.js')).text;
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([^']+)'/.exec(init);
    assert.ok(logo, 'a logo is set');
    const svg = Buffer.from(logo[1], 'base64').toString('utf8');
    assert.ok(!/fastify/i.test(svg), 'not the Fastify logo');
    assert.match(svg, /#f2b705/, "Bulb's bulb");
    assert.match((await api().withToken(undefined).get('/docs')).text, /Bulb API reference/);
  });

  it('the contract check catches an undeclared status, a body off its schema, a body on a 204 and a non-error-shaped error', async () => {
    const base = ctx.srv.url;
    const customer = (await api().post('/crm/customers', { externalId: 'contract-1' })).body;
    const ok = { method: 'GET', url: `${base}/api/2026-11/crm/customers/contract-1`, status: 200, contentType: 'application/json; charset=utf-8', text: JSON.stringify(customer) };
    await checkContract(base, ok);
    await assert.rejects(checkContract(base, { ...ok, status: 418 }), /GET \/api\/2026-11\/crm\/customers\/\{id\} answered 418/);
    const { firstName: _drop, ...missing } = customer;
    await assert.rejects(checkContract(base, { ...ok, text: JSON.stringify(missing) }), /→ 200 .*body must have required property 'firstName'/);
    await assert.rejects(checkContract(base, { ...ok, text: JSON.stringify({ ...customer, status: 'zombie' }) }), /body\/status must be equal to one of the allowed values/);
    const del = { method: 'DELETE', url: `${base}/api/2026-11/integrations/apiKeys/00000000-0000-0000-0000-000000000000`, status: 204, contentType: null, text: '' };
    await checkContract(base, del);
    await assert.rejects(checkContract(base, { ...del, text: '{}' }), /declares no body but sent/);
    await assert.rejects(checkContract(base, { method: 'GET', url: `${base}/api/1999-01/x`, status: 404, contentType: 'application/json', text: '{"error":"x"}' }), /not the Error shape/);
    await assert.rejects(checkContract(base, { ...ok, url: `${base}/tulip_api/v2/crm/customers/contract-1`, status: 201 }), /2022-04/);
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });

function errorCodesOrEmpty(r: { body: any }): string[] {
  return Array.isArray(r.body?.errors) ? r.body.errors.map((e: any) => e.errorCode) : [];
}
