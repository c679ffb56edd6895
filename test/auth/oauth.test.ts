// SPEC §3 OAuth 2.0 client credentials: auth clients, POST /auth/oauth2/token (form and Basic),
// RFC 6749 §5.2 errors, token scopes, expiry and revocation.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { checkContract } from '../helpers/contract.ts';
import { TOKENS_BURST, TOKENS_PER_SEC } from '../../src/auth/token-route.ts';

await describeEachDb('auth: OAuth client credentials', (ctx) => {
  const api = () => ctx.srv.api;
  const form = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${ctx.srv.url}/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    }).then(async (r) => {
      // Every answer of the endpoint, the 429s included, is one its documented operation declares.
      const text = await r.text();
      await checkContract(ctx.srv.url, { method: 'POST', url: '/auth/oauth2/token', status: r.status, contentType: r.headers.get('content-type'), text });
      return { status: r.status, headers: r.headers, body: JSON.parse(text) as any };
    });
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
  const newClient = async (scopes: string[]) => {
    const r = await api().post('/integrations/authClients', { name: 'integration', scopes });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };

  it('creates a client with its secret shown once; lists omit the secret', async () => {
    const c = await newClient(['read']);
    assert.match(c.clientId, /^bulb_client_/);
    assert.match(c.clientSecret, /^bulb_cs_/);
    assert.deepEqual(c.scopes, ['read']);
    const list = await api().get('/integrations/authClients');
    assert.ok(list.body.data.some((x: any) => x.uuid === c.uuid && x.clientSecret === undefined));
    assert.ok(!list.text.includes(c.clientSecret));
    const row = (await ctx.tdb.db.query(`SELECT * FROM auth_clients WHERE uuid = $1`, [c.uuid])).rows[0];
    assert.ok(!JSON.stringify(row).includes(c.clientSecret.slice(8)));
  });

  it('grants a token with form credentials and with HTTP Basic; it works as a Bearer with the client scopes', async () => {
    const c = await newClient(['read']);
    const viaForm = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret });
    assert.equal(viaForm.status, 200);
    assert.equal(viaForm.body.token_type, 'Bearer');
    assert.equal(viaForm.body.expires_in, 3600);
    assert.match(viaForm.body.access_token, /^bulb_at_/);
    assert.equal(viaForm.headers.get('cache-control'), 'no-store');
    const viaBasic = await form({ grant_type: 'client_credentials' }, basic(c.clientId, c.clientSecret));
    assert.equal(viaBasic.status, 200);
    assert.notEqual(viaBasic.body.access_token, viaForm.body.access_token);
    // RFC 6749 §3.2.1: client_id beside HTTP Basic names the client (OAuth libraries send it; it was refused until
    // 2026-11-29); a secret in both places, or another client's id, is still refused.
    const named = await form({ grant_type: 'client_credentials', client_id: c.clientId }, basic(c.clientId, c.clientSecret));
    assert.equal(named.status, 200, JSON.stringify(named.body));
    for (const extra of [{ client_secret: c.clientSecret }, { client_id: c.clientId, client_secret: c.clientSecret }, { client_id: 'bulb_client_other' }] as Record<string, string>[]) {
      const both = await form({ grant_type: 'client_credentials', ...extra }, basic(c.clientId, c.clientSecret));
      assert.equal(both.status, 400, JSON.stringify(extra));
      assert.equal(both.body.error, 'invalid_request');
    }
    for (const token of [viaForm.body.access_token, viaBasic.body.access_token]) {
      const client = api().withToken(token);
      assert.equal((await client.get('/crm/customers')).status, 200);
      const w = await client.post('/crm/customers', { externalId: 'oauth-w' });
      assert.equal(w.status, 403, 'a read client cannot write');
      assert.deepEqual(errorCodes(w), ['Forbidden']);
    }
    const writer = await newClient(['write']);
    const t = await form({ grant_type: 'client_credentials', client_id: writer.clientId, client_secret: writer.clientSecret });
    assert.equal((await api().withToken(t.body.access_token).post('/crm/customers', { externalId: 'oauth-w' })).status, 201);
    assert.equal((await api().withToken(t.body.access_token).get('/integrations/apiKeys')).status, 403);
  });

  it('a wrong secret or unknown client is 401 {"error":"invalid_client"}; other errors follow RFC 6749 §5.2', async () => {
    const c = await newClient(['read']);
    for (const r of [
      await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: 'wrong' }),
      await form({ grant_type: 'client_credentials' }, basic(c.clientId, 'wrong')),
      await form({ grant_type: 'client_credentials', client_id: 'nobody', client_secret: c.clientSecret }),
      await form({ grant_type: 'client_credentials' }),
    ]) {
      assert.equal(r.status, 401);
      assert.equal(r.body.error, 'invalid_client');
    }
    const grant = await form({ grant_type: 'password', client_id: c.clientId, client_secret: c.clientSecret });
    assert.equal(grant.status, 400);
    assert.equal(grant.body.error, 'unsupported_grant_type');
    const missing = await form({ client_id: c.clientId, client_secret: c.clientSecret });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, 'invalid_request');
    // RFC 6749 §3.2: a parameter given twice is refused as such (it was read as missing).
    const twice = await fetch(`${ctx.srv.url}/auth/oauth2/token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&grant_type=client_credentials&client_id=${c.clientId}&client_secret=${encodeURIComponent(c.clientSecret)}`,
    }).then(async (r) => ({ status: r.status, body: await r.json() as any }));
    assert.deepEqual([twice.status, twice.body.error, twice.body.error_description], [400, 'invalid_request', 'grant_type must not be included more than once']);
    const scope = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'admin' });
    assert.equal(scope.status, 400);
    assert.equal(scope.body.error, 'invalid_scope');
  });

  it('a client may ask for a narrower scope than granted (RFC 6749 §3.3), never a wider one', async () => {
    const c = await newClient(['write']);
    const t = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'read' });
    assert.equal(t.status, 200, JSON.stringify(t.body));
    assert.equal(t.body.scope, 'read');
    const reader = api().withToken(t.body.access_token);
    assert.equal((await reader.get('/crm/customers')).status, 200);
    assert.equal((await reader.post('/crm/customers', { externalId: 'narrow-1', firstName: 'A', lastName: 'B' })).status, 403, 'the token has read only');
    for (const scope of ['admin', 'read nonsense']) {
      const r = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope });
      assert.equal(r.status, 400, scope);
      assert.equal(r.body.error, 'invalid_scope', scope);
    }
  });

  it('a scope asked for twice is granted once; a form body over 64 KiB is a 413 saying so', async () => {
    const c = await newClient(['write']);
    const t = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'read read' });
    assert.equal(t.status, 200, JSON.stringify(t.body));
    assert.equal(t.body.scope, 'read', 'was echoed as "read read" before 2026-11-28');
    const big = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: 'x'.repeat(70 * 1024) });
    assert.equal(big.status, 413);
    assert.equal(big.body.error, 'invalid_request');
    assert.match(big.body.error_description, /exceeds 64 KiB/, 'said 1 MiB before 2026-11-28');
    assert.match(big.body.errors[0].moreInfo, /smaller body/, 'moreInfo was "" here (the review, 2026-11-30)');
  });

  it('a body of another type is 415 naming the types the endpoint takes', async () => {
    const r = await fetch(`${ctx.srv.url}/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'grant_type=client_credentials' });
    assert.equal(r.status, 415);
    const body = await r.json() as any;
    assert.match(body.error_description, /application\/x-www-form-urlencoded/);
  });

  it('a JSON body that is not an object is 400 invalid_request saying the body must be an object (an array was read as keys "0", "1"…)', async () => {
    const c = await newClient(['read']);
    const json = (body: string) => fetch(`${ctx.srv.url}/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/json', ...basic(c.clientId, c.clientSecret) }, body })
      .then(async (r) => {
        const text = await r.text();
        await checkContract(ctx.srv.url, { method: 'POST', url: '/auth/oauth2/token', status: r.status, contentType: r.headers.get('content-type'), text });
        return { status: r.status, body: JSON.parse(text) as any };
      });
    for (const [body, kind] of [['[[[[]]]]', 'an array'], ['[{"grant_type":"client_credentials"}]', 'an array'], ['"client_credentials"', 'a string'], ['5', 'a number'], ['null', 'null'], ['true', 'a boolean']]) {
      const r = await json(body);
      assert.equal(r.status, 400, body);
      assert.equal(r.body.error, 'invalid_request', body);
      assert.equal(r.body.error_description, `the request body must be an object of the request's parameters (grant_type, client_id, client_secret, scope), not ${kind}`, body);
      assert.deepEqual(r.body.errors, [{ message: r.body.error_description, errorCode: 'InvalidParameterError', moreInfo: 'invalid_request' }], body);
    }
    // The same credentials in an object are granted: only the body's shape was refused.
    const ok = await json('{"grant_type":"client_credentials"}');
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  it('a client is issued TOKENS_BURST tokens at once, then 429 temporarily_unavailable; bad secrets with its id do not use them up', async () => {
    const c = await newClient(['read']);
    const other = await newClient(['read']);
    // Another's bad secrets with this client's id: refused 401, and they take nothing of its allowance.
    for (let i = 0; i < 5; i++) assert.equal((await form({ grant_type: 'client_credentials' }, basic(c.clientId, 'bulb_cs_wrong'))).status, 401);
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: TOKENS_BURST + 40 }, () => form({ grant_type: 'client_credentials' }, basic(c.clientId, c.clientSecret))));
    const seconds = Math.ceil((performance.now() - started) / 1000);
    const granted = answers.filter((a) => a.status === 200).length;
    // The burst, and one more token for each second the requests took (TOKENS_PER_SEC), at most.
    assert.ok(granted >= TOKENS_BURST && granted <= TOKENS_BURST + seconds * TOKENS_PER_SEC + 1, `${granted} granted in ${seconds} s`);
    assert.equal(answers.filter((a) => a.status !== 200 && a.status !== 429).length, 0);
    const refused = answers.find((a) => a.status === 429)!;
    assert.ok(refused, `none refused in ${seconds} s`);
    assert.equal(refused.body.error, 'temporarily_unavailable');
    assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
    assert.deepEqual(refused.body.errors.map((e: any) => e.errorCode), ['RateLimited']);
    const rows = (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM oauth_tokens t JOIN auth_clients c ON c.id = t.client_id WHERE c.uuid = $1`, [c.uuid])).rows[0].n;
    assert.equal(rows, granted, 'a refused request stores no token');
    assert.equal((await form({ grant_type: 'client_credentials' }, basic(other.clientId, other.clientSecret))).status, 200, 'another client is not held');
  });

  it('an expired token is 401', async () => {
    const c = await newClient(['read']);
    const t = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret });
    const client = api().withToken(t.body.access_token);
    // It expires in 2 s; the token cache (on by default, 60 s) must not serve it past its expiry.
    await ctx.tdb.db.query(`UPDATE oauth_tokens SET expires_at = now() + interval '2 seconds'`);
    const first = (await client.get('/crm/customers')).status;
    let r = await client.get('/crm/customers');
    for (const deadline = Date.now() + 30_000; r.status !== 401 && Date.now() < deadline; r = await client.get('/crm/customers')) {
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(first === 200 || first === 401);
    assert.equal(r.status, 401);
    assert.deepEqual(errorCodes(r), ['Unauthorized']);
    assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer/);
  });

  it("revoking a client stops its tokens and its credentials", async () => {
    const c = await newClient(['read']);
    const t = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret });
    const client = api().withToken(t.body.access_token);
    assert.equal((await client.get('/crm/customers')).status, 200);
    assert.equal((await api().delete(`/integrations/authClients/${c.uuid}`)).status, 204);
    assert.equal((await client.get('/crm/customers')).status, 401);
    const again = await form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret });
    assert.equal(again.status, 401);
    assert.equal(again.body.error, 'invalid_client');
  });
});
