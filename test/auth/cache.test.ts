// BULB_AUTH_CACHE_MS: resolved tokens are answered from memory, but a revocation through the same
// process takes effect at once (API keys, and OAuth tokens when their client is revoked); one that
// notifies nobody (SQL by hand) within the cache time; losing the LISTEN connection flushes the cache.
// Across processes: test/auth/processes.test.ts.
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

const untilStatus = async (get: () => Promise<{ status: number }>, want: number, ms: number) => {
  let status = (await get()).status;
  for (const deadline = Date.now() + ms; status !== want && Date.now() < deadline; status = (await get()).status) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return status;
};

await describeEachDb('auth cache: the cache time is the backstop', (ctx) => {
  it('a revocation that notifies nobody is seen once the cache time (300 ms) has passed', async () => {
    const api = ctx.srv.api;
    const created = await api.post('/integrations/apiKeys', { name: 'ttl', scopes: ['read'] });
    const user = api.withToken(created.body.key);
    assert.equal((await user.get('/crm/customers')).status, 200);
    await ctx.tdb.db.query('UPDATE api_keys SET revoked_at = now() WHERE uuid = $1', [created.body.uuid]);
    assert.equal(await untilStatus(() => user.get('/crm/customers'), 401, 20_000), 401);
  });
}, { BULB_AUTH_CACHE_MS: '300' });

await describeEachDb('auth cache: LISTEN lost', (ctx) => {
  it('losing the LISTEN connection flushes the cache and bypasses it (a silent revocation is seen at once, not after 60 s)', async (t) => {
    if (ctx.backend !== 'pg') return t.skip('PGlite notifies in process: nothing to lose');
    const api = ctx.srv.api;
    const created = await api.post('/integrations/apiKeys', { name: 'listen-lost', scopes: ['read'] });
    const user = api.withToken(created.body.key);
    assert.equal((await user.get('/crm/customers')).status, 200);
    assert.equal((await user.get('/crm/customers')).status, 200);
    // Revoked without a notification: the cache alone would keep answering 200 for a minute.
    await ctx.tdb.db.query('UPDATE api_keys SET revoked_at = now() WHERE uuid = $1', [created.body.uuid]);
    assert.equal((await user.get('/crm/customers')).status, 200, 'served from the cache');
    const killed = await ctx.tdb.db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bulb-listen' AND datname = current_database()`,
    );
    assert.ok(killed.rows.length >= 1);
    assert.equal(await untilStatus(() => user.get('/crm/customers'), 401, 20_000), 401);
    // The LISTEN connection comes back by itself.
    const listening = async () => ({ status: (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'bulb-listen' AND datname = current_database()`)).rows[0].n });
    assert.equal(await untilStatus(listening, 1, 20_000), 1);
  });
}, { BULB_AUTH_CACHE_MS: '60000' });
