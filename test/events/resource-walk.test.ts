// The events API with resourceUuid (issue 25: no request cost may grow with the data): a customer with a long
// history (tens of thousands of customerUpdate events, spread among other customers' events) asked for a type it
// rarely or never has. A page walks the resource's events in (xid, id) order for at most SCAN_BUDGET of them and
// goes on from the last one read (a short or empty page with a cursor); paging still returns every matching event
// once, in order. Counted in buffers with the plan Bulb's statement really gets (named: the cached generic plan),
// statistics fresh (on PGlite, made by Bulb's own autovacuum pass), as in test/webhooks/log-lists.test.ts.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import type { Res } from '../helpers/server.ts';
import type { Queryable } from '../../src/db/db.ts';
import { costOf } from '../helpers/buffers.ts';
import * as store from '../../src/events/store.ts';
import { maintain } from '../../src/db/autovacuum.ts';
import { ensurePartitions } from '../../src/partitions/maintain.ts';

const RESOURCE = '11111111-1111-4111-8111-111111111111'; // the long history
const BATCHES = 20; // writing transactions (xids)
const PER_BATCH = 2_000; // half of them the resource's customerUpdate events, half other customers' events
const LONG = (BATCHES * PER_BATCH) / 2; // 20,000: four budgets (store.SCAN_BUDGET, 5,000)

await describeEachDb('events of a resource with a long history', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');

  it(`loads ${LONG} customerUpdate events of one customer among as many of others, and its 3 customerMerge; statistics are made`, async () => {
    const db = ctx.tdb.db;
    await ensurePartitions(db); // the partitions the job keeps (docs/partitioning.md): the plans see them all
    const one = (type: string) =>
      db.query(`INSERT INTO events (event_type, resource_type, resource_uuid, source) VALUES ($1, 'Customer', $2, 'TULIP_API')`, [type, RESOURCE]);
    await one('customerCreate');
    for (let b = 0; b < BATCHES; b++) {
      // The customer's events interleaved with others' (each on its own heap page or nearly), the way a customer
      // updated by every sync sits among everyone else's events.
      await db.query(
        `INSERT INTO events (event_type, resource_type, resource_uuid, source)
         SELECT CASE WHEN g % 2 = 0 THEN 'customerUpdate' WHEN g % 500 = 1 THEN 'customerMerge' ELSE 'customerCreate' END, 'Customer',
           CASE WHEN g % 2 = 0 THEN $1::uuid ELSE gen_random_uuid() END, 'TULIP_API'
         FROM generate_series(1, $2::int) g ORDER BY g`,
        [RESOURCE, PER_BATCH],
      );
      if (b === BATCHES / 2) await one('customerMerge'); // one in the middle of the history
    }
    await one('customerMerge');
    await one('customerMerge');
    if (ctx.backend === 'pglite') {
      await db.query('SELECT pg_stat_force_next_flush()');
      const done = await maintain(db);
      assert.ok(done.analyzed.some((n) => n === 'events' || n.startsWith('events_')), JSON.stringify(done));
    } else {
      await db.exec('ANALYZE events'); // autovacuum's job
    }
  });

  /** Every page over HTTP until a null cursor: the events, and the pages' sizes. */
  const walk = async (query: string, limit: number) => {
    const seen: any[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 1000; i++) {
      const r: Res = await api().get(`/events?limit=${limit}&resourceUuid=${RESOURCE}${query}${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      assert.ok(r.body.data.length <= limit);
      seen.push(...r.body.data);
      sizes.push(r.body.data.length);
      if (r.body.nextCursor === null) return { seen, sizes };
      cursor = r.body.nextCursor;
    }
    throw new Error('the walk did not end');
  };
  const expected = async (where: string) =>
    (await ctx.tdb.db.query<{ uuid: string }>(`SELECT uuid FROM events WHERE resource_uuid = $1 AND ${where} ORDER BY xid, id`, [RESOURCE])).rows.map((r) => r.uuid);

  it('pages through a rare type, types it never has and a mix: every matching event once, in (xid, id) order', async () => {
    const merges = await walk('&eventType=customerMerge', 2);
    assert.deepEqual(merges.seen.map((e) => e.uuid), await expected(`event_type = 'customerMerge'`));
    assert.equal(merges.seen.length, 3);
    // The walk went on past pages that read their budget and found nothing: empty pages with a cursor.
    assert.ok(merges.sizes.length >= LONG / store.SCAN_BUDGET, JSON.stringify(merges.sizes));
    assert.ok(merges.sizes.slice(0, -1).includes(0), JSON.stringify(merges.sizes));
    const never = await walk('&eventType=customerNoteCreate,customerUnmerge', 50);
    assert.deepEqual(never.seen, []);
    const mix = await walk('&eventType=customerCreate,customerMerge', 1);
    assert.deepEqual(mix.seen.map((e) => e.uuid), await expected(`event_type IN ('customerCreate', 'customerMerge')`));
    assert.equal(mix.seen.length, 4);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const dated = await walk(`&eventType=customerMerge&since=${encodeURIComponent(since)}`, 3);
    assert.deepEqual(dated.seen.map((e) => e.uuid), await expected(`event_type = 'customerMerge' AND created_at >= '${since}'`));
  });

  it('pages through the common type and the whole history as before: full pages, each event once', async () => {
    const updates = await walk('&eventType=customerUpdate', 250);
    assert.deepEqual(updates.seen.map((e) => e.uuid), await expected(`event_type = 'customerUpdate'`));
    assert.ok(updates.sizes.slice(0, -2).every((n) => n === 250), 'a common type fills its pages');
    const all = await walk('', 250);
    assert.deepEqual(all.seen.map((e) => e.uuid), await expected('TRUE'));
    assert.equal(all.seen.length, LONG + 4);
  });

  const few = async (what: string, f: store.EventFilter, max: number) => {
    const { buffers, plans, statements } = await costOf(ctx.tdb.db, (q: Queryable) => store.listEvents(q, f));
    console.log(`# [${ctx.backend}] ${what}: ${buffers} buffers, ${statements} statement(s)`);
    assert.ok(buffers < max, `${what}: ${buffers} buffers: ${plans}`);
  };

  // The whole history: ~20,000 index entries on ~940 pages (index and heap) read. A budget's walk reads a quarter of
  // it (235 on both engines); a page of the history reads a page (19).
  it("a page for a type the customer rarely or never has reads at most the budget of the customer's events", async () => {
    await few('resourceUuid&eventType=customerMerge', { resourceUuid: RESOURCE, eventTypes: ['customerMerge'], limit: 50 }, 500);
    await few('resourceUuid&eventType=customerNoteCreate', { resourceUuid: RESOURCE, eventTypes: ['customerNoteCreate'], limit: 50 }, 500);
    const mid = await ctx.tdb.db.query<{ xid: string; id: string }>(
      `SELECT xid::text AS xid, id::text AS id FROM events WHERE resource_uuid = $1 ORDER BY xid, id OFFSET $2 LIMIT 1`, [RESOURCE, LONG / 2]);
    await few('resourceUuid&eventType=customerMerge&cursor=middle', { resourceUuid: RESOURCE, eventTypes: ['customerMerge'], after: mid.rows[0], limit: 50 }, 500);
  });

  it('a page of the history, or of its common type, reads about a page', async () => {
    await few('resourceUuid', { resourceUuid: RESOURCE, limit: 50 }, 200);
    await few('resourceUuid&eventType=customerUpdate', { resourceUuid: RESOURCE, eventTypes: ['customerUpdate'], limit: 50 }, 200);
  });
});
