// Errors as Tulip's error pages document them (SPEC §16), each case with its status and errorCode in the
// SPEC §3 body shape: https://docs.tulip.com/integrating/aerial/errors/errors (the errors object, the
// single-entity "Missing UUID in path" example, the multiple-entities missing-field example) and
// https://docs.tulip.com/integrating/aerial/errors/troubleshooterrors (400, 401, 403 for permissions and for a
// resource's state, 404, 405). Every refused request changes nothing.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { snapshot } from '../crm/fixtures.ts';
import { ADMIN_KEY } from '../helpers/server.ts';

await describeEachDb('errors as Tulip documents them', (ctx) => {
  const api = () => ctx.srv.api;
  /** Every error answer: the errors object, each entry with message, errorCode and moreInfo strings. */
  const shaped = (r: any, status: number, code: string, where: string) => {
    assert.equal(r.status, status, `${where}: ${r.text}`);
    assert.ok(Array.isArray(r.body.errors) && r.body.errors.length > 0, where);
    for (const e of r.body.errors) {
      assert.deepEqual(Object.keys(e).sort(), ['errorCode', 'message', 'moreInfo'], where);
      for (const v of Object.values(e)) assert.equal(typeof v, 'string', where);
    }
    assert.equal(r.body.errors[0].errorCode, code, where);
  };

  // https://docs.tulip.com/integrating/aerial/errors/errors: "Could not get resource: Missing UUID in path", InvalidParameterError
  it('a single-entity route with its id left out of the path: 400 InvalidParameterError (was a 404 or a 405)', async () => {
    await api().post('/crm/customers', { externalId: 'te-1' });
    const snap = await snapshot(ctx.tdb.db);
    for (const [method, path] of [['PUT', '/crm/customers/'], ['PATCH', '/crm/customers/'], ['GET', '/crm/customerNotes/'], ['PUT', '/crm/customerNotes/'], ['DELETE', '/integrations/webhooks/subscriptions/'], ['GET', '/crm/customers//notes']] as const) {
      const r = await api().req(method, path, method === 'GET' || method === 'DELETE' ? undefined : { externalId: 'te-1' });
      shaped(r, 400, 'InvalidParameterError', `${method} ${path}`);
    }
    assert.match((await api().put('/crm/customers/', { externalId: 'te-1' })).body.errors[0].message, /missing id in path/);
    assert.equal(await snapshot(ctx.tdb.db), snap);
    // A path naming no route at all stays a 404; a list route with a trailing slash is the list.
    shaped(await api().get('/crm/nothing/'), 404, 'NotFound', 'no such route');
    // Named as the client wrote it: the legacy prefix, not the version it is rewritten to.
    const legacy = await fetch(`${ctx.srv.url}/tulip_api/v2/crm/nothing?x=1`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    assert.equal(legacy.status, 404);
    const unknown = ((await legacy.json()) as any).errors[0];
    assert.equal(unknown.message, 'no route GET /tulip_api/v2/crm/nothing');
    // moreInfo points to the reference (it was "" until 2026-11-30)
    assert.match(unknown.moreInfo, /API reference at \/docs/);
    assert.equal((await api().get('/crm/customers/')).status, 200);
  });

  // https://docs.tulip.com/integrating/aerial/errors/errors: "Missing field externalId", invalidResourceMissingRequiredFields
  it('a multiple-entities item missing a required field: invalidResourceMissingRequiredFields, the other items applied', async () => {
    const r = await api().post('/crm/customers/bulk', [{ firstName: 'No Id' }, { externalId: 'te-bulk-ok' }]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.results[0].status, 400);
    assert.deepEqual(r.body.results[0].errors, [{ message: 'Could not create/update resource: missing field "externalId"', errorCode: 'invalidResourceMissingRequiredFields', moreInfo: 'externalId' }]);
    assert.equal(r.body.results[1].status, 201);
    // Any other problem of an item keeps InvalidParameterError.
    const bad = await api().post('/crm/customers/bulk', [{ externalId: 'te-bulk-bad', firstName: 5 }]);
    assert.equal(bad.body.results[0].errors[0].errorCode, 'InvalidParameterError');
  });

  // https://docs.tulip.com/integrating/aerial/errors/troubleshooterrors: 400, 401, 403, 404, 405
  it('400 for a malformed request, 401 without valid credentials, 403 without the permission, 404 for no endpoint or resource, 405 for a method the resource does not allow', async () => {
    shaped(await api().post('/crm/customers', '{"externalId":'), 400, 'InvalidJson', 'malformed JSON');
    shaped(await api().post('/crm/customers', { externalId: 'te-2', bogus: 1 }), 400, 'InvalidParameterError', 'invalid parameter');
    const noAuth = await api().withToken(undefined).get('/crm/customers');
    shaped(noAuth, 401, 'Unauthorized', 'no token');
    assert.match(noAuth.headers.get('www-authenticate') ?? '', /^Bearer/);
    shaped(await api().withToken('not-a-key').get('/crm/customers'), 401, 'Unauthorized', 'wrong token');
    const readKey = (await api().post('/integrations/apiKeys', { name: 'te-read', scopes: ['read'] })).body.key;
    shaped(await api().withToken(readKey).post('/crm/customers', { externalId: 'te-3' }), 403, 'Forbidden', 'read-only token writes');
    assert.equal((await api().get('/crm/customers/te-3')).status, 404, 'nothing written');
    shaped(await api().get('/crm/customers/te-nobody'), 404, 'NotFound', 'unknown resource');
    shaped(await api().get('/crm/nothing-here'), 404, 'NotFound', 'unknown endpoint');
    const n = await api().post('/crm/customers', { externalId: 'te-4' });
    const note = await api().post('/crm/customers/te-4/notes', { type: 'CUSTOMER_NOTE', comments: 'x' });
    const post = await api().post(`/crm/customerNotes/${note.body.uuid}`, { type: 'CUSTOMER_NOTE', comments: 'y' });
    shaped(post, 405, 'MethodNotAllowed', 'POST on a GET/PUT resource');
    assert.equal(post.headers.get('allow'), 'GET, PUT, HEAD');
    void n;
  });

  // https://docs.tulip.com/integrating/aerial/gettingstartedwithaerial: "Encoding errors will generally return the 400 error code"
  it('a body that is not UTF-8 is a 400 InvalidJson, not text stored with replacement characters (was a 201)', async () => {
    const c = ctx.srv.api;
    const bytes = Buffer.concat([Buffer.from('{"externalId":"te-enc-'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const r = await fetch(`${c.base}/api/2025-08/crm/customers`, {
      method: 'POST', body: bytes, headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json; charset=UTF-8' },
    });
    const body = await r.json();
    assert.equal(r.status, 400);
    assert.equal(body.errors[0].errorCode, 'InvalidJson');
    assert.match(body.errors[0].message, /UTF-8/);
    const stored = await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM customers WHERE external_id LIKE 'te-enc-%'`);
    assert.equal(stored.rows[0].n, 0, 'nothing written');
    // The same text well encoded (with a byte order mark, as some clients send) is served.
    const ok = await fetch(`${c.base}/api/2025-08/crm/customers`, {
      method: 'POST', body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"externalId":"te-enc-ok-é"}')]),
      headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json; charset=UTF-8' },
    });
    assert.equal(ok.status, 201, await ok.text());
  });

  // https://docs.tulip.com/integrating/aerial/errors/troubleshooterrors: 403 when "the resource … cannot be
  // accessed due to it's current state/status": a disabled (merged-away) customer.
  it('403 CustomerDisabled for a write a disabled customer refuses (was 409)', async () => {
    await api().post('/crm/customers', { externalId: 'te-p' });
    await api().post('/crm/customers', { externalId: 'te-s' });
    await api().post('/crm/customers', { externalId: 'te-q' });
    assert.equal((await api().post('/crm/customers/te-p/merge', { mergeWithCustomerIds: ['te-s'] })).status, 200);
    const snap = await snapshot(ctx.tdb.db);
    shaped(await api().post('/crm/customers/te-s/merge', { mergeWithCustomerIds: ['te-q'] }), 403, 'CustomerDisabled', 'merge into a disabled primary');
    shaped(await api().post('/crm/customers/te-q/merge', { mergeWithCustomerIds: ['te-s'] }), 403, 'CustomerDisabled', 'a secondary merged elsewhere');
    shaped(await api().patch('/crm/customers/te-s', { firstName: 'X' }), 403, 'CustomerDisabled', 'PATCH');
    shaped(await api().put('/crm/customers/te-s', { firstName: 'X' }), 403, 'CustomerDisabled', 'PUT');
    shaped(await api().post('/crm/customers/te-s/notes', { type: 'CUSTOMER_NOTE', comments: 'x' }), 403, 'CustomerDisabled', 'a note');
    assert.equal(await snapshot(ctx.tdb.db), snap, 'nothing changed');
    const bulk = await api().post('/crm/customers/bulk', [{ externalId: 'te-s', firstName: 'X' }]);
    assert.equal(bulk.body.results[0].status, 403);
    assert.equal(bulk.body.results[0].errors[0].errorCode, 'CustomerDisabled');
  });
});
