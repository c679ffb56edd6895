// SPEC §2 version rules: path versions, the legacy prefix, response headers, /api/versions, per-version
// OpenAPI documents and /docs.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import http from 'node:http';
import { ADMIN_KEY, errorCodes, startServer } from '../helpers/server.ts';
import { Registry } from '../../src/http/versioning/registry.ts';
import { allChanges, allRoutes } from '../../src/wiring.ts';
import { VERSION_IDS } from '../../src/http/versioning/versions.ts';

const DEPRECATED_2022_04 = Math.floor(Date.parse('2022-08-01T00:00:00Z') / 1000);

await describeEachDb('versions', (ctx) => {
  const api = () => ctx.srv.api;

  it('the legacy prefix serves exactly /api/2022-04 (same data, same headers)', async () => {
    await api().post('/crm/customers', { externalId: 'v-legacy', firstName: 'Lea' });
    const legacy = await api().get('/tulip_api/v2/crm/customers/v-legacy');
    const direct = await api().withVersion('2022-04').get('/crm/customers/v-legacy');
    assert.equal(legacy.status, 200);
    assert.deepEqual(legacy.body, direct.body);
    assert.equal(legacy.headers.get('x-api-version'), '2022-04');
    assert.equal(legacy.headers.get('deprecation'), `@${DEPRECATED_2022_04}`);
    // A route not in 2022-04 is not in the legacy prefix either.
    const patch = await api().patch('/tulip_api/v2/crm/customers/v-legacy', { firstName: 'X' });
    assert.equal(patch.status, 404);
    assert.deepEqual(errorCodes(patch), ['EndpointNotInVersion']);
  });

  it('the deprecation Link: under BULB_PUBLIC_URL when set; a Host header that is not a host is not echoed (the link is relative)', async () => {
    const srv = await startServer(ctx.tdb.db, { BULB_PUBLIC_URL: 'https://api.example.com/bulb/' });
    try {
      const r = await srv.api.get('/tulip_api/v2/crm/customers');
      assert.equal(r.headers.get('link'), '<https://api.example.com/bulb/api/versions>; rel="deprecation"');
    } finally {
      await srv.close();
    }
    const withHost = (host: string) => new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get(`${ctx.srv.url}/api/2022-04/crm/customers`, { headers: { host, authorization: `Bearer ${ADMIN_KEY}` } }, (res) => {
        res.resume();
        resolve(res);
      });
      req.on('error', reject);
    });
    const evil = await withHost('evil.example>; rel="x", <https://evil.example');
    assert.equal(evil.headers.link, '</api/versions>; rel="deprecation"');
    const fine = await withHost('bulb.example:8443');
    assert.equal(fine.headers.link, '<http://bulb.example:8443/api/versions>; rel="deprecation"');
  });

  it('BULB_SERVICE_NAME changes the legacy prefix', async () => {
    const srv = await startServer(ctx.tdb.db, { BULB_SERVICE_NAME: 'acme' });
    try {
      const r = await srv.api.get('/acme_api/v2/crm/customers');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-api-version'), '2022-04');
      const old = await srv.api.get('/tulip_api/v2/crm/customers');
      assert.equal(old.status, 404);
      assert.deepEqual(errorCodes(old), ['NotFound']);
    } finally {
      await srv.close();
    }
  });

  it('X-Api-Version on every versioned answer (errors too); Deprecation and Link on 2022-04 only', async () => {
    for (const v of VERSION_IDS) {
      const ok = await api().withVersion(v).get('/crm/customers');
      const err = await api().withVersion(v).get('/crm/customers/missing');
      const anon = await api().withVersion(v).withToken(undefined).get('/crm/customers');
      for (const r of [ok, err, anon]) {
        assert.equal(r.headers.get('x-api-version'), v);
        if (v === '2022-04') {
          assert.equal(r.headers.get('deprecation'), `@${DEPRECATED_2022_04}`);
          const link = r.headers.get('link') ?? '';
          assert.match(link, /^<http:\/\/127\.0\.0\.1:\d+\/api\/versions>; rel="deprecation"$/);
        } else {
          assert.equal(r.headers.get('deprecation'), null);
          assert.equal(r.headers.get('link'), null);
        }
      }
    }
  });

  it('an unknown version is 404 UnsupportedApiVersion listing the supported ones', async () => {
    for (const v of ['2023-01', 'latest', 'v2', '2025-04x']) {
      const r = await api().get(`/api/${v}/crm/customers`);
      assert.equal(r.status, 404, v);
      assert.deepEqual(errorCodes(r), ['UnsupportedApiVersion']);
      assert.match(r.body.errors[0].message, /2022-04, 2022-08, 2025-04/);
      assert.equal(r.headers.get('x-api-version'), null);
    }
  });

  it('a route outside the version is 404 EndpointNotInVersion naming the versions that serve it', async () => {
    const r = await api().withVersion('2022-04').post('/crm/customers/bulk', [{ externalId: 'x' }]);
    assert.equal(r.status, 404);
    assert.deepEqual(errorCodes(r), ['EndpointNotInVersion']);
    assert.match(r.body.errors[0].moreInfo, /2022-08, 2025-04/);
    // A path that is a route of its own in other versions, where this version has an {id} route for the method: the
    // route, not an id (until 2026-11-29 "body must be object" for the PUT's array, "customer "export" not found").
    const put = await api().req('PUT', '/tulip_api/v2/crm/customers/bulk', [{ externalId: 'x' }]);
    assert.deepEqual([put.status, errorCodes(put)], [404, ['EndpointNotInVersion']], put.text);
    assert.match(put.body.errors[0].moreInfo, /2022-08/);
    const exp = await api().withVersion('2025-12').get('/crm/customers/export');
    assert.deepEqual([exp.status, errorCodes(exp)], [404, ['EndpointNotInVersion']], exp.text);
    assert.equal(exp.body.errors[0].moreInfo, 'served by versions: 2026-11');
    // An id is still an id, and a method no version serves at that path is the {id} route's.
    assert.deepEqual(errorCodes(await api().withVersion('2025-12').get('/crm/customers/no-such-one')), ['NotFound']);
    assert.deepEqual(errorCodes(await api().withVersion('2026-11').patch('/crm/customers/export', { firstName: 'x' })), ['NotFound']);
  });

  it("Tulip's 2025-08 and 2025-12 documents give their bulk's own limits: 1,000 items, a body of 10 MiB (Bulb's: 100, 1 MiB)", async () => {
    // The texts said 1–100 and 1 MiB in every version, though the schema and the server take 1,000 and 10 MiB there.
    for (const [v, items, mib] of [['2025-08', 1000, 10], ['2025-12', 1000, 10], ['2026-11', 100, 1]] as const) {
      const doc = (await api().withToken(undefined).get(`/api/${v}/openapi.json`)).body;
      const op = doc.paths[`/api/${v}/crm/customers/bulk`].post;
      assert.equal(op.responses['413'].description, `Body over ${mib} MiB`, v);
      const body = op.requestBody.content['application/json'].schema;
      const resolved = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
      assert.equal(resolved.maxItems, items, v);
    }
  });

  it('GET /api/versions needs no auth and lists the versions', async () => {
    const r = await api().withToken(undefined).get('/api/versions');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      versions: [
        { version: '2022-04', status: 'deprecated', releasedOn: '2022-04-01', deprecatedOn: '2022-08-01' },
        { version: '2022-08', status: 'supported', releasedOn: '2022-08-01' },
        { version: '2025-04', status: 'supported', releasedOn: '2025-04-01' },
        { version: '2025-08', status: 'supported', releasedOn: '2025-08-01' },
        { version: '2025-12', status: 'supported', releasedOn: '2025-12-01' },
        { version: '2026-11', status: 'supported', releasedOn: '2026-11-01' },
      ],
      latest: '2026-11',
    });
    // Read-only documents and probes: another method is a 405 naming GET (POST /api/versions was a 404
    // UnsupportedApiVersion "versions" until 2026-11-28).
    for (const path of ['/api/versions', '/api/2026-11/openapi.json', '/health', '/ready', '/metrics']) {
      const r = await api().withToken(undefined).post(path, {});
      assert.equal(r.status, 405, `${path}: ${r.text}`);
      assert.deepEqual(errorCodes(r), ['MethodNotAllowed']);
      assert.equal(r.headers.get('allow'), 'GET, HEAD');
    }
    assert.deepEqual(errorCodes(await api().withToken(undefined).post('/api/2023-01/openapi.json', {})), ['UnsupportedApiVersion']);
  });

  it('GET /api/{v}/openapi.json (no auth) lists exactly the routes of that version', async () => {
    const registry = new Registry(allRoutes(ctx.srv.services), allChanges);
    for (const v of VERSION_IDS) {
      const r = await api().withToken(undefined).get(`/api/${v}/openapi.json`);
      assert.equal(r.status, 200, v);
      assert.equal(r.body.openapi, '3.1.0');
      assert.equal(r.body.info.version, v);
      const documented = Object.entries(r.body.paths as Record<string, Record<string, unknown>>)
        .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
        .sort();
      const expected = registry.byVersion.get(v)!
        .map((vr) => `${vr.def.method} /api/${v}${vr.def.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`)
        .concat('POST /auth/oauth2/token')
        .sort();
      assert.deepEqual(documented, expected, v);
    }
    const old = (await api().get('/api/2022-04/openapi.json')).body;
    assert.equal(old.paths['/api/2022-04/crm/customers/{id}'].patch, undefined, 'PATCH is not in 2022-04');
    assert.ok(old.paths['/api/2022-04/crm/customers/{id}'].put);
    const cur = (await api().get('/api/2025-04/openapi.json')).body;
    assert.ok(cur.paths['/api/2025-04/crm/customers/{id}'].patch, 'PATCH is in 2025-04');
    const bad = await api().get('/api/2023-01/openapi.json');
    assert.equal(bad.status, 404);
    assert.deepEqual(errorCodes(bad), ['UnsupportedApiVersion']);
  });

  it('the documents declare the headers: Idempotency-Key where a route takes one, X-Request-Id, X-Api-Version, and 2022-04 deprecated', async () => {
    // Declared nowhere before 2026-11-28 (found by probing): a generated client could not send or read them.
    const doc = (await api().withToken(undefined).get('/api/2026-11/openapi.json')).body;
    const ops = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((p) => Object.values(p)).filter((o) => o.operationId && o.responses && o.parameters);
    assert.ok(ops.length > 50);
    const header = (o: any, name: string) => o.parameters.find((p: any) => p.in === 'header' && p.name === name);
    const takesKey = ops.filter((o) => header(o, 'Idempotency-Key')).map((o) => o.operationId).sort();
    assert.deepEqual(takesKey, [
      'associatesCreate', 'customerAttributesCreate', 'customerNotesCreate', 'customersAssociatesCreate', 'customersCreate', 'customersFollowUpsCreate',
      'customersMerge', 'customersMessagesCreate', 'customersNotesCreate', 'customersOrdersCreate', 'customersPreferencesCreate',
      'customersProductSharesCreate', 'mergesUndo', 'webhooksReplaysStart', 'webhooksSubscriptionsCreate',
    ], 'merge, undo, replay and the creates take one');
    for (const o of ops.filter((o) => header(o, 'Idempotency-Key'))) assert.ok(o.responses['409'], `${o.operationId} declares the key's 409`);
    for (const o of ops) {
      assert.ok(header(o, 'X-Request-Id'), o.operationId);
      const ok = Object.entries(o.responses).filter(([code]) => code.startsWith('2')).map(([, r]) => r as any);
      for (const r of ok) assert.ok(r.headers?.['X-Api-Version'] && r.headers?.['X-Request-Id'], o.operationId);
      assert.equal(o.deprecated, undefined, o.operationId);
    }
    const merge = doc.paths['/api/2026-11/crm/customers/{id}/merge'].post;
    assert.ok(merge.responses['200'].headers['Idempotent-Replayed']);
    const old = (await api().withToken(undefined).get('/api/2022-04/openapi.json')).body;
    const legacy = old.paths['/api/2022-04/crm/customers/{id}/merge'].put;
    assert.equal(legacy.deprecated, true);
    assert.ok(legacy.responses['200'].headers.Deprecation && legacy.responses['200'].headers.Link);
    assert.ok(header(legacy, 'Idempotency-Key'), 'the legacy merge takes one too');
  });

  // Tulip's versions after 2025-04 (SPEC §16; named by Tulip's TGEN pages, e.g.
  // https://docs.tulip.com/integrating/aerial/versioning for the /api/{version}/ routing): their change log is
  // not readable, so they serve exactly what 2025-04 serves, and are ordered before Bulb's 2026-11.
  it('2025-08 and 2025-12 serve what 2025-04 serves: same routes, same shapes but the bulk\'s limit, their own X-Api-Version', async () => {
    const strip = (doc: any, v: string) => JSON.parse(JSON.stringify({ paths: doc.paths, components: doc.components }).replaceAll(`/api/${v}/`, '/api/V/'));
    const base = strip((await api().get('/api/2025-04/openapi.json')).body, '2025-04');
    // But for the bulk's limit: 1,000 items in Tulip's versions (changes/2026-11-bulk-limit.ts), 100 in 2025-04.
    const bulkBodies = (doc: any) => ['post', 'put'].map((m) => doc.paths['/api/V/crm/customers/bulk'][m].requestBody.content['application/json'].schema);
    for (const b of bulkBodies(base)) {
      assert.equal(b.maxItems, 100);
      b.maxItems = 1000;
    }
    // And its body's: 10 MiB there, 1 MiB in 2025-04.
    for (const m of ['post', 'put']) {
      const tooLarge = base.paths['/api/V/crm/customers/bulk'][m].responses['413'];
      assert.equal(tooLarge.description, 'Body over 1 MiB');
      tooLarge.description = 'Body over 10 MiB';
    }
    for (const v of ['2025-08', '2025-12']) {
      assert.deepEqual(strip((await api().get(`/api/${v}/openapi.json`)).body, v), base, v);
      const created = await api().withVersion(v).post('/crm/customers', { externalId: `ver-${v}`, firstName: 'V' });
      assert.equal(created.status, 201, v);
      assert.equal(created.headers.get('x-api-version'), v);
      assert.equal(created.headers.get('deprecation'), null);
      const merged = await api().withVersion(v).post(`/crm/customers/ver-${v}/merge`, { mergeWithCustomerIds: ['nobody'] });
      assert.equal(merged.status, 404, `${v}: the 2025-04 merge form is served`);
      // Bulb's own 2026-11 routes are not in Tulip's versions.
      const events = await api().withVersion(v).get('/events');
      assert.deepEqual(errorCodes(events), ['EndpointNotInVersion'], v);
      assert.match(events.body.errors[0].moreInfo, /2026-11/);
    }
  });

  it('/docs serves the interactive reference pointing at every version', async () => {
    const r = await api().withToken(undefined).get('/docs');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/html/);
    assert.match(r.text, /swagger/i);
    const init = await api().get('/docs/static/swagger-initializer.js');
    assert.equal(init.status, 200);
    for (const v of VERSION_IDS) assert.ok(init.text.includes(`/api/${v}/openapi.json`), v);
  });
});
