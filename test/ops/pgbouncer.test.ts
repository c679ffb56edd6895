// Bulb behind a real PgBouncer in transaction mode (Debian's 1.18: no prepared statements, no startup `options`):
// start refuses without BULB_DATABASE_DIRECT_URL, naming it; with it, every path that matters works through the
// pooler (customers, merge, bulk, an import's COPY, an export, webhook delivery woken by NOTIFY, a revoked key
// refused at once). Mandatory with CI=true (.ci/run installs pgbouncer); skipped with a printed reason otherwise.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { TEST_SECRET_KEY, freshDb, postgresAvailable, type TestDb } from '../helpers/db.ts';
import { pgbouncerAvailable, startPgBouncer, type Bouncer } from '../helpers/pgbouncer.ts';
import { runBulb, startBulb, type Proc } from '../helpers/process.ts';
import { Client } from '../helpers/server.ts';
import { startReceiver, waitFor, type Receiver } from '../webhooks/receiver.ts';
import { decidePooling, isTransactionPooler } from '../../src/db/pooler.ts';
import { PgDb } from '../../src/db/pg.ts';
import { ConfigError } from '../../src/config.ts';
import { databaseUnavailable } from '../../src/db/unavailable.ts';

const KEY = 'pgbouncer-admin-key-0123456789abcdef';
const enabled = (await postgresAvailable()) && pgbouncerAvailable();

/** Transactions PgBouncer served for a database (its admin console's SHOW STATS). */
async function pooledTransactions(b: Bouncer, database: string): Promise<number> {
  const c = new pg.Client({ connectionString: b.adminUrl });
  await c.connect();
  try {
    const r = await c.query('SHOW STATS');
    return Number(r.rows.find((x: any) => x.database === database)?.total_xact_count ?? 0);
  } finally {
    await c.end();
  }
}

describe('behind PgBouncer in transaction mode', { skip: !enabled }, () => {
  let tdb: TestDb;
  let bouncer: Bouncer;
  let proc: Proc | undefined;
  let rx: Receiver;
  let dbName: string;

  before(async () => {
    tdb = await freshDb('pg');
    dbName = new URL(tdb.url!).pathname.slice(1);
    bouncer = await startPgBouncer({ poolSize: 4 });
    rx = await startReceiver();
  });
  after(async () => {
    if (proc && proc.child.exitCode === null) await proc.stop().catch(() => proc!.child.kill('SIGKILL'));
    await rx?.close();
    await bouncer?.stop();
    await tdb?.close();
  });

  it('without BULB_DATABASE_DIRECT_URL the start refuses, naming the setting to add', async () => {
    const r = await runBulb({ DATABASE_URL: bouncer.url(dbName), BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_ADMIN_KEY: KEY });
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, /configuration error: DATABASE_URL points at a transaction-mode connection pooler.*set BULB_DATABASE_DIRECT_URL/);
  });

  it('with it, customers, merge, bulk, imports, export, webhooks and revocation all work through the pooler', async () => {
    const before = await pooledTransactions(bouncer, dbName);
    proc = await startBulb({
      DATABASE_URL: bouncer.url(dbName), BULB_DATABASE_DIRECT_URL: tdb.url!, BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_ADMIN_KEY: KEY,
      BULB_AUTH_CACHE_MS: '600000', // a revocation must reach the cache by NOTIFY, not by expiry
    });
    assert.match(proc.output(), /transaction-mode pooler: sessions use BULB_DATABASE_DIRECT_URL; prepared statements off/);
    const api = new Client(proc.url, KEY, '2026-11');

    const sub = await api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventTypes: ['customerCreate'] });
    assert.equal(sub.status, 201, sub.text);

    // Customers: the hot named statements run unnamed here (PgBouncer 1.18 would mix up prepared statements).
    for (const id of ['pb-1', 'pb-2', 'pb-3']) assert.equal((await api.post('/crm/customers', { externalId: id, firstName: 'Pat' })).status, 201);
    for (let i = 0; i < 20; i++) assert.equal((await api.get('/crm/customers/pb-1')).status, 200); // many server connections
    assert.equal((await api.patch('/crm/customers/pb-2', { lastName: 'Bouncer' })).body.lastName, 'Bouncer');
    const list = await api.get('/crm/customers?limit=2');
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 2);
    const next = await api.get(`/crm/customers?limit=2&cursor=${encodeURIComponent(list.body.nextCursor)}`);
    assert.deepEqual(next.body.data.map((c: any) => c.externalId), ['pb-3']);
    // Timestamps are read in UTC (TimeZone set per client, carried by PgBouncer across server connections).
    assert.match(list.body.data[0].createdAt, /Z$/);

    const bulk = await api.post('/crm/customers/bulk', [{ externalId: 'pb-4' }, { externalId: 'pb-1', firstName: 'Patricia' }]);
    assert.deepEqual(bulk.body.results.map((r: any) => r.status), [201, 200]);

    const merged = await api.post('/crm/customers/pb-1/merge', { mergeWithCustomerIds: ['pb-2'] });
    assert.equal(merged.status, 200, merged.text);
    assert.equal((await api.get('/crm/customers/pb-2')).body.mergedInto.externalId, 'pb-1');

    // An import streams through COPY on the direct connection and is applied by the worker through the pooler.
    const file = Array.from({ length: 300 }, (_, i) => JSON.stringify({ externalId: `imp-${i}`, firstName: 'Imported' })).join('\n');
    const imp = await api.post('/crm/imports?format=ndjson&events=true', file, { 'content-type': 'application/x-ndjson' });
    assert.equal(imp.status, 202, imp.text);
    const done = await waitFor(async () => {
      const r = await api.get(`/crm/imports/${imp.body.uuid}`);
      return r.body.status === 'completed' ? r.body : undefined;
    }, 'import completed', 60_000, 200);
    assert.equal(done.created, 300);

    const exported = await fetch(`${proc.url}/api/2026-11/crm/customers/export`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(exported.status, 200);
    assert.equal((await exported.text()).trim().split('\n').length, 303, 'pb-1, pb-3, pb-4 and 300 imported (pb-2 is merged away)');

    // Every customerCreate reached the receiver (NOTIFY sent through the pooler, LISTEN on the direct connection).
    await waitFor(() => rx.received.length >= 304 || undefined, 'webhooks delivered', 60_000, 100);
    const ids = new Set(rx.received.map((r) => r.body.resource.externalId));
    for (const id of ['pb-1', 'pb-2', 'pb-3', 'pb-4', 'imp-0', 'imp-299']) assert.ok(ids.has(id), `${id} delivered`);

    // A revoked key is refused at once, though the cache would keep it for 10 minutes: NOTIFY reached LISTEN.
    const created = await api.post('/integrations/apiKeys', { name: 'through-the-pooler', scopes: ['read'] });
    const reader = api.withToken(created.body.key);
    assert.equal((await reader.get('/crm/customers/pb-3')).status, 200);
    assert.equal((await api.delete(`/integrations/apiKeys/${created.body.uuid}`)).status, 204);
    await waitFor(async () => ((await reader.get('/crm/customers/pb-3')).status === 401) || undefined, 'revoked key refused', 10_000, 50);

    assert.ok((await pooledTransactions(bouncer, dbName)) - before > 50, 'the work went through PgBouncer');
    assert.equal(await proc.stop(), 0, proc.output());
  });
});

describe('telling a transaction pooler from a direct connection', { skip: !enabled }, () => {
  let tdb: TestDb;
  let bouncer: Bouncer;
  before(async () => {
    tdb = await freshDb('pg');
    // PgBouncer lending the longest-idle server connection (not the most recently released one, its default).
    bouncer = await startPgBouncer({ poolSize: 4, settings: ['server_round_robin = 1'] });
  });
  after(async () => {
    await bouncer?.stop();
    await tdb?.close();
  });

  it('PgBouncer with server_round_robin and two idle server connections is seen as a pooler, every time (it was missed every time)', async () => {
    const url = bouncer.url(new URL(tdb.url!).pathname.slice(1));
    for (let i = 0; i < 5; i++) {
      // Two server connections opened and left idle: two clients in a transaction at once.
      const cs = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
      await Promise.all(cs.map((c) => c.connect()));
      await Promise.all(cs.map((c) => c.query('BEGIN').then(() => c.query('SELECT 1'))));
      await Promise.all(cs.map((c) => c.query('COMMIT')));
      await Promise.all(cs.map((c) => c.end()));
      assert.equal(await isTransactionPooler(url), true, `round ${i}`);
    }
    assert.equal(await isTransactionPooler(tdb.url!), false, 'a direct connection is not');
  });

  it('a pooler holding a new connection\'s first statement past the connect timeout fails that request (503), not the process', async () => {
    // PgBouncer completes the login itself and queues the setup statements until a server connection is free (a pool
    // busy, PAUSE, a failover). The pool's connect timeout then destroyed the socket and node-postgres emitted an
    // 'error' nothing listened to: the process ended (found by a probe: every Bulb process behind the pooler died).
    const name = new URL(tdb.url!).pathname.slice(1);
    const single = await startPgBouncer({ poolSize: 1 });
    const db = new PgDb(single.url(name), 2, { preparedStatements: false, connectTimeoutMs: 400 });
    const holder = new pg.Client({ connectionString: single.url(name) });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1'); // the one server connection, held in a transaction
      const err = await db.query('SELECT 1').then(() => null, (e: Error) => e);
      assert.ok(err && databaseUnavailable(err), `answered as unavailable: ${err?.message}`);
      await new Promise((r) => setTimeout(r, 200)); // an 'error' emitted after the failure would end the run here
      await holder.query('COMMIT');
      assert.deepEqual((await db.query<{ one: number }>('SELECT 1 AS one')).rows, [{ one: 1 }], 'the pool serves again');
    } finally {
      await holder.end();
      await db.close();
      await single.stop();
    }
  });

  it('a BULB_DATABASE_DIRECT_URL other than DATABASE_URL says DATABASE_URL is a pooler: no statement prepared by name', async () => {
    const d = await decidePooling(tdb.url!, `${tdb.url!}?application_name=direct`, 'auto');
    assert.deepEqual([d.pooler, d.preparedStatements], [true, false]);
    const direct = await decidePooling(tdb.url!, undefined, 'auto');
    assert.deepEqual([direct.pooler, direct.preparedStatements], [false, true]);
    // A "direct" URL that is the pooler again is refused at start (LISTEN through it heard nothing; found by a probe).
    const pooled = bouncer.url(new URL(tdb.url!).pathname.slice(1));
    await assert.rejects(decidePooling(pooled, `${pooled}?application_name=direct`, 'auto'), (e: Error) => e instanceof ConfigError && /BULB_DATABASE_DIRECT_URL points at a transaction-mode connection pooler too/.test(e.message));
  });
});
