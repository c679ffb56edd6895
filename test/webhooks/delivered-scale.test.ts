// GET …/webhooks/deliveries?status=delivered behind a large pending backlog (issue 24, item 14): with 1,000,000
// deliveries of which the newest 900,000 are pending (an endpoint down), a page of delivered ones reads the partial
// index webhook_deliveries_delivered (migration 038), not the primary key through the backlog. Counted in buffers
// with the plan Bulb's statement really gets (test/helpers/buffers.ts), statistics fresh (PGlite: Bulb's autovacuum);
// the deliveries' secondary indexes made after the load, as a restore makes them.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { costOf } from '../helpers/buffers.ts';
import { maintain } from '../../src/db/autovacuum.ts';
import { listDeliveries } from '../../src/webhooks/store.ts';
import { dropIndexes } from '../../bench/volume-data.ts';

const N = 1_000_000;
const DELIVERED = 100_000; // the oldest; every later one is pending

await describeEachDb('delivered deliveries behind a pending backlog', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const db = () => ctx.tdb.db;
  let newestDelivered = '';

  it(`loads ${N} deliveries, the newest ${N - DELIVERED} pending; statistics are made (PGlite: by Bulb's autovacuum pass)`, async () => {
    await db().query(
      `INSERT INTO webhook_subscriptions (url, event_types, signing_secret, is_active)
       VALUES ('https://hooks.example/down', ARRAY['customerCreate'], 'not-a-secret', false)`,
    );
    await db().query(
      `INSERT INTO events (event_type, resource_type, resource_uuid, source)
       SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'TULIP_API' FROM generate_series(1, 1000)`,
    );
    // The deliveries' secondary indexes are made again from their own definitions after the load (one sort each
    // instead of a million insertions; bench/volume-data.ts does the same), the primary key kept.
    const again = await dropIndexes(db(), ['webhook_deliveries']);
    assert.ok(again.some((r) => r.sql.includes('webhook_deliveries_delivered')), JSON.stringify(again));
    await db().query(
      // With its event's created_at, as Bulb writes a delivery (its partition key: migration 054).
      `WITH e AS (SELECT id, created_at, row_number() OVER (ORDER BY id) - 1 AS k FROM events)
       INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status, attempt_count, next_attempt_at, delivered_at)
       SELECT e.id, e.created_at, (SELECT id FROM webhook_subscriptions),
         CASE WHEN g <= $2::int THEN 'delivered' ELSE 'pending' END, CASE WHEN g <= $2::int THEN 1 ELSE 0 END,
         CASE WHEN g > $2::int THEN clock_timestamp() END, CASE WHEN g <= $2::int THEN clock_timestamp() END
       FROM generate_series(1, $1::int) g JOIN e ON e.k = g % 1000 ORDER BY g`,
      [N, DELIVERED],
    );
    for (const r of again) await db().exec(r.sql);
    newestDelivered = (await db().query(`SELECT uuid FROM webhook_deliveries WHERE status = 'delivered' ORDER BY id DESC LIMIT 1`)).rows[0].uuid;
    if (ctx.backend === 'pglite') {
      await db().query('SELECT pg_stat_force_next_flush()');
      const done = await maintain(db());
      assert.ok(done.analyzed.some((t) => t.startsWith('webhook_deliveries')), JSON.stringify(done)); // its partition (migration 054)
    } else {
      await db().exec('ANALYZE events, webhook_subscriptions, webhook_deliveries'); // autovacuum's job
    }
  });

  it('answers the delivered ones, newest first, page by page', async () => {
    const first = await api().get('/integrations/webhooks/deliveries?status=delivered&limit=3');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.data.length, 3);
    assert.equal(first.body.data[0].uuid, newestDelivered);
    assert.ok(first.body.data.every((d: any) => d.status === 'delivered'));
    const next = await api().get(`/integrations/webhooks/deliveries?status=delivered&limit=3&cursor=${first.body.nextCursor}`);
    assert.equal(next.body.data.length, 3);
    assert.ok(next.body.data.every((d: any) => d.status === 'delivered' && !first.body.data.some((f: any) => f.uuid === d.uuid)));
  });

  // Before migration 038 the page walked the primary key through the 900,000 pending deliveries first (24,000–26,500 buffers).
  it('a page of delivered deliveries reads the delivered ones, not the backlog in front of them', async (t) => {
    const { buffers, plans } = await costOf(db(), (q) => listDeliveries(q, { status: 'delivered', limit: 50 }, null));
    t.diagnostic(`${buffers} buffers`);
    assert.ok(buffers < 400, `${buffers} buffers: ${plans}`);
  });
});
