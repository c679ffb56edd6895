// The admin lists of API keys, OAuth clients and webhook subscriptions read the live rows, not every row ever made:
// revoked keys and clients and deleted subscriptions stay in their tables (an integration that rotates a key a day,
// a platform that makes and deletes a subscription per campaign), and each list walked them all for a page (a probe,
// 2026-11-30: 962 → 3,964 pages for the keys at 50,000 → 200,000 revoked; 3,040 → 6,733 for the subscriptions).
// Counted in buffers (pages the executor touched, not time) with the plan Bulb's statement really gets
// (test/helpers/buffers.ts); the answers are checked through the API first.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription } from '../helpers/server.ts';
import { costOf } from '../helpers/buffers.ts';
import { maintain } from '../../src/db/autovacuum.ts';
import { listApiKeys, listAuthClients } from '../../src/auth/store.ts';
import { listSubscriptions } from '../../src/webhooks/store.ts';

const N = 30_000;

await describeEachDb('admin lists beside many revoked and deleted rows', (ctx) => {
  const api = () => ctx.srv.api;
  const db = () => ctx.tdb.db;
  /** Every page of a list, limit by limit: the items' values of `key`. */
  const walk = async (path: string, limit: number, key: (x: any) => string) => {
    const out: string[] = [];
    for (let cursor: string | null = null; ; ) {
      const r: { status: number; text: string; body: any } = await api().get(`${path}${path.includes('?') ? '&' : '?'}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      out.push(...r.body.data.map(key));
      cursor = r.body.nextCursor;
      if (!cursor) return out;
    }
  };
  const live = { keys: [] as string[], clients: [] as string[], subscriptions: [] as string[] };

  it(`makes a few live keys, clients and subscriptions, then ${N} revoked or deleted of each; statistics are made`, async () => {
    // One of each made through the API first, copied N times as revoked (deleted) rows, then the live ones.
    const made = async () => {
      live.keys.push((await api().post('/integrations/apiKeys', { name: `k${live.keys.length}`, scopes: ['read'] })).body.uuid);
      live.clients.push((await api().post('/integrations/authClients', { name: `c${live.clients.length}`, scopes: ['read'] })).body.uuid);
      live.subscriptions.push((await createSubscription(api(), { url: 'http://127.0.0.1:9/hook', eventType: 'customerUpdate', isActive: false })).uuid);
    };
    await made();
    const [key, client, sub] = [live.keys[0], live.clients[0], live.subscriptions[0]];
    assert.equal((await api().delete(`/integrations/apiKeys/${key}`)).status, 204);
    assert.equal((await api().delete(`/integrations/authClients/${client}`)).status, 204);
    assert.equal((await api().delete(`/integrations/webhooks/subscriptions/${sub}`)).status, 204);
    live.keys.length = live.clients.length = live.subscriptions.length = 0;
    await db().query(
      `INSERT INTO api_keys (prefix, secret_hash, name, scopes, created_at, revoked_at)
       SELECT k.prefix, sha256(('revoked-' || g)::bytea), k.name, k.scopes, k.created_at, k.revoked_at FROM api_keys k, generate_series(1, $2::int) g WHERE k.uuid = $1`,
      [key, N],
    );
    await db().query(
      `INSERT INTO auth_clients (client_id, secret_hash, name, scopes, created_at, revoked_at)
       SELECT 'revoked-' || g, c.secret_hash, c.name, c.scopes, c.created_at, c.revoked_at FROM auth_clients c, generate_series(1, $2::int) g WHERE c.uuid = $1`,
      [client, N],
    );
    // Every column of the deleted subscription but its identity, whatever the migrations have added.
    const cols = (
      await db().query<{ c: string }>(
        `SELECT quote_ident(column_name) AS c FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = 'webhook_subscriptions' AND column_name NOT IN ('id', 'uuid') AND is_generated = 'NEVER'
         ORDER BY ordinal_position`,
      )
    ).rows.map((r) => r.c);
    await db().query(
      `INSERT INTO webhook_subscriptions (${cols.join(', ')}) SELECT ${cols.map((c) => `s.${c}`).join(', ')} FROM webhook_subscriptions s, generate_series(1, $2::int) g WHERE s.uuid = $1`,
      [sub, N],
    );
    for (let i = 0; i < 3; i++) await made();
    if (ctx.backend === 'pglite') {
      await db().query('SELECT pg_stat_force_next_flush()');
      const done = await maintain(db());
      for (const t of ['api_keys', 'auth_clients', 'webhook_subscriptions']) assert.ok(done.analyzed.includes(t), JSON.stringify(done));
    } else {
      await db().exec('ANALYZE api_keys, auth_clients, webhook_subscriptions'); // PostgreSQL's autovacuum daemon does this within a minute or so
    }
  });

  it('each list shows the live rows only, in order, across pages', async () => {
    const keys = await walk('/integrations/apiKeys', 2, (k) => k.uuid);
    assert.deepEqual(keys.slice(-3), live.keys, 'the live keys, after the admin key the start made');
    assert.equal(keys.length, 4);
    assert.deepEqual(await walk('/integrations/authClients', 2, (c) => c.uuid), live.clients);
    assert.deepEqual(await walk('/integrations/webhooks/subscriptions', 2, (s) => s.uuid), live.subscriptions);
    assert.deepEqual(await walk('/integrations/webhooks/subscriptions?eventType=customerUpdate', 2, (s) => s.uuid), live.subscriptions);
    assert.deepEqual(await walk('/integrations/webhooks/subscriptions?isActive=false', 1, (s) => s.uuid), live.subscriptions);
  });

  it('a page reads the live rows, not the revoked and deleted ones', async (t) => {
    for (const [what, call] of [
      ['apiKeys', (q: any) => listApiKeys(q, null, 101)],
      ['authClients', (q: any) => listAuthClients(q, null, 101)],
      ['subscriptions', (q: any) => listSubscriptions(q, { limit: 250 }, null)],
      ['subscriptions?eventType', (q: any) => listSubscriptions(q, { eventType: 'customerUpdate', limit: 250 }, null)],
      ['subscriptions?isActive=false', (q: any) => listSubscriptions(q, { isActive: false, limit: 250 }, null)],
    ] as const) {
      const { buffers, plans } = await costOf(db(), call);
      t.diagnostic(`${what}: ${buffers} buffers`);
      assert.ok(buffers < 30, `${what}: ${buffers} buffers: ${plans}`);
    }
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
