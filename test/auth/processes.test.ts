// Token cache across processes (PostgreSQL): two Bulb processes on one database, the token cache on (the
// default). A key revoked through process A stops working in process B, which had it cached, without
// waiting for the cache time: the revocation's NOTIFY clears B's cache.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { freshDb, postgresAvailable, type TestDb } from '../helpers/db.ts';
import { Client } from '../helpers/server.ts';
import { spawnBulb, type Child } from '../webhooks/child.ts';

const ADMIN = 'test-admin-key-0123456789abcdef';

if (!(await postgresAvailable())) {
  console.log('# SKIP token cache across processes: no PostgreSQL');
} else {
  describe('token cache across processes [pg]', () => {
    let tdb: TestDb;
    const children: Child[] = [];
    before(async () => {
      tdb = await freshDb('pg');
      for (let i = 0; i < 2; i++) {
        children.push(await spawnBulb({ DATABASE_URL: tdb.url!, BULB_ROLE: 'api', BULB_AUTH_CACHE_MS: '', BULB_RATE_LIMIT_PER_SEC: '100000', BULB_RATE_LIMIT_BURST: '100000' }));
      }
    });
    after(async () => {
      for (const c of children) {
        c.proc.kill('SIGTERM');
        await c.exited;
      }
      await tdb?.close();
    });

    it('a key revoked in process A fails in process B (which had it cached) long before the cache time', async () => {
      const a = new Client(children[0].url!, ADMIN);
      const b = new Client(children[1].url!, ADMIN);
      const created = await a.post('/integrations/apiKeys', { name: 'two-processes', scopes: ['read'] });
      assert.equal(created.status, 201);
      const userB = b.withToken(created.body.key);
      assert.equal((await userB.get('/crm/customers')).status, 200);
      assert.equal((await userB.get('/crm/customers')).status, 200); // cached in B now
      assert.equal((await a.delete(`/integrations/apiKeys/${created.body.uuid}`)).status, 204);
      // The default cache time is 60 s; the notification must get there well before (the bench measures how fast).
      let status = (await userB.get('/crm/customers')).status;
      for (const deadline = Date.now() + 20_000; status !== 401 && Date.now() < deadline; status = (await userB.get('/crm/customers')).status) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(status, 401);
    });

    it('an OAuth client revoked in process A: its token fails in process B', async () => {
      const a = new Client(children[0].url!, ADMIN);
      const b = new Client(children[1].url!, ADMIN);
      const client = await a.post('/integrations/authClients', { name: 'two-processes', scopes: ['read'] });
      const tok = await b.req('POST', '/auth/oauth2/token', `grant_type=client_credentials&client_id=${client.body.clientId}&client_secret=${client.body.clientSecret}`, { 'content-type': 'application/x-www-form-urlencoded' });
      assert.equal(tok.status, 200);
      const userB = b.withToken(tok.body.access_token);
      assert.equal((await userB.get('/crm/customers')).status, 200);
      assert.equal((await userB.get('/crm/customers')).status, 200);
      assert.equal((await a.delete(`/integrations/authClients/${client.body.uuid}`)).status, 204);
      let status = (await userB.get('/crm/customers')).status;
      for (const deadline = Date.now() + 20_000; status !== 401 && Date.now() < deadline; status = (await userB.get('/crm/customers')).status) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(status, 401);
    });
  });
}
