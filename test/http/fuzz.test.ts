// Property: whatever arrives — arbitrary JSON or text bodies, query strings, path segments, Content-Type
// and Accept-Language headers, methods, tokens — at every route of every version, the answer is never a
// 5xx, every 4xx is in the SPEC §3 error shape, and every answer matches the served OpenAPI document.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY, errorCodes, type Res } from '../helpers/server.ts';
import { checkContract } from '../helpers/contract.ts';
import { Registry } from '../../src/http/versioning/registry.ts';
import { allChanges, allRoutes } from '../../src/wiring.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

const ascii = (max = 40) => fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: max });
/** Strings a client might put anywhere: text, unicode, numbers-as-text, dates, NUL, percent signs. */
const text = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.integer().map(String),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('', ' ', '0', '-1', '251', 'true', 'null', '%', '\u0000', 'a\u0000b', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', 'x'.repeat(300), 'fz-1'),
);
const FIELDS = [
  'externalId', 'firstName', 'lastName', 'emails', 'phones', 'addresses', 'socialProfiles', 'loyaltyTier', 'status', 'uuid',
  'ids', 'mergeWithCustomerIds', 'name', 'scopes', 'url', 'eventType', 'eventTypes', 'isActive', 'authMethod', 'bearerToken', 'basicUsername', 'basicPassword', 'maxInFlight', 'since',
  'associateUuid', 'role', 'type', 'body', 'channel', 'direction', 'sentAt', 'orderedAt', 'currency', 'total', 'lineItems',
  'dueAt', 'subject', 'category', 'value', 'sku', 'sharedAt', 'message', 'email', 'storeId', 'grant_type', 'client_id', 'client_secret',
];
const value: fc.Arbitrary<unknown> = fc.oneof(text, fc.jsonValue({ maxDepth: 2 }), fc.array(text, { maxLength: 3 }), fc.array(fc.dictionary(fc.constantFrom(...FIELDS), text, { maxKeys: 4 }), { maxLength: 3 }));
const shapedObject = fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 6 });
const body = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: shapedObject.map((o) => JSON.stringify(o)) },
  { weight: 2, arbitrary: fc.array(shapedObject, { maxLength: 4 }).map((a) => JSON.stringify(a)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 50 }) },
  { weight: 1, arbitrary: fc.constantFrom('{', '{"a":}', '[1,]', '\u0000', '{"externalId":"a\\u0000"}', '{"__proto__":{"a":1}}', '{"constructor":{"prototype":{}}}', '1e999', '"\\ud800"') },
);
const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8') },
  { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/jsonx', '*/*', ';', '') },
  { weight: 1, arbitrary: ascii() },
);
const segment = fc.oneof(
  { weight: 3, arbitrary: text.map((s) => encodeURIComponent(s)) },
  { weight: 2, arbitrary: fc.constantFrom('fz-1', 'fz-2', '00000000-0000-0000-0000-000000000000') },
  { weight: 1, arbitrary: fc.uuid().map(String) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%E0%A4%A', '%00', '%C0%AF', '%2F', '..', '.', '%FF%FE', 'x'.repeat(600)) },
);
const QUERY_KEYS = ['limit', 'cursor', 'status', 'email', 'externalId', 'updatedSince', 'dryRun', 'since', 'until', 'subscription', 'eventType', 'outcome', 'q', 'hours'];
const query = fc.oneof(
  fc.constant(''),
  fc.array(fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), fc.string({ maxLength: 10 })), text), { maxLength: 4 }).map((kv) =>
    kv.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'),
  ),
  fc.constantFrom('limit=1&limit=2', 'limit=%', 'cursor=%zz', 'a[b]=1', '=', '&&&', 'limit=1e3', `email=${'a'.repeat(20000)}`),
);
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

await describeEachDb('fuzz', (ctx) => {
  let targets: { method: string; path: string }[] = [];

  before(async () => {
    const registry = new Registry(allRoutes(ctx.srv.services), allChanges);
    for (const [v, list] of registry.byVersion) {
      for (const vr of list) targets.push({ method: vr.def.method, path: `/api/${v}${vr.def.path}` });
    }
    targets.push(
      { method: 'GET', path: '/tulip_api/v2/crm/customers' },
      { method: 'GET', path: '/tulip_api/v2/crm/customers/:id' },
      { method: 'GET', path: '/api/versions' },
      { method: 'GET', path: '/api/:v/openapi.json' },
      { method: 'POST', path: '/auth/oauth2/token' },
      { method: 'GET', path: '/api/:v/crm/customers' },
      { method: 'GET', path: '/health' },
      { method: 'GET', path: '/ready' },
    );
    targets = targets.filter((t, i) => targets.findIndex((u) => u.method === t.method && u.path === t.path) === i);
    assert.ok(targets.length > 40, `only ${targets.length} routes found`);
    for (const id of ['fz-1', 'fz-2']) assert.equal((await ctx.srv.api.post('/crm/customers', { externalId: id })).status, 201);
  });

  it(`no 5xx and no 4xx outside the error shape, on every route of every version (${RUNS} requests)`, async () => {
    const request = fc.record({
      target: fc.integer({ min: 0, max: 10_000 }),
      method: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      segments: fc.array(segment, { minLength: 4, maxLength: 4 }),
      query,
      body,
      contentType,
      acceptLanguage: fc.option(ascii(), { nil: undefined }),
      auth: fc.oneof(
        { weight: 8, arbitrary: fc.constant(`Bearer ${ADMIN_KEY}`) },
        { weight: 1, arbitrary: fc.constantFrom(undefined, 'Bearer', 'Bearer bulb_key_x', 'Basic Zm9vOmJhcg==', 'bearer  ' + ADMIN_KEY) },
        { weight: 1, arbitrary: ascii(60) },
      ),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const t = targets[r.target % targets.length];
        const method = r.method ?? t.method;
        let i = 0;
        const path = t.path.replace(/:[A-Za-z0-9_]+/g, () => r.segments[i++ % r.segments.length]);
        const url = `${ctx.srv.url}${path}${r.query ? `?${r.query}` : ''}`;
        const headers: Record<string, string> = {};
        if (r.auth !== undefined) headers.authorization = r.auth;
        if (r.acceptLanguage !== undefined) headers['accept-language'] = r.acceptLanguage;
        const sendBody = r.body !== undefined && method !== 'GET' && method !== 'HEAD';
        if (sendBody || method === 'GET') headers['content-type'] = r.contentType;
        const res = await fetch(url, { method, headers, body: sendBody ? r.body : undefined });
        const textBody = await res.text();
        const where = `${method} ${path.slice(0, 200)}?${r.query.slice(0, 200)} → ${res.status} ${textBody.slice(0, 300)}`;
        assert.ok(res.status < 500, where);
        await checkContract(ctx.srv.url, { method, url, status: res.status, contentType: res.headers.get('content-type'), text: textBody });
        if (res.status >= 400 && method !== 'HEAD') {
          let parsed: unknown;
          try {
            parsed = JSON.parse(textBody);
          } catch {
            assert.fail(`not JSON: ${where}`);
          }
          errorCodes({ status: res.status, body: parsed, text: textBody, headers: res.headers } as Res);
          assert.equal(res.headers.get('content-language'), 'en', where);
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
  });
});
