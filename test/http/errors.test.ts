// SPEC §3 errors: every errorCode with its status and the one error shape, including the failures that
// happen before routing (bad URLs, HTTP parser errors) and inside hooks (auth, rate limit).
import assert from 'node:assert/strict';
import net from 'node:net';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY, errorCodes, startServer } from '../helpers/server.ts';
import { freshDb } from '../helpers/db.ts';
import { unstorableChecks } from '../../src/http/errors.ts';

/** Sends raw bytes and returns the raw answer (for requests fetch refuses to make). */
function raw(url: string, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const c = net.connect(Number(u.port), u.hostname);
    let data = '';
    c.on('data', (b) => (data += b));
    c.on('end', () => resolve(data));
    c.on('error', reject);
    c.write(request);
  });
}
function rawBody(answer: string) {
  const [head, ...rest] = answer.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), head: head.toLowerCase(), body: JSON.parse(rest.join('\r\n\r\n')) };
}

await describeEachDb('errors', (ctx) => {
  const api = () => ctx.srv.api;

  it('InvalidParameterError: 400, one entry per invalid field', async () => {
    const r = await api().post('/crm/customers', { externalId: '', firstName: 5, bogus: true });
    assert.equal(r.status, 400);
    const codes = errorCodes(r);
    assert.ok(codes.length >= 3, JSON.stringify(r.body));
    assert.ok(codes.every((c) => c === 'InvalidParameterError'));
    const where = r.body.errors.map((e: any) => e.moreInfo).join(' ');
    for (const f of ['externalId', 'firstName', 'bogus']) assert.match(where, new RegExp(f));
  });

  it('an answer lists at most 100 problems, then says how many more there are', async () => {
    const r = await api().post('/crm/customers', { externalId: 'many', emails: Array.from({ length: 2000 }, () => ({ email: 'bad' })) });
    assert.equal(r.status, 400);
    assert.equal(r.body.errors.length, 101);
    assert.match(r.body.errors[100].message, /^and \d+ more problems not listed$/);
    assert.ok(r.body.errors.slice(0, 100).every((e: any) => e.errorCode === 'InvalidParameterError' && e.moreInfo));
  });

  it('a body of more than 10,000 values is checked up to its first problem, and says so (listing every one held the event loop for seconds)', async () => {
    const r = await api().post('/crm/customers', { externalId: 'huge', emails: Array.from({ length: 20_000 }, () => ({ email: 'bad' })) });
    assert.equal(r.status, 400, r.text);
    const messages = r.body.errors.map((e: any) => e.message);
    assert.ok(r.body.errors.length <= 3, JSON.stringify(r.body));
    assert.ok(messages.some((m: string) => /^body is not checked further: its first problem is listed/.test(m)), JSON.stringify(messages));
    assert.ok(r.body.errors.some((e: any) => e.moreInfo === 'body.emails'), JSON.stringify(r.body)); // the first problem: too many emails
    assert.ok(r.body.errors.every((e: any) => e.errorCode === 'InvalidParameterError'));
  });

  it('a bulk request lists every problem of its items up to 10,000 values in all, then the first problem of each', async () => {
    const bad = (n: number) => ({ externalId: `big-${n}`, emails: Array.from({ length: 2000 }, () => ({ email: 'bad' })) });
    const r = await api().withVersion('2026-11').post('/crm/customers/bulk', [bad(0), bad(1), bad(2), bad(3), { externalId: 'fine-1', firstName: 'Fine' }]);
    assert.equal(r.status, 200, r.text);
    const [a, b, c, d, ok] = r.body.results;
    // Items 0 and 1 (4,001 values each) are listed in full (20 problems each), 2 and 3 past the budget by their first.
    for (const full of [a, b]) assert.equal(full.errors.length, 20, JSON.stringify(full.errors.slice(0, 3)));
    for (const first of [c, d]) {
      assert.equal(first.status, 400);
      assert.ok(first.errors.length <= 3, JSON.stringify(first.errors));
      assert.ok(first.errors.some((e: any) => /is not checked further/.test(e.message)), JSON.stringify(first.errors));
    }
    assert.equal(ok.status, 201, JSON.stringify(ok));
  });

  it('an object with more unknown fields than an answer lists is refused naming its first one, its other fields unread (95,000 of them held the loop past their JSON.parse)', async () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 1]));
    for (const version of ['2025-04', '2026-11']) {
      const r = await api().withVersion(version).post('/crm/customers', { externalId: 'many-keys', ...keys(5_000) });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError', 'InvalidParameterError'], r.text);
      assert.deepEqual(r.body.errors[0], { message: 'unknown field "k0"', errorCode: 'InvalidParameterError', moreInfo: 'body.k0' });
      assert.match(r.body.errors[1].message, /^body has more than \d+ fields \(it can have \d+\): not checked further, its first unknown field is listed$/);
      assert.equal(r.body.errors[1].moreInfo, 'body');
    }
    // Up to 100 unknown fields past the schema's, each is listed as before.
    const some = await api().post('/crm/customers', { externalId: 'some-keys', ...keys(100) });
    assert.equal(some.status, 400);
    assert.equal(some.body.errors.length, 100, JSON.stringify(some.body.errors.slice(-2)));
    assert.ok(some.body.errors.every((e: any, i: number) => e.message === `unknown field "k${i}"`), JSON.stringify(some.body.errors.slice(0, 3)));
    // A bulk item too: its own 400, the other items applied.
    const bulk = await api().withVersion('2025-12').post('/crm/customers/bulk', [{ externalId: 'many-keys-item', ...keys(5_000) }, { externalId: 'few-keys-item' }]);
    assert.equal(bulk.status, 200, bulk.text);
    assert.deepEqual(bulk.body.results.map((x: any) => x.status), [400, 201]);
    assert.equal(bulk.body.results[0].errors[0].message, 'unknown field "k0"');
    assert.match(bulk.body.results[0].errors[1].message, /^value has more than \d+ fields \(it can have \d+\): not checked further/);
  });

  it('a body without a \\u0000 or surrogate escape is not walked for strings PostgreSQL cannot store; with one it is, and a NUL is refused as before', async () => {
    const addresses = (city: string) => Array.from({ length: 50 }, (_, i) => ({ address1: `${i} Main St`, city: i === 49 ? city : 'Zoë 😀' }));
    const read = async (body: string, version = '2025-04', path = '/crm/customers') => {
      const before = unstorableChecks.strings;
      const r = await api().withVersion(version).post(path, body);
      return { r, read: unstorableChecks.strings - before };
    };
    // Non-ASCII sent as UTF-8 (JSON.stringify writes no escape for it), and an escape of another character: not walked.
    const plain = await read(JSON.stringify({ externalId: 'walk-0', firstName: 'Ann', addresses: addresses('Paris') }));
    assert.equal(plain.r.status, 201, plain.r.text);
    assert.equal(plain.read, 0, 'no string of the body was read');
    const other = await read(JSON.stringify({ externalId: 'walk-1', addresses: addresses('Paris') }).replace('Ann', '\\u0041nn').replace('"walk-1"', '"walk-\\u0031"'));
    assert.equal(other.r.status, 201, other.r.text);
    assert.equal(other.read, 0);
    // A surrogate pair written as escapes is a character (stored), but only the walk can tell: every string is read.
    const pair = await read(JSON.stringify({ externalId: 'walk-2', firstName: 'x', addresses: addresses('Paris') }).replace('"x"', '"\\ud83d\\ude00"'));
    assert.equal(pair.r.status, 201, pair.r.text);
    assert.equal(pair.r.body.firstName, '\u{1F600}');
    assert.ok(pair.read >= 150, `${pair.read} strings read`);
    // A NUL in the last address's last field is found and named.
    const nul = await read(JSON.stringify({ externalId: 'walk-3', addresses: addresses('a\u0000b') }));
    assert.equal(nul.r.status, 400, nul.r.text);
    assert.deepEqual(nul.r.body.errors, [{ message: '"addresses.49.city" must not contain the NUL character (\\u0000)', errorCode: 'InvalidParameterError', moreInfo: 'body.addresses.49.city' }]);
    assert.equal((await api().get('/crm/customers/walk-3')).status, 404);

    // Bulk: 1,000 items of 10 addresses (each refused after the walk, for a zone no country has); a NUL in the last.
    const items = (last: Record<string, unknown>) => JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({
      externalId: `walk-bulk-${i}`, addresses: Array.from({ length: 10 }, (_, j) => ({ address1: `${j} Main St`, countryCode: 'ZZ', ...(i === 999 && j === 9 ? last : {}) })),
    })));
    const clean = await read(items({}), '2025-12', '/crm/customers/bulk');
    assert.equal(clean.r.status, 200, clean.r.text.slice(0, 300));
    assert.ok(clean.r.body.results.every((x: any) => x.status === 400 && x.errors[0].moreInfo === 'addresses.0.countryCode'), JSON.stringify(clean.r.body.results[0]));
    assert.equal(clean.read, 0, 'no item was walked');
    const deep = await read(items({ address2: 'a\u0000b' }), '2025-12', '/crm/customers/bulk');
    assert.equal(deep.r.status, 200);
    assert.deepEqual(deep.r.body.results[999], {
      index: 999, status: 400, errors: [{ message: '"addresses.9.address2" contains a NUL character or an unpaired surrogate', errorCode: 'InvalidParameterError', moreInfo: 'addresses.9.address2' }],
    });
    assert.ok(deep.r.body.results.slice(0, 999).every((x: any) => x.errors[0].moreInfo === 'addresses.0.countryCode'));
    assert.ok(deep.read >= 1000 * 10 * 2, `${deep.read} strings read`);
  });

  it('a value that is none of a field\'s allowed forms says what each form wanted (not only that it matched none)', async () => {
    const r = await api().post('/crm/customers', { externalId: 'forms-1', addresses: [{ address1: '1 Main St', countryCode: 5 }] });
    assert.equal(r.status, 400, r.text);
    const e = r.body.errors.find((x: any) => x.moreInfo === 'body.addresses.0.countryCode');
    assert.ok(e, JSON.stringify(r.body));
    assert.equal(e.message, '"addresses.0.countryCode" must be string, or must be null');
  });

  it('InvalidJson: 400 for malformed JSON and for an empty JSON body on POST', async () => {
    for (const body of ['{"externalId":', '{bad}', "{'a':1}"]) {
      const r = await api().post('/crm/customers', body);
      assert.equal(r.status, 400, body);
      assert.deepEqual(errorCodes(r), ['InvalidJson']);
    }
    const empty = await api().req('POST', '/crm/customers', undefined, { 'content-type': 'application/json' });
    assert.equal(empty.status, 400);
    assert.deepEqual(errorCodes(empty), ['InvalidJson']);
  });

  it('JSON bodies that are not objects (array, string, number, null) are 400 InvalidParameterError', async () => {
    for (const body of ['[1,2]', '"abc"', '5', 'null', 'true']) {
      const r = await api().post('/crm/customers', body);
      assert.equal(r.status, 400, body);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError'], body);
    }
    const bulk = await api().post('/crm/customers/bulk', { externalId: 'x' });
    assert.equal(bulk.status, 400);
    assert.deepEqual(errorCodes(bulk), ['InvalidParameterError']);
  });

  it('Unauthorized: 401 with WWW-Authenticate: Bearer, for missing, malformed and unknown tokens', async () => {
    const anon = api().withToken(undefined);
    for (const headers of [{} as Record<string, string>, { authorization: 'Basic Zm9vOmJhcg==' }, { authorization: 'Bearer' }, { authorization: 'Bearer nope' }, { authorization: 'Bearer a b' }]) {
      const r = await anon.get('/crm/customers', headers);
      assert.equal(r.status, 401, JSON.stringify(headers));
      assert.deepEqual(errorCodes(r), ['Unauthorized']);
      // moreInfo says how to authenticate (it was "" until 2026-11-30; Tulip: "more information about the error")
      assert.match(r.body.errors[0].moreInfo, /Authorization: Bearer <API key>/);
      assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer\b/);
      // RFC 6750 §3.1 (no error code before 2026-11-28): none without credentials, invalid_request for a malformed
      // header, invalid_token for an unknown token.
      const error = /error="([a-z_]+)"/.exec(r.headers.get('www-authenticate') ?? '')?.[1];
      assert.equal(error, !headers.authorization ? undefined : headers.authorization === 'Bearer nope' ? 'invalid_token' : 'invalid_request', JSON.stringify(headers));
    }
  });

  it('Forbidden: 403 for a read key writing', async () => {
    const key = (await api().post('/integrations/apiKeys', { name: 'r', scopes: ['read'] })).body.key;
    const r = await api().withToken(key).post('/crm/customers', { externalId: 'forbidden-1' });
    assert.equal(r.status, 403);
    assert.deepEqual(errorCodes(r), ['Forbidden']);
  });

  it('NotFound: 404 for an unknown record and for unknown paths outside /api', async () => {
    const r = await api().get('/crm/customers/does-not-exist');
    assert.equal(r.status, 404);
    assert.deepEqual(errorCodes(r), ['NotFound']);
    for (const p of ['/nope', '/api', '/api/', '/api/2025-04', '/api/2025-04/crm/nothing-here']) {
      const x = await api().get(p);
      assert.equal(x.status, 404, p);
      assert.deepEqual(errorCodes(x), ['NotFound'], p);
    }
  });

  it('UnsupportedApiVersion and EndpointNotInVersion: 404 naming the versions', async () => {
    const r = await api().get('/api/2023-01/crm/customers');
    assert.equal(r.status, 404);
    assert.deepEqual(errorCodes(r), ['UnsupportedApiVersion']);
    assert.match(r.body.errors[0].message, /2022-04, 2022-08, 2025-04/);
    const e = await api().withVersion('2022-04').get('/integrations/apiKeys');
    assert.equal(e.status, 404);
    assert.deepEqual(errorCodes(e), ['EndpointNotInVersion']);
    assert.match(e.body.errors[0].moreInfo, /2022-08, 2025-04/);
  });

  it('MethodNotAllowed: 405 with Allow for a known path and another method', async () => {
    const r = await api().delete('/crm/customers');
    assert.equal(r.status, 405);
    assert.deepEqual(errorCodes(r), ['MethodNotAllowed']);
    assert.deepEqual(r.headers.get('allow')!.split(', ').sort(), ['GET', 'HEAD', 'POST']);
    const token = await api().get('/auth/oauth2/token');
    assert.equal(token.status, 405);
    assert.deepEqual(errorCodes(token), ['MethodNotAllowed']);
    assert.equal(token.headers.get('allow'), 'POST');
  });

  it('a DELETE with Content-Type json and no body is served', async () => {
    const k = await api().post('/integrations/apiKeys', { name: 'del', scopes: ['read'] });
    const r = await api().req('DELETE', `/integrations/apiKeys/${k.body.uuid}`, undefined, { 'content-type': 'application/json; charset=UTF-8' });
    assert.equal(r.status, 204);
  });

  // SPEC §3: unknown fields are rejected. A route that takes no body read none: `{"dryRun":true}` sent to an undo undid
  // the merge, a DELETE with a body deleted. Absent, null and {} are still served (clients that always send a body).
  it('a POST or DELETE that takes no body refuses one with fields (400, nothing done), and serves none, null or {}', async () => {
    const v = api().withVersion('2026-11');
    await v.post('/crm/customers/bulk', [{ externalId: 'nb-1' }, { externalId: 'nb-2' }]);
    const m = await v.post('/crm/customers/nb-1/merge', { mergeWithCustomerIds: ['nb-2'] });
    assert.equal(m.status, 200, m.text);
    const undo = await v.post(`/crm/merges/${m.body.mergeUuid}/undo`, { dryRun: true });
    assert.equal(undo.status, 400, undo.text);
    assert.deepEqual(undo.body.errors, [{ message: 'unknown field "dryRun"', errorCode: 'InvalidParameterError', moreInfo: 'body.dryRun' }]);
    assert.equal((await v.get('/crm/customers/nb-2')).body.status, 'disabled', 'the refused undo changed nothing');
    assert.equal((await v.post(`/crm/merges/${m.body.mergeUuid}/undo`, [1, 2])).status, 400);
    assert.equal((await v.post(`/crm/merges/${m.body.mergeUuid}/undo`, {})).status, 200);
    const k = await api().post('/integrations/apiKeys', { name: 'nb', scopes: ['read'] });
    const del = await api().req('DELETE', `/integrations/apiKeys/${k.body.uuid}`, { x: 1 });
    assert.equal(del.status, 400, del.text);
    assert.equal((await api().get('/integrations/apiKeys')).body.data.some((x: any) => x.uuid === k.body.uuid && !x.revokedAt), true, 'not revoked');
    assert.equal((await api().req('DELETE', `/integrations/apiKeys/${k.body.uuid}`, null)).status, 204);
  });

  it('Conflict: 409 on a duplicate externalId', async () => {
    await api().post('/crm/customers', { externalId: 'dup-e' });
    const r = await api().post('/crm/customers', { externalId: 'dup-e' });
    assert.equal(r.status, 409);
    assert.deepEqual(errorCodes(r), ['Conflict']);
  });

  it('PayloadTooLarge: 413 beyond 1 MiB, a body just under it is read', async () => {
    const big = JSON.stringify({ externalId: 'big', firstName: 'x'.repeat(1024 * 1024) });
    const r = await api().post('/crm/customers', big);
    assert.equal(r.status, 413);
    assert.deepEqual(errorCodes(r), ['PayloadTooLarge']);
    const under = await api().post('/crm/customers', JSON.stringify({ externalId: 'big', firstName: 'x'.repeat(1024 * 1024 - 100) }));
    assert.equal(under.status, 400, 'read and validated (firstName too long), not refused for its size');
    assert.deepEqual([...new Set(errorCodes(under))], ['InvalidParameterError']);
  });

  it('UnsupportedMediaType: 415 for bodies that are not JSON', async () => {
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ';;=']) {
      const r = await api().post('/crm/customers', 'externalId=x', { 'content-type': type });
      assert.equal(r.status, 415, type);
      assert.deepEqual(errorCodes(r), ['UnsupportedMediaType'], type);
    }
    // JSON is UTF-8 (RFC 8259 §8.1): a body declared in another charset was read as UTF-8, its text changed.
    for (const type of ['application/json; charset=latin1', 'application/json; charset="ISO-8859-1"', 'application/json;charset=utf-16']) {
      const r = await api().post('/crm/customers', '{"externalId":"cs-\u00e9"}', { 'content-type': type });
      assert.equal(r.status, 415, `${type}: ${r.text}`);
      assert.deepEqual(errorCodes(r), ['UnsupportedMediaType'], type);
      assert.match(r.body.errors[0].message, /UTF-8/);
    }
    assert.equal((await api().get('/crm/customers/cs-\u00e9')).status, 404, 'nothing was written');
    // A content coding is not decoded: gzip (or any other) is refused, not parsed as it came.
    for (const coding of ['gzip', 'br', 'deflate']) {
      const r = await api().post('/crm/customers', '{"externalId":"ce-1"}', { 'content-encoding': coding });
      assert.equal(r.status, 415, `${coding}: ${r.text}`);
      assert.equal(r.body.errors[0].moreInfo, 'Content-Encoding');
    }
    assert.equal((await api().get('/crm/customers/ce-1')).status, 404, 'nothing was written');
    // Authentication comes first: without a valid token the answer is 401, whatever the body's coding.
    for (const token of [undefined, 'bulb_key_not-a-key']) {
      const r = await api().withToken(token).post('/crm/customers', '{"externalId":"ce-3"}', { 'content-encoding': 'gzip' });
      assert.equal(r.status, 401, `${token}: ${r.text}`);
    }
    assert.equal((await api().post('/crm/customers', '{"externalId":"ce-2"}', { 'content-encoding': 'identity' })).status, 201);
    for (const type of ['application/json; charset=utf-8', 'application/json; charset="UTF8"', 'application/json; charset=us-ascii']) {
      const r = await api().post('/crm/customers', JSON.stringify({ externalId: `cs-${type.length}-${type.at(-2)}` }), { 'content-type': type });
      assert.equal(r.status, 201, `${type}: ${r.text}`);
    }
  });

  it('a GET with Content-Type json and Content-Length 0, and Accept-Language anywhere, is served', async () => {
    const r = await api().get('/crm/customers', { 'content-type': 'application/json; charset=UTF-8', 'content-length': '0', 'accept-language': 'de-CH, fr;q=0.9, *;q=0.1' });
    assert.equal(r.status, 200);
    for (const p of ['/api/versions', '/api/2022-08/openapi.json', '/health', '/crm/customers/nope', '/api/1999-01/x']) {
      const x = await api().get(p, { 'accept-language': 'zz;q=abc,,' });
      assert.ok(x.status < 500, p);
      assert.equal(x.headers.get('content-language'), 'en', p);
    }
  });

  it('API answers, legacy path and errors included, say Cache-Control: no-store (customer data, one-time secrets)', async () => {
    const key = await api().post('/integrations/apiKeys', { name: 'no-store', scopes: ['read'] });
    assert.equal(key.status, 201, key.text);
    for (const r of [key, await api().get('/crm/customers'), await api().get('/tulip_api/v2/crm/customers'), await api().get('/crm/customers/nope'), await api().withToken(undefined).get('/crm/customers')]) {
      assert.equal(r.headers.get('cache-control'), 'no-store', `${r.status} ${r.text.slice(0, 80)}`);
    }
  });

  it('HEAD is answered like GET without a body; errors keep their status', async () => {
    const h = await api().req('HEAD', '/crm/customers');
    assert.equal(h.status, 200);
    assert.equal(h.text, '');
    const anon = await api().withToken(undefined).req('HEAD', '/crm/customers');
    assert.equal(anon.status, 401);
    assert.match(anon.headers.get('www-authenticate') ?? '', /^Bearer/);
  });

  it('bad percent-encoding, over-long segments, NUL characters and lone surrogates are 400s in the error shape', async () => {
    for (const p of ['/crm/customers/%', '/crm/customers/%E0%A4%A', '/crm/customers/%zz', '/crm/customers/' + 'x'.repeat(600)]) {
      const r = await api().get(p);
      assert.equal(r.status, 400, p);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError'], p);
      assert.equal(r.headers.get('content-language'), 'en');
    }
    // In the query string too: the parser kept what it could not decode as typed (`%ff` searched for "%ff": 200, empty).
    for (const q of ['email=%ff', 'externalId=%E0%A4%A', 'q=100%', 'externalId=a&%zz=1']) {
      const r = await api().get(`/crm/customers?${q}`);
      assert.equal(r.status, 400, q);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError'], q);
      assert.equal(r.body.errors[0].moreInfo, 'querystring', q);
    }
    assert.equal((await api().get('/crm/customers?externalId=%C3%A9+x%2B')).status, 200, 'valid encodings, + for a space, are served');
    const nulPath = await api().get('/crm/customers/a%00b');
    assert.equal(nulPath.status, 400);
    assert.deepEqual(errorCodes(nulPath), ['InvalidParameterError']);
    // A path no route has names the path (it named a parameter "*"); a body sent to a route the version lacks is not read.
    const nulVersion = await raw(ctx.srv.url, 'GET /api/2026-11%00/crm/customers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.deepEqual(rawBody(nulVersion).body.errors.map((e: any) => e.moreInfo), ['path']);
    const notInVersion = await api().withVersion('2022-04').post('/crm/customers/bulk', '[{"externalId":"a\\u0000b"}]');
    assert.deepEqual([notInVersion.status, errorCodes(notInVersion)], [404, ['EndpointNotInVersion']]);
    // Nor is a body's framing checked first (a probe, 2026-11-29: bad JSON, a charset, a Content-Encoding, a body over the
    // limit were answered 400, 415 or 413 on a route the version lacks, hiding the versions that serve it).
    const base = ctx.srv.url;
    const auth = { authorization: `Bearer ${ADMIN_KEY}` };
    for (const [what, path, headers, body] of [
      ['bad JSON', '/api/2025-08/crm/imports', { 'content-type': 'application/json' }, '{'],
      ['a charset', '/tulip_api/v2/crm/customers/bulk', { 'content-type': 'application/json; charset=utf-16' }, '[]'],
      ['gzip', '/tulip_api/v2/crm/customers/bulk', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'x'],
      ['over the limit', '/tulip_api/v2/crm/customers/bulk', { 'content-type': 'application/json' }, `[${'1,'.repeat(600_000)}1]`],
    ] as const) {
      const r = await fetch(`${base}${path}`, { method: 'POST', headers: { ...auth, ...headers }, body });
      const answer = await r.json() as any;
      assert.deepEqual([r.status, answer.errors.map((e: any) => e.errorCode)], [404, ['EndpointNotInVersion']], what);
      assert.match(answer.errors[0].moreInfo, /^served by versions: /, what);
    }
    // The same for an unknown version (404 UnsupportedApiVersion) and a method the path lacks (405 with Allow).
    const unknownVersion = await fetch(`${base}/api/2023-01/crm/customers`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{bad' });
    assert.deepEqual([unknownVersion.status, ((await unknownVersion.json()) as any).errors[0].errorCode], [404, 'UnsupportedApiVersion']);
    const noMethod = await fetch(`${base}/api/2022-08/crm/customers/x`, { method: 'DELETE', headers: { ...auth, 'content-type': 'application/json' }, body: '{bad' });
    assert.deepEqual([noMethod.status, ((await noMethod.json()) as any).errors[0].errorCode], [405, 'MethodNotAllowed']);
    assert.match(noMethod.headers.get('allow') ?? '', /PATCH/);
    const nowhere = await fetch(`${base}/api/2026-11/nope`, { method: 'POST', headers: { ...auth, 'content-encoding': 'gzip' }, body: 'x' });
    assert.deepEqual([nowhere.status, ((await nowhere.json()) as any).errors[0].errorCode], [404, 'NotFound']);
    const nulQuery = await api().get('/crm/customers?externalId=a%00b');
    assert.equal(nulQuery.status, 400);
    const nulBody = await api().post('/crm/customers', '{"externalId":"n","firstName":"a\\u0000b"}');
    assert.equal(nulBody.status, 400);
    assert.deepEqual(errorCodes(nulBody), ['InvalidParameterError']);
    assert.equal(nulBody.body.errors[0].moreInfo, 'body.firstName');
    // A lone surrogate escape (valid JSON, but no Unicode text): stored, it became U+FFFD, the caller's id rewritten.
    for (const [body, field] of [['{"externalId":"sur\\udfff"}', 'body.externalId'], ['{"externalId":"s2","firstName":"a\\ud800b"}', 'body.firstName'],
      ['{"externalId":"s3","attributes":[{"name":"x\\ud83d","value":"v"}]}', 'body.attributes.0.name']]) {
      const r = await api().post('/crm/customers', body);
      assert.equal(r.status, 400, body);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
      assert.equal(r.body.errors[0].moreInfo, field, body);
      assert.match(r.body.errors[0].message, /unpaired UTF-16 surrogate/);
    }
    for (const id of ['sur\ufffd', 's2', 's3']) assert.equal((await api().get(`/crm/customers/${encodeURIComponent(id)}`)).status, 404, 'nothing was written');
    const pair = await api().post('/crm/customers', '{"externalId":"emoji-\\ud83d\\ude00","firstName":"\\ud83d\\ude00"}');
    assert.equal(pair.status, 201, 'a surrogate pair is a character: stored');
    assert.equal(pair.body.firstName, '\u{1F600}');
    const proto = await api().post('/crm/customers', '{"externalId":"p","__proto__":{"x":1}}');
    assert.equal(proto.status, 400, 'prototype keys are refused');
    assert.deepEqual(errorCodes(proto), ['InvalidJson']);
  });

  it('date-times PostgreSQL refuses (year 0000, an offset of 16 hours or more) are a 400 naming the parameter, not a 500', async () => {
    for (const [path, field] of [['/crm/customers?updatedSince=', 'updatedSince'], ['/events?since=', 'since'], ['/events?until=', 'until']]) {
      for (const t of ['0000-01-01T00:00:00Z', '2026-11-27T10:00:00+23:59', '2026-11-27T10:00:00-16:00']) {
        const r = await api().withVersion('2026-11').get(`${path}${encodeURIComponent(t)}`);
        assert.equal(r.status, 400, `${path}${t}: ${r.text}`);
        assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
        assert.equal(r.body.errors[0].moreInfo, `querystring.${field}`, `${path}${t}: ${r.text}`);
      }
    }
    const ok = await api().get(`/crm/customers?updatedSince=${encodeURIComponent('2026-11-27T10:00:00+15:59')}`);
    assert.equal(ok.status, 200, 'an offset PostgreSQL takes is served');
  });

  it('a customer with the longest externalId (255 characters, each an emoji) is named in a path; a longer segment is a 400', async () => {
    const id = '\u{1F600}'.repeat(255);
    assert.equal((await api().withVersion('2026-11').post('/crm/customers', { externalId: id })).status, 201);
    const got = await api().withVersion('2026-11').get(`/crm/customers/${encodeURIComponent(id)}`);
    assert.equal(got.status, 200, got.text.slice(0, 300));
    assert.equal(got.body.externalId, id);
    assert.equal((await api().withVersion('2026-11').get(`/crm/customers/${encodeURIComponent(id)}/notes`)).status, 200);
    const longer = await api().withVersion('2026-11').get(`/crm/customers/${'x'.repeat(511)}`);
    assert.equal(longer.status, 400);
    assert.match(longer.body.errors[0].message, /longer than 510/);
  });

  it('a date-time whose UTC instant leaves years 0001–9999 is a 400: it could not be answered as a four-digit UTC time', async () => {
    const c = (await api().withVersion('2026-11').post('/crm/customers', { externalId: 'dt-range' })).body;
    // Stored, the first two came back as +010000-01-01T00:30:00.000Z and 0000-12-31T23:00:00.000Z, which the API then
    // refused; the last two are the bounds' own instants, taken and answered with a four-digit year.
    for (const [kind, body, field, status] of [
      ['orders', { externalId: 'o-dt-1', currency: 'EUR', total: '1.00', orderedAt: '9999-12-31T23:30:00-01:00' }, 'orderedAt', 400],
      ['followUps', { dueAt: '0001-01-01T00:00:00+01:00', subject: 'x' }, 'dueAt', 400],
      ['orders', { externalId: 'o-dt-2', currency: 'EUR', total: '1.00', orderedAt: '9999-12-31T23:59:59.999Z' }, 'orderedAt', 201],
      ['followUps', { dueAt: '0001-01-01T00:00:00-01:00', subject: 'x' }, 'dueAt', 201],
      // read as PostgreSQL stores them: the fraction rounded to microseconds, a leap second as the next second, so
      // each of these is year 10000 (taken before, and served as +010000-01-01T00:00:00.000Z)
      ['orders', { externalId: 'o-dt-3', currency: 'EUR', total: '1.00', orderedAt: '9999-12-31T23:59:59.9999999Z' }, 'orderedAt', 400],
      ['orders', { externalId: 'o-dt-4', currency: 'EUR', total: '1.00', orderedAt: '9999-12-31T23:59:60Z' }, 'orderedAt', 400],
      ['followUps', { dueAt: '9999-12-31T23:59:59.9999996Z', subject: 'x' }, 'dueAt', 400],
      // a leap second with a fraction, which PostgreSQL refuses (a 400 naming no field before)
      ['followUps', { dueAt: '2016-12-31T23:59:60.5Z', subject: 'x' }, 'dueAt', 400],
      ['orders', { externalId: 'o-dt-5', currency: 'EUR', total: '1.00', orderedAt: '9999-12-31T23:59:59.9999994Z' }, 'orderedAt', 201],
    ] as const) {
      const r = await api().withVersion('2026-11').post(`/crm/customers/${c.uuid}/${kind}`, body);
      assert.equal(r.status, status, `${kind}: ${r.text}`);
      if (status === 400) assert.deepEqual(r.body.errors.map((e: any) => e.moreInfo.replace(/^body\./, '')), [field], r.text);
      else {
        assert.equal(Date.parse(r.body[field]), Date.parse((body as any)[field]));
        assert.match(r.body[field], /^\d{4}-/, 'a four-digit year');
      }
    }
    // Any separator RFC 3339's format check takes (T, t, a space, a tab), as before 2026-11-29.
    for (const sep of ['T', 't', ' ', '\t']) assert.equal((await api().get(`/crm/customers?updatedSince=${encodeURIComponent(`2020-01-01${sep}10:00:00Z`)}`)).status, 200, JSON.stringify(sep));
    const leap = await api().get(`/crm/customers?updatedSince=${encodeURIComponent('2016-12-31T23:59:60Z')}`);
    assert.equal(leap.status, 200, 'a leap second is taken');
    const leapFraction = await api().get(`/crm/customers?updatedSince=${encodeURIComponent('2016-12-31T23:59:60.5Z')}`);
    assert.deepEqual([leapFraction.status, leapFraction.body.errors?.[0].moreInfo], [400, 'querystring.updatedSince'], leapFraction.text);
  });

  it('a huge query string and malformed HTTP get 400 in the error shape from the parser level', async () => {
    const r = await api().get('/crm/customers?email=' + 'a'.repeat(100_000));
    assert.equal(r.status, 400);
    assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
    for (const req of ['GARBAGE\r\n\r\n', 'GET /api/2025-04/crm/customers HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n']) {
      const a = rawBody(await raw(ctx.srv.url, req));
      assert.equal(a.status, 400);
      assert.deepEqual(errorCodes({ body: a.body } as any), ['InvalidParameterError']);
      assert.match(a.head, /content-type: application\/json/);
    }
  });

  // Node answered both itself with an empty body (found by probing, 2026-11-29).
  it('a console path that leaves its folder is a 404 saying so (it was a 400 "Forbidden")', async () => {
    for (const p of ['/admin/../package.json', '/admin/%2e%2e/package.json']) {
      const a = rawBody(await raw(ctx.srv.url, `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
      assert.deepEqual([a.status, a.body.errors[0].errorCode], [404, 'NotFound'], p);
      assert.match(a.body.errors[0].message, /may not leave/);
    }
  });

  it('an HTTP/1.1 request without Host and an Expect other than 100-continue are 400s in the error shape', async () => {
    const noHost = rawBody(await raw(ctx.srv.url, 'GET /api/versions HTTP/1.1\r\nConnection: close\r\n\r\n'));
    assert.deepEqual([noHost.status, noHost.body.errors[0].errorCode, noHost.body.errors[0].moreInfo], [400, 'InvalidParameterError', 'Host']);
    assert.match(noHost.head, /content-type: application\/json/);
    const http10 = await raw(ctx.srv.url, 'GET /api/versions HTTP/1.0\r\n\r\n');
    assert.match(http10, /^HTTP\/1\.1 200 /, 'HTTP/1.0 has no Host to require');
    const body = '{"externalId":"expect-1"}';
    const expect = rawBody(await raw(ctx.srv.url, `POST /api/2025-04/crm/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n` +
      `Content-Type: application/json\r\nExpect: bogus\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`));
    assert.deepEqual([expect.status, expect.body.errors[0].errorCode, expect.body.errors[0].moreInfo], [400, 'InvalidParameterError', 'Expect']);
    assert.match(expect.head, /content-language: en/);
    assert.equal((await api().get('/crm/customers/expect-1')).status, 404, 'not created');
  });

  it('RateLimited: 429 with Retry-After once the burst is spent', async () => {
    // Burst 3, refill 1/s: of requests fired at once, at most 3 (plus one per second they take) get through,
    // so 8 at once see a 429 on any machine, however slow.
    const srv = await startServer(ctx.tdb.db, { BULB_RATE_LIMIT_PER_SEC: '1', BULB_RATE_LIMIT_BURST: '3' });
    try {
      const burst = await Promise.all(Array.from({ length: 8 }, () => srv.api.get('/crm/customers')));
      const statuses = burst.map((r) => r.status);
      const limited = burst.find((r) => r.status === 429);
      assert.ok(limited, `no 429 in ${statuses}`);
      assert.ok(statuses.includes(200), `nothing got through: ${statuses}`);
      assert.deepEqual(statuses.filter((x) => x !== 200 && x !== 429), []);
      assert.deepEqual(errorCodes(limited), ['RateLimited']);
      assert.match(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
      // The limit is per token: the same token, again 8 at once, is still limited; another token gets through.
      const again = await Promise.all(Array.from({ length: 8 }, () => srv.api.get('/crm/customers')));
      assert.ok(again.some((r) => r.status === 429), 'same admin token is still limited');
      const key = (await ctx.srv.api.post('/integrations/apiKeys', { name: 'other', scopes: ['read'] })).body.key;
      assert.equal((await srv.api.withToken(key).get('/crm/customers')).status, 200);
    } finally {
      await srv.close();
    }
  });

  it('InternalError: 500 in the error shape with no internals when the database is gone (also /ready → 503)', async () => {
    const tdb = await freshDb(ctx.backend);
    const srv = await startServer(tdb.db);
    try {
      assert.equal((await srv.api.get('/crm/customers')).status, 200);
      assert.equal((await srv.api.get('/ready')).status, 200);
      await tdb.db.close();
      const r = await srv.api.get('/crm/customers');
      assert.equal(r.status, 500);
      assert.deepEqual(errorCodes(r), ['InternalError']);
      assert.deepEqual(r.body.errors, [{ message: 'internal error', errorCode: 'InternalError', moreInfo: "the server logged it under this answer's X-Request-Id" }]);
      assert.doesNotMatch(r.text, /pool|pglite|closed|at |\.ts|sql/i);
      const ready = await srv.api.get('/ready');
      assert.equal(ready.status, 503);
      errorCodes(ready);
      assert.equal((await srv.api.get('/health')).status, 200, 'the process is up');
    } finally {
      await srv.close();
      await tdb.close();
    }
  });
});
