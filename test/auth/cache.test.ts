// BULB_AUTH_CACHE_MS: resolved tokens may be answered from memory, but a revocation through the same
// process takes effect at once (API keys, and OAuth tokens when their client is revoked).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('auth cache', (ctx) => {
  describe('with BULB_AUTH_CACHE_MS=60000', () => {
    it('a revoked API key is refused at once by the process that revoked it', async () => {
      const api = ctx.srv.api;
      const created = await api.post('/integrations/apiKeys', { name: 'cached', scopes: ['read'] });
      assert.equal(created.status, 201);
      const user = api.withToken(created.body.key);
      assert.equal((await user.get('/crm/customers')).status, 200);
      assert.equal((await user.get('/crm/customers')).status, 200); // now from the cache
      assert.equal((await api.delete(`/integrations/apiKeys/${created.body.uuid}`)).status, 204);
      const after = await user.get('/crm/customers');
      assert.equal(after.status, 401);
    });

    it('answers from memory: a revocation by another process (here: straight in the database) is not seen within the cache time', async () => {
      const api = ctx.srv.api;
      const created = await api.post('/integrations/apiKeys', { name: 'cached-elsewhere', scopes: ['read'] });
      const user = api.withToken(created.body.key);
      assert.equal((await user.get('/crm/customers')).status, 200);
      await ctx.tdb.db.query('UPDATE api_keys SET revoked_at = now() WHERE uuid = $1', [created.body.uuid]);
      assert.equal((await user.get('/crm/customers')).status, 200, 'served from the cache');
    });

    it('OAuth tokens of a revoked client are refused at once', async () => {
      const api = ctx.srv.api;
      const client = await api.post('/integrations/authClients', { name: 'cached', scopes: ['read'] });
      assert.equal(client.status, 201);
      const tok = await api.req('POST', '/auth/oauth2/token', `grant_type=client_credentials&client_id=${client.body.clientId}&client_secret=${client.body.clientSecret}`, { 'content-type': 'application/x-www-form-urlencoded' });
      assert.equal(tok.status, 200);
      const user = api.withToken(tok.body.access_token);
      assert.equal((await user.get('/crm/customers')).status, 200);
      assert.equal((await user.get('/crm/customers')).status, 200);
      assert.equal((await api.delete(`/integrations/authClients/${client.body.uuid}`)).status, 204);
      assert.equal((await user.get('/crm/customers')).status, 401);
    });
  });
}, { BULB_AUTH_CACHE_MS: '60000' });
