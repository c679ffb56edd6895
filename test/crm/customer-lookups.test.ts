// The lookups integrators run all day — a customer by email, the customers changed since the last sync — read
// what they find, not the table: counted in buffers (pages the executor touched, not time) with the plan
// Bulb's statement really gets (a named one: the cached generic plan; an unnamed one: planned per call), on a
// table of 20,000 customers whose statistics are fresh (on PGlite, made by Bulb's own autovacuum pass).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { listCustomers } from '../../src/crm/customers/store.ts';
import { maintain } from '../../src/db/autovacuum.ts';
import { buffersOf, costOf, recording } from '../helpers/buffers.ts';

const N = 20_000;

await describeEachDb('customer lookups on a large table', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let since = '';

  it(`loads ${N} customers, then 10 change; statistics are made (PGlite: by Bulb's autovacuum pass)`, async () => {
    const db = ctx.tdb.db;
    await db.query(
      // Written 4 hours ago on this test's shifted clock, then changed 3 hours ago, 2, 1 (below): each change after the
      // ones before, every write time in the past (a list serves only rows written before now: src/db/write-horizon.ts).
      `INSERT INTO customers (external_id, first_name, last_name, emails, email_keys, updated_at)
       SELECT 'lk' || g, 'Bo', 'N' || g, jsonb_build_array(jsonb_build_object('email', 'lk' || g || '@y.example')), ARRAY['lk' || g || '@y.example'], clock_timestamp() - interval '4 hours'
       FROM generate_series(1, $1::int) g`,
      [N],
    );
    await db.query(`UPDATE customers SET updated_at = clock_timestamp() - interval '3 hours' WHERE external_id ~ '^lk[0-9]+$' AND substr(external_id, 3)::int % 2000 = 0`);
    since = new Date(Date.now() - 210 * 60_000).toISOString();
    if (ctx.backend === 'pglite') {
      await db.query('SELECT pg_stat_force_next_flush()');
      const done = await maintain(db);
      assert.ok(done.analyzed.includes('customers'), JSON.stringify(done));
    } else {
      await db.exec('ANALYZE customers'); // PostgreSQL's autovacuum daemon does this within a minute or so
    }
  });

  it('finds a customer by email reading the index, not the table (the pending list merged, no walk in id order)', async () => {
    const r = await api().get('/crm/customers?email=LK777@y.example');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data.map((c: any) => c.externalId), ['lk777']);
    const rec = recording(ctx.tdb.db);
    for (let i = 0; i < 7; i++) await listCustomers(rec.q, { email: `lk${1000 + i}@y.example` }, null); // past the custom plans
    const { buffers, plan } = await buffersOf(ctx.tdb.db, rec.sent.at(-1)!);
    assert.ok(buffers < 50, `${buffers} buffers: ${plan}`);
  });

  /** What one listCustomers call costs: the buffers of every statement it sends, each run as Bulb runs it. */
  const costOfList = (q: Parameters<typeof listCustomers>[1], after: Parameters<typeof listCustomers>[2] = null) =>
    costOf(ctx.tdb.db, (db) => listCustomers(db, q, after));

  it('lists the customers changed since a time reading those, not the table (incremental sync), page by page', async () => {
    const r = await api().get(`/crm/customers?updatedSince=${encodeURIComponent(since)}&limit=250`);
    assert.equal(r.status, 200, r.text);
    const changed = Array.from({ length: 10 }, (_, i) => `lk${2000 * (i + 1)}`);
    assert.deepEqual(r.body.data.map((c: any) => c.externalId), changed);
    const p1 = await api().get(`/crm/customers?updatedSince=${encodeURIComponent(since)}&limit=6`);
    const p2 = await api().get(`/crm/customers?updatedSince=${encodeURIComponent(since)}&limit=6&cursor=${p1.body.nextCursor}`);
    assert.deepEqual([...p1.body.data, ...p2.body.data].map((c: any) => c.externalId), changed);
    assert.equal(p2.body.nextCursor, null);
    const { buffers, plans } = await costOfList({ updatedSince: since, limit: 50 });
    assert.ok(buffers < 50, `${buffers} buffers: ${plans}`);
  });

  it('serves a first sync (most customers changed) from the updated_at index in that order, reading about a page', async () => {
    const long = new Date(Date.now() - 86_400_000).toISOString();
    const r = await api().get(`/crm/customers?updatedSince=${encodeURIComponent(long)}&limit=3`);
    assert.deepEqual(r.body.data.map((c: any) => c.externalId), ['lk1', 'lk2', 'lk3']);
    const { buffers, plans } = await costOfList({ updatedSince: long, limit: 50 });
    assert.match(plans, /"Index Name":"customers_updated"/);
    assert.ok(buffers < 200, `${buffers} buffers: ${plans}`);
  });

  it('after a bulk change of more than 5,000 customers, reads them from the updated_at index page by page (each once)', async () => {
    const db = ctx.tdb.db;
    // 6,000 change in one statement, after the 10 above; then one of them changes again during the walk.
    await db.query(`UPDATE customers SET updated_at = clock_timestamp() - interval '2 hours' WHERE external_id ~ '^lk[0-9]+$' AND substr(external_id, 3)::int % 10 < 3 AND substr(external_id, 3)::int <= 20000`);
    await db.exec('ANALYZE customers');
    const bulk = new Date(Date.now() - 150 * 60_000).toISOString();
    const { buffers, plans } = await costOfList({ updatedSince: bulk, limit: 50 });
    assert.match(plans, /"Index Name":"customers_updated"/, 'the index, not a walk of the primary key with a filter');
    assert.ok(buffers < 60, `${buffers} buffers: ${plans}`);
    // Deeper in the walk (a cursor's page) it is the same index.
    const mid = await db.query<{ at: string; id: string }>(
      `SELECT to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, id::text FROM customers WHERE updated_at >= $1 ORDER BY updated_at, id OFFSET 3000 LIMIT 1`,
      [bulk],
    );
    const deep = await costOfList({ updatedSince: bulk, limit: 50 }, mid.rows[0]);
    assert.match(deep.plans, /"Index Name":"customers_updated"/);
    assert.ok(deep.buffers < 60, `${deep.buffers} buffers: ${deep.plans}`);

    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; ; page++) {
      const r: { status: number; text: string; body: any } = await api().get(`/crm/customers?updatedSince=${encodeURIComponent(bulk)}&limit=250${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.data.map((c: any) => c.externalId));
      if (page === 2) {
        assert.ok(seen.includes('lk1'));
        // lk1, served already, changes (later than the bulk change, on this test's shifted clock): it comes again.
        await db.query(`UPDATE customers SET last_name = 'Changed', updated_at = clock_timestamp() - interval '1 hour' WHERE external_id = 'lk1'`);
      }
      cursor = r.body.nextCursor;
      if (!cursor) break;
    }
    assert.equal(seen.length, 6001);
    assert.equal(new Set(seen).size, 6000);
    assert.equal(seen.at(-1), 'lk1', 'a customer changed during the walk is served again at its end, as it now is');
    // An id cursor (of the id-ordered list) is not one of this walk's.
    const idCursor = Buffer.from('c1:5', 'utf8').toString('base64url');
    const bad = await api().get(`/crm/customers?updatedSince=${encodeURIComponent(bulk)}&cursor=${idCursor}`);
    assert.equal(bad.status, 400, bad.text);
  });
});
