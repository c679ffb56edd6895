// SPEC §3 scopes and API keys: read/write/admin, create shows the key once, stored only as a hash,
// revocation, lastUsedAt, and the bootstrap admin key.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY, errorCodes } from '../helpers/server.ts';
import { backends, freshDb } from '../helpers/db.ts';
import { bootstrapAdminKey } from '../../src/auth/service.ts';

const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest();

await describeEachDb('auth: scopes and API keys', (ctx) => {
  const api = () => ctx.srv.api;
  const newKey = async (scopes: string[], name = 'k') => {
    const r = await api().post('/integrations/apiKeys', { name, scopes });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };

  it('read: GET allowed, POST 403; write: POST allowed, integrations 403; admin: everything', async () => {
    const read = api().withToken((await newKey(['read'])).key);
    const write = api().withToken((await newKey(['write'])).key);
    assert.equal((await read.get('/crm/customers')).status, 200);
    const rPost = await read.post('/crm/customers', { externalId: 'scope-r' });
    assert.equal(rPost.status, 403);
    assert.deepEqual(errorCodes(rPost), ['Forbidden']);
    assert.equal((await read.put('/crm/customers/scope-r', {})).status, 403);
    assert.equal((await read.get('/integrations/apiKeys')).status, 403);

    assert.equal((await write.post('/crm/customers', { externalId: 'scope-w' })).status, 201);
    assert.equal((await write.get('/crm/customers/scope-w')).status, 200, 'write includes read');
    assert.equal((await write.patch('/crm/customers/scope-w', { firstName: 'W' })).status, 200);
    for (const r of [await write.get('/integrations/apiKeys'), await write.post('/integrations/apiKeys', { name: 'x', scopes: ['admin'] })]) {
      assert.equal(r.status, 403);
      assert.deepEqual(errorCodes(r), ['Forbidden']);
    }

    assert.equal((await api().post('/crm/customers', { externalId: 'scope-a' })).status, 201);
    assert.equal((await api().get('/integrations/apiKeys')).status, 200);
    assert.equal((await api().get('/integrations/authClients')).status, 200);
  });

  it('creating a key shows it once; lists never show it; the database holds only its SHA-256', async () => {
    const created = await newKey(['read', 'write'], 'shown once');
    assert.match(created.key, /^bulb_key_[A-Za-z0-9_-]{40,}$/);
    assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'key', 'lastUsedAt', 'name', 'prefix', 'scopes', 'uuid'].sort());
    assert.deepEqual(created.scopes, ['read', 'write']);
    assert.match(created.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const list = await api().get('/integrations/apiKeys?limit=250');
    assert.equal(list.status, 200);
    const mine = list.body.data.find((k: any) => k.uuid === created.uuid);
    assert.ok(mine);
    assert.equal(mine.key, undefined);
    assert.ok(!list.text.includes(created.key), 'the list never contains a key');
    const rows = (await ctx.tdb.db.query(`SELECT * FROM api_keys WHERE uuid = $1`, [created.uuid])).rows;
    assert.equal(rows.length, 1);
    const dump = JSON.stringify(rows[0], (_k, v) => (v && v.type === 'Buffer' ? Buffer.from(v.data).toString('latin1') : v));
    assert.ok(!dump.includes(created.key), 'the row does not contain the key');
    assert.ok(!dump.includes(created.key.slice(9, 30)), 'nor its secret part');
    assert.ok(Buffer.from(rows[0].secret_hash).equals(sha256(created.key)), 'stored as its SHA-256');
  });

  it('revoking a key makes it 401 at once; revoking again is 404', async () => {
    const k = await newKey(['read']);
    const client = api().withToken(k.key);
    assert.equal((await client.get('/crm/customers')).status, 200);
    assert.equal((await api().delete(`/integrations/apiKeys/${k.uuid}`)).status, 204);
    const r = await client.get('/crm/customers');
    assert.equal(r.status, 401);
    assert.deepEqual(errorCodes(r), ['Unauthorized']);
    assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.ok(!(await api().get('/integrations/apiKeys?limit=250')).body.data.some((x: any) => x.uuid === k.uuid), 'revoked keys leave the list');
    const again = await api().delete(`/integrations/apiKeys/${k.uuid}`);
    assert.equal(again.status, 404);
    assert.deepEqual(errorCodes(again), ['NotFound']);
    const bad = await api().delete('/integrations/apiKeys/not-a-uuid');
    assert.equal(bad.status, 400);
  });

  it('lastUsedAt is set once the key is used', async () => {
    const k = await newKey(['read']);
    assert.equal(k.lastUsedAt, null);
    assert.equal((await api().withToken(k.key).get('/crm/customers')).status, 200);
    let lastUsedAt = null;
    for (let i = 0; i < 100 && !lastUsedAt; i++) {
      lastUsedAt = (await api().get('/integrations/apiKeys?limit=250')).body.data.find((x: any) => x.uuid === k.uuid).lastUsedAt;
      if (!lastUsedAt) await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(String(lastUsedAt), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('a call refused with 403 (scope) leaves lastUsedAt as it was: only authorised calls count', async () => {
    const k = await newKey(['read']);
    const lastUsed = async () => (await api().get('/integrations/apiKeys?limit=250')).body.data.find((x: any) => x.uuid === k.uuid).lastUsedAt;
    for (let i = 0; i < 3; i++) {
      const r = await api().withToken(k.key).post('/crm/customers', { externalId: `forbidden-${i}` });
      assert.equal(r.status, 403, r.text);
      assert.deepEqual(errorCodes(r), ['Forbidden']);
    }
    // A use is recorded off the request path: give such a write time to land before looking.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await lastUsed(), null, 'three 403s: never used');
    assert.equal((await api().withToken(k.key).get('/crm/customers')).status, 200);
    let after = null;
    for (let i = 0; i < 100 && !after; i++) {
      after = await lastUsed();
      if (!after) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(after, 'the authorised call is recorded');
  });

  it('rejects invalid key requests (unknown scope, empty name, extra fields)', async () => {
    for (const body of [{ name: 'x', scopes: ['superuser'] }, { name: '', scopes: ['read'] }, { name: 'x', scopes: [] }, { name: 'x', scopes: ['read'], key: 'mine' }]) {
      const r = await api().post('/integrations/apiKeys', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      errorCodes(r);
    }
    // Names the audit log's actor filter reads as something else: "system", a uuid (accepted until 2026-11-29).
    for (const name of ['system', '58ddd86d-8272-4e79-b110-d41213033609']) {
      for (const path of ['/integrations/apiKeys', '/integrations/authClients']) {
        const r = await api().withVersion('2026-11').post(path, { name, scopes: ['read'] });
        assert.equal(r.status, 400, `${path} ${name}: ${r.text}`);
        assert.equal(r.body.errors[0].moreInfo, 'name');
      }
    }
    assert.equal((await api().withVersion('2026-11').post('/integrations/apiKeys', { name: 'System', scopes: ['read'] })).status, 201, 'another case is another name');
  });

  it('X-Bulb-Client: console tags events {SERVICE}_APP for an admin key only (the console signs in with one)', async () => {
    const console = { 'x-bulb-client': 'console' };
    const write = api().withToken((await newKey(['write'], 'integration')).key);
    const admin = api().withToken((await newKey(['admin'], 'console user')).key);
    const made: Record<string, string> = {};
    for (const [who, client, headers] of [['write-console', write, console], ['write', write, {}], ['admin-console', admin, console], ['admin', admin, {}]] as const) {
      const r = await client.post('/crm/customers', { externalId: `source-${who}` }, headers);
      assert.equal(r.status, 201, r.text);
      made[r.body.uuid] = who;
    }
    const sources: Record<string, string> = {};
    for (const uuid of Object.keys(made)) {
      const ev = await api().withVersion('2026-11').get(`/events?resourceUuid=${uuid}&eventType=customerCreate`);
      assert.equal(ev.body.data.length, 1, ev.text);
      sources[made[uuid]] = ev.body.data[0].source;
    }
    assert.deepEqual(sources, { 'write-console': 'TULIP_API', write: 'TULIP_API', 'admin-console': 'TULIP_APP', admin: 'TULIP_API' });
  });

  it('the BULB_ADMIN_KEY bootstrap is idempotent; a revoked BULB_ADMIN_KEY stays revoked across starts', async () => {
    const count = async (key: string) => (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM api_keys WHERE secret_hash = $1`, [sha256(key)])).rows[0].n;
    assert.equal(await count(ADMIN_KEY), 1);
    assert.deepEqual(await bootstrapAdminKey(ctx.tdb.db, ADMIN_KEY), {});
    assert.deepEqual(await bootstrapAdminKey(ctx.tdb.db, ADMIN_KEY), {});
    assert.equal(await count(ADMIN_KEY), 1);
    const row = (await ctx.tdb.db.query(`SELECT uuid, scopes FROM api_keys WHERE secret_hash = $1`, [sha256(ADMIN_KEY)])).rows[0];
    assert.deepEqual(row.scopes, ['admin']);
    // A leaked bootstrap key revoked by an operator: the next start (any process still given the old value) used to
    // un-revoke it silently (before 2026-11-28).
    const leaked = 'leaked-bootstrap-key-0123456789abcdef';
    assert.deepEqual(await bootstrapAdminKey(ctx.tdb.db, leaked), {});
    const leakedUuid = (await ctx.tdb.db.query(`SELECT uuid FROM api_keys WHERE secret_hash = $1`, [sha256(leaked)])).rows[0].uuid;
    // The key a start made is in the audit log, once, as the system's act (it left no trace until 2026-11-29).
    const made = (await api().withVersion('2026-11').get(`/integrations/auditLog?action=apiKey.created&actor=system&limit=100`)).body.data.filter((r: any) => r.target?.id === leakedUuid);
    assert.equal(made.length, 1, JSON.stringify(made));
    assert.equal(made[0].actor.type, 'system');
    assert.deepEqual(made[0].details, { name: 'admin (BULB_ADMIN_KEY)', scopes: ['admin'], source: 'BULB_ADMIN_KEY' });
    assert.deepEqual(await bootstrapAdminKey(ctx.tdb.db, leaked), {});
    assert.equal((await api().withVersion('2026-11').get(`/integrations/auditLog?action=apiKey.created&actor=system&limit=100`)).body.data.filter((r: any) => r.target?.id === leakedUuid).length, 1, 'a start that finds the key makes no row');
    assert.equal((await api().withToken(leaked).get('/integrations/apiKeys')).status, 200);
    assert.equal((await api().delete(`/integrations/apiKeys/${leakedUuid}`)).status, 204);
    const again = await bootstrapAdminKey(ctx.tdb.db, leaked);
    assert.ok(again.revokedAt instanceof Date, 'the start is told the key is revoked (it warns)');
    assert.equal(again.created, undefined);
    assert.equal(await count(leaked), 1);
    assert.equal((await api().withToken(leaked).get('/integrations/apiKeys')).status, 401);
  });
});

for (const backend of await backends()) {
  it(`auth: without BULB_ADMIN_KEY one admin key is created on an empty database, none on the next start [${backend}]`, async () => {
    const tdb = await freshDb(backend);
    try {
      const first = await bootstrapAdminKey(tdb.db, undefined);
      assert.match(first.created ?? '', /^bulb_key_/);
      const second = await bootstrapAdminKey(tdb.db, undefined);
      assert.equal(second.created, undefined);
      const rows = (await tdb.db.query(`SELECT scopes, secret_hash FROM api_keys`)).rows;
      assert.equal(rows.length, 1);
      assert.deepEqual(rows[0].scopes, ['admin']);
      assert.ok(Buffer.from(rows[0].secret_hash).equals(sha256(first.created!)));
      // Concurrent first starts still create exactly one.
      await tdb.db.query(`DELETE FROM api_keys`);
      const both = await Promise.all([bootstrapAdminKey(tdb.db, undefined), bootstrapAdminKey(tdb.db, undefined)]);
      assert.equal(both.filter((b) => b.created).length, 1);
      assert.equal((await tdb.db.query(`SELECT count(*)::int AS n FROM api_keys`)).rows[0].n, 1);
      // Every admin key revoked (say, admin OAuth clients are used instead): a later start prints no new key to its
      // logs (before 2026-11-28 every start did, workers included); BULB_ADMIN_KEY is how to get one.
      await tdb.db.query(`UPDATE api_keys SET revoked_at = now()`);
      assert.equal((await bootstrapAdminKey(tdb.db, undefined)).created, undefined);
      assert.equal((await tdb.db.query(`SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL`)).rows[0].n, 0);
    } finally {
      await tdb.close();
    }
  });
}
