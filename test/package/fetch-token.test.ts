// fetchToken ('@bulb/client', packages/client/src/index.ts): the real exchange against a Bulb server, and token
// endpoints that answer something else (an empty 204, a proxy's HTML page, JSON without a token): each an Error
// naming the status, never a SyntaxError from the JSON parser.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { fetchToken } from '../../packages/client/src/index.ts';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('client: fetchToken against Bulb', (ctx) => {
  it('exchanges an auth client for a Bearer token that Bulb accepts; a wrong secret names the status and the OAuth error', async () => {
    const c = (await ctx.srv.api.post('/integrations/authClients', { name: 'fetch-token', scopes: ['read'] })).body;
    const t = await fetchToken(`${ctx.srv.url}/`, c.clientId, c.clientSecret);
    assert.equal(t.token_type, 'Bearer');
    assert.equal((await ctx.srv.api.withToken(t.access_token).get('/crm/customers')).status, 200);
    await assert.rejects(fetchToken(ctx.srv.url, c.clientId, `${c.clientSecret}x`), /token endpoint answered 401: invalid_client/);
  });
});

describe('client: fetchToken against endpoints that do not answer a token', () => {
  const answers: Record<string, [number, string, string]> = {
    '/empty/auth/oauth2/token': [204, '', 'text/plain'],
    '/html/auth/oauth2/token': [502, '<html><body>Bad Gateway</body></html>', 'text/html'],
    '/json/auth/oauth2/token': [200, '{"ok":true}', 'application/json'],
  };
  let server: http.Server;
  let base = '';
  before(async () => {
    server = http.createServer((req, res) => {
      const [status, body, type] = answers[req.url ?? ''] ?? [404, 'no', 'text/plain'];
      res.writeHead(status, { 'content-type': type }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  for (const [path, [status]] of Object.entries(answers)) {
    it(`${path.split('/')[1]}: an Error naming status ${status}`, async () => {
      const err = await fetchToken(`${base}/${path.split('/')[1]}`, 'id', 'secret').then(() => null, (e: Error) => e);
      assert.ok(err instanceof Error);
      assert.notEqual(err.name, 'SyntaxError');
      assert.match(err.message, new RegExp(`token endpoint answered ${status}`));
    });
  }
});
