// A customer's notes (GET /crm/customers/{id}/notes, and every kind of attached data, one statement for all) read
// the customer's rows, not the table (issue 25), for customers the statistics count among the most common whose
// notes sit in long runs of ids (a POS import, customer by customer, in no order of customer id): a page of a
// customer far in the id order, and the last page of one before others. Written as `customer_id = $1 … ORDER BY id`
// the planner walked notes_pkey, expecting such a customer's notes spread through the table, and read every note in
// between. Counted in buffers with the plan Bulb's statement really gets (planned per call), statistics fresh (on
// PGlite, made by Bulb's own autovacuum pass), as in test/webhooks/log-lists.test.ts.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import type { Res } from '../helpers/server.ts';
import type { Queryable } from '../../src/db/db.ts';
import { costOf } from '../helpers/buffers.ts';
import { listRows } from '../../src/crm/attached/store.ts';
import { kindByName } from '../../src/crm/attached/kinds.ts';
import { maintain } from '../../src/db/autovacuum.ts';

const RUNS = [5, 2, 8, 1, 7, 3, 6, 4]; // customers la-1…la-8, their notes in this order of ids
const RUN = 12_500; // notes each: 100,000 in runs, each customer an eighth of the table
const SMALL = 400; // customers la-9…la-408, 2 notes each, after the runs

await describeEachDb('lists of a customer\'s data on a large table', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const notes = kindByName('notes');
  const ids: Record<string, string> = {};

  it(`loads ${RUNS.length} customers with ${RUN} notes each in runs, ${SMALL} with 2; statistics are made (PGlite: by Bulb's autovacuum pass)`, async () => {
    const db = ctx.tdb.db;
    const c = await db.query<{ id: string; external_id: string }>(
      `INSERT INTO customers (external_id) SELECT 'la-' || g FROM generate_series(1, $1::int) g ORDER BY g RETURNING id::text, external_id`,
      [RUNS.length + SMALL],
    );
    for (const r of c.rows) ids[r.external_id] = r.id;
    await db.query(
      `INSERT INTO notes (customer_id, type, comments)
       SELECT (SELECT id FROM customers WHERE external_id = 'la-' || ($1::int[])[g / $2 + 1]), 'CUSTOMER_NOTE', 'note ' || g
       FROM generate_series(0, $2 * array_length($1::int[], 1) - 1) g ORDER BY g`,
      [RUNS, RUN],
    );
    await db.query(
      `INSERT INTO notes (customer_id, type, comments)
       SELECT c.id, 'CUSTOMER_NOTE', 'small' FROM customers c CROSS JOIN generate_series(1, 2)
       WHERE c.external_id LIKE 'la-%' AND substr(c.external_id, 4)::int > $1 ORDER BY c.id`,
      [RUNS.length],
    );
    if (ctx.backend === 'pglite') {
      await db.query('SELECT pg_stat_force_next_flush()');
      const done = await maintain(db);
      assert.ok(done.analyzed.includes('notes'), JSON.stringify(done));
    } else {
      await db.exec('ANALYZE customers, notes'); // autovacuum's job
    }
    const mcv = await db.query<{ n: number }>(
      `SELECT cardinality(most_common_vals::text::bigint[]) AS n FROM pg_stats WHERE tablename = 'notes' AND attname = 'customer_id'`);
    assert.ok(mcv.rows[0].n >= RUNS.length, 'the run customers are most-common values');
  });

  /** The id of a customer's note `back` from its last. */
  const fromEnd = async (customer: string, back: number) =>
    (await ctx.tdb.db.query<{ id: string }>(`SELECT id::text AS id FROM notes WHERE customer_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1`, [ids[customer], back])).rows[0].id;

  const few = async (what: string, call: (q: Queryable) => Promise<unknown>, max: number) => {
    const { buffers, plans, statements } = await costOf(ctx.tdb.db, call);
    console.log(`# [${ctx.backend}] ${what}: ${buffers} buffers, ${statements} statement(s)`);
    assert.ok(buffers < max, `${what}: ${buffers} buffers: ${plans}`);
  };

  // Walking the primary key to the last run reads ~90,000 notes (~1,000 pages and more); a page reads a page.
  it('a page of a customer far in the id order, or the last page of one before others, reads that page', async () => {
    await few('notes of la-4 (the last run), first page', (q) => listRows(q, notes, ids['la-4'], null, 50), 60);
    await few('notes of la-5 (the first run), its last page (2 notes)', async (q) => listRows(q, notes, ids['la-5'], await fromEnd('la-5', 2), 50), 60);
    await few('notes of la-1, middle run, its last page', async (q) => listRows(q, notes, ids['la-1'], await fromEnd('la-1', 30), 50), 60);
    await few('notes of la-300 (2 notes)', (q) => listRows(q, notes, ids['la-300'], null, 50), 60);
    await few('notes of la-2, first page', (q) => listRows(q, notes, ids['la-2'], null, 250), 120);
  });

  it('pages through a customer over HTTP: each note once, in id order, and nothing of another customer', async () => {
    const walk = async (customer: string, limit: number, from: string | null = null) => {
      const seen: any[] = [];
      let cursor: string | null = from;
      for (let i = 0; i < 1000; i++) {
        const r: Res = await api().get(`/crm/customers/${customer}/notes?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(r.status, 200, r.text);
        seen.push(...r.body.data);
        cursor = r.body.nextCursor;
        if (cursor === null) return seen;
      }
      throw new Error('the walk did not end');
    };
    const expected = async (customer: string) =>
      (await ctx.tdb.db.query<{ uuid: string }>(`SELECT uuid FROM notes WHERE customer_id = $1 ORDER BY id`, [ids[customer]])).rows.map((r) => r.uuid);
    const small = await walk('la-300', 1);
    assert.deepEqual(small.map((n) => n.uuid), await expected('la-300'));
    assert.equal(small.length, 2);
    const run = await walk('la-4', 250);
    assert.deepEqual(run.map((n) => n.uuid), await expected('la-4'));
    assert.equal(run.length, RUN);
    assert.ok(run.every((n) => n.customer === run[0].customer));
    // The first customer (smallest id) and the last: the range's edges.
    assert.deepEqual((await walk('la-1', 250)).map((n) => n.uuid), await expected('la-1'));
    assert.deepEqual((await walk(`la-${RUNS.length + SMALL}`, 1)).map((n) => n.uuid), await expected(`la-${RUNS.length + SMALL}`));
    const none = await api().post('/crm/customers', { externalId: 'la-none' });
    assert.deepEqual((await api().get(`/crm/customers/la-none/notes`)).body, { data: [], nextCursor: null }, none.text);
  });
});
