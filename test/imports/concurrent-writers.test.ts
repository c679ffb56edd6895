// An import beside bulk upserts of the same customers and the duplicates refresher (PostgreSQL: several transactions
// at once). Found by a probe (2026-11-30): with 2 loops of bulk upserts over the customers an import of 3,000 lines
// updated, the import had applied no line after 5 minutes (alone: 56 s), and PostgreSQL logged 24 deadlocks, each
// through the refresher, which had claimed (deleted, uncommitted) customers' queue rows: a write queuing one of them
// again (the chunk's or a bulk's update trigger) waited for that batch, holding its customers, while the batch waited
// for the chunk (the foreign-key check of a new profile or pair, FOR KEY SHARE on a customer the chunk held FOR UPDATE)
// or for a bulk upsert (re-queuing the bearers of a name that changed step, its insert waited for the bulk's uncommitted
// queue row). Each chunk lost its 5 tries and was handed back; the refresher (which defers to an import only under a
// live lease) ran again and met the next try. Fixed: the chunk locks FOR NO KEY UPDATE, and the queue has no unique
// key, so marking a customer never waits (migration 087).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freshDb, hookedDb, postgresAvailable, type TestDb } from '../helpers/db.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { importFinished } from '../helpers/imports.ts';
import { sqlState, type Db } from '../../src/db/db.ts';
import { ImportWorker } from '../../src/imports/worker.ts';
import { refreshDuplicates, startDuplicateRefresher } from '../../src/crm/duplicates/refresh.ts';
import { activeSignals, storedState } from '../../src/crm/duplicates/store.ts';
import { profileOf } from '../../src/crm/duplicates/normalize.ts';

const hasPg = await postgresAvailable();
const CUSTOMERS = 300;
const LINES = 1200;
const FIRST = ['Ann', 'Bob', 'Carla', 'Dana', 'Emil'];

describe('an import beside bulk upserts of its customers and the duplicates refresher [pg]', { skip: hasPg ? false : 'no PostgreSQL server' }, () => {
  let tdb: TestDb;
  let db: Db;
  let srv: TestServer;
  const deadlocked: string[] = [];
  before(async () => {
    tdb = await freshDb('pg', 24);
    // Every statement that was chosen as a deadlock's victim, whoever ran it (server, worker, refresher).
    db = hookedDb(tdb.db, { failed: (sql, _name, err) => void (sqlState(err) === '40P01' && deadlocked.push(sql.trim().slice(0, 60))) });
    srv = await startServer(db);
  });
  after(async () => {
    await srv?.close();
    await tdb?.close();
  });

  it('the import completes with every line applied, and nothing deadlocks', async () => {
    const api = srv.api.withVersion('2026-11');
    const xid = (i: number) => `cw-${i}`;
    const base = Array.from({ length: CUSTOMERS }, (_, i) => ({
      externalId: xid(i), firstName: FIRST[i % FIRST.length], lastName: `Family${i % 40}`,
      emails: [{ email: `cw${i}@example.com` }], addresses: [{ address1: `${i % 60} Main Street`, city: 'Lyon', postCode: `690${i % 10}` }],
    }));
    for (let i = 0; i < CUSTOMERS; i += 100) {
      const r = await api.post('/crm/customers/bulk', base.slice(i, i + 100));
      assert.deepEqual([r.status, r.body.results.filter((x: any) => x.status !== 201)], [200, []], r.text);
    }
    await refreshDuplicates(db, 'US'); // their profiles exist: a change writes them again, as in production
    const deadlocks = async (q: { query(sql: string): Promise<{ rows: any[] }> }) =>
      Number((await q.query(`SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()`)).rows[0].n);
    const before = await deadlocks(db);

    const stops: (() => Promise<void>)[] = [];
    const failures: string[] = [];
    stops.push(startDuplicateRefresher(db, 'US', 1, (err) => failures.push(`refresher: ${String(err)}`)));
    const worker = new ImportWorker(db, { importChunkRows: 200, importLeaseMs: 5000 }, (msg) => failures.push(msg));
    await worker.start();
    stops.push(() => worker.stop());
    // Two loops of bulk upserts of 50 random customers of the import's, each a new last name.
    let writing = true;
    let bulks = 0;
    const writer = async () => {
      while (writing) {
        const items = Array.from({ length: 50 }, () => ({ externalId: xid(Math.floor(Math.random() * CUSTOMERS)), lastName: `W${Math.random()}` }));
        const r = await api.post('/crm/customers/bulk', items);
        if (r.status !== 200) failures.push(`bulk: ${r.status}`);
        bulks++;
      }
    };
    const writers = [writer(), writer()];
    try {
      while (bulks < 4) await new Promise((r) => setTimeout(r, 10)); // the writers (and the refresher behind them) are going
      const file = Array.from({ length: LINES }, (_, i) => JSON.stringify({ externalId: xid(i % CUSTOMERS), firstName: `Imp${i}` })).join('\n') + '\n';
      const imp = await api.post('/crm/imports?format=ndjson', file, { 'content-type': 'application/x-ndjson' });
      assert.equal(imp.status, 202, imp.text);
      const done = await importFinished(api, imp.body.uuid);
      assert.equal(done.status, 'completed');
      assert.deepEqual([done.rowsDone, done.created, done.failed], [LINES, 0, 0]);
    } finally {
      writing = false;
      await Promise.all(writers);
      for (const stop of stops) await stop();
    }
    // Every customer has the first name of its last line.
    const names = await db.query<{ external_id: string; first_name: string }>(`SELECT external_id, first_name FROM customers WHERE external_id LIKE 'cw-%'`);
    const expected = new Map(Array.from({ length: CUSTOMERS }, (_, k) => [xid(k), `Imp${LINES - CUSTOMERS + k}`]));
    assert.deepEqual(new Map(names.rows.map((r) => [r.external_id, r.first_name])), expected);
    // Every change was folded in: once the refresher has drained the queue, each profile is its customer's as it stands
    // (a write's queue mark survives a refresher batch that read the customer before the write committed: migration 087).
    await refreshDuplicates(db, 'US');
    const ids = (await db.query<{ id: string }>(`SELECT id FROM customers WHERE external_id LIKE 'cw-%'`)).rows.map((r) => r.id);
    const stored = new Map((await storedState(db, ids)).profiles.map((p) => [String(p.customerId), p.name]));
    assert.deepEqual(stored, new Map((await activeSignals(db, ids)).map((c) => [String(c.id), profileOf(c, 'US').name])));
    // The database's own count too, once every connection has ended (a backend's statistics are flushed by then).
    await db.close();
    const c = new pg.Client({ connectionString: tdb.url });
    await c.connect();
    const counted = await deadlocks(c).finally(() => c.end());
    assert.deepEqual({ victims: deadlocked, failures, deadlocks: counted - before }, { victims: [], failures: [], deadlocks: 0 },
      'no statement was a deadlock\'s victim, no chunk handed back, no refresh failed, pg_stat_database counted no deadlock');
  });
});
