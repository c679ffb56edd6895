// On a month of daily partitions (30 days kept, 7 ahead, legacy, default: ~40 per table), the hot statements stay
// index-driven and read what they return, not the tables: the events API's (xid, id) walk and a look-up by uuid
// (one index probe per partition), the claim, the logs lists and the 24 h chart (which prunes to its days).
// Counted in buffers with the plan Bulb's statement really gets (test/helpers/buffers.ts), statistics fresh.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { costOf } from '../helpers/buffers.ts';
import { maintain } from '../../src/db/autovacuum.ts';
import { addDays, partitions } from '../../src/partitions/store.ts';
import { ensurePartitions } from '../../src/partitions/maintain.ts';
import { EVENTS } from '../../src/partitions/tables.ts';
import { listEvents, findEvent } from '../../src/events/store.ts';
import { claimLanes, releaseClaims } from '../../src/webhooks/queue-store.ts';
import { listDeliveries, retryDelivery } from '../../src/webhooks/store.ts';
import { listAttempts } from '../../src/webhooks/attempts-store.ts';
import { attemptStats } from '../../src/webhooks/stats-store.ts';
import { emitOperational } from '../../src/webhooks/health-store.ts';

const DAYS = 30;
const PER_DAY = 400;

for (const backend of await backends()) {
  describe(`statements on a month of partitions [${backend}]`, () => {
    let tdb: TestDb;
    let first: Date;
    let sub = '';
    let someUuid = '';
    let v7Uuid = '';
    before(async () => {
      tdb = await freshDb(backend);
      const db = tdb.db;
      first = (await partitions(db, EVENTS)).find((p) => p.name === 'events_legacy')!.to!;
      for (let d = 0; d <= DAYS; d++) await ensurePartitions(db, addDays(first, d));
      sub = (await db.query<{ id: string }>(
        `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://hooks.example/a', ARRAY['customerCreate'], 'not-a-secret') RETURNING id`,
      )).rows[0].id;
      // Each day: events, one delivery each (delivered, the last day's newest pending), one attempt each.
      await db.query(
        `WITH ev AS (
           INSERT INTO events (uuid, event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
           SELECT gen_random_uuid(), 'customerCreate', 'Customer', gen_random_uuid(), 'c-' || g, 'TULIP_API', $1::timestamptz + g * (interval '1 day' / $3::int)
           FROM generate_series(0, $2::int * $3::int - 1) g ORDER BY g RETURNING id, created_at
         ), d AS (
           INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status, next_attempt_at, created_at)
           SELECT id, created_at, $4, CASE WHEN created_at > $1::timestamptz + ($2::int - 0.01) * interval '1 day' THEN 'pending' ELSE 'delivered' END,
             CASE WHEN created_at > $1::timestamptz + ($2::int - 0.01) * interval '1 day' THEN clock_timestamp() END, created_at
           FROM ev ORDER BY id RETURNING id, created_at, subscription_id, status
         )
         INSERT INTO webhook_attempts (delivery_id, delivery_created_at, subscription_id, attempt_number, started_at, duration_ms, status_code, outcome, url, request_headers, request_body)
         SELECT id, created_at, subscription_id, 1, created_at + interval '1 second', 10, 200, 'success', 'https://hooks.example/a', '{}', '{}'
         FROM d WHERE status = 'delivered'`,
        [first.toISOString(), DAYS, PER_DAY, sub],
      );
      // The month's rows carry random uuids (version 4, as rows made before migration 057): a look-up probes every
      // partition. An event made now gets a time-ordered one (version 7): its look-up finds its partition.
      someUuid = (await db.query<{ uuid: string }>(`SELECT uuid FROM events ORDER BY id OFFSET $1 LIMIT 1`, [DAYS * PER_DAY / 2])).rows[0].uuid;
      v7Uuid = (await db.query<{ uuid: string }>(
        `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source) VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'now', 'TULIP_API') RETURNING uuid`,
      )).rows[0].uuid;
      if (backend === 'pglite') {
        await db.query('SELECT pg_stat_force_next_flush()');
        await maintain(db);
      } else {
        await db.exec('ANALYZE events, webhook_deliveries, webhook_attempts, webhook_subscriptions');
      }
    });
    after(() => tdb?.close());

    const few = async (what: string, call: Parameters<typeof costOf>[1], max: number) => {
      const { buffers, plans } = await costOf(tdb.db, call);
      console.log(`# [${backend}] ${what}: ${buffers} buffers`);
      assert.ok(buffers < max, `${what}: ${buffers} buffers: ${plans}`);
    };

    it('has about 40 partitions per table', async () => {
      assert.ok((await partitions(tdb.db, EVENTS)).length >= DAYS + 7);
    });

    it('the events API walks (xid, id) a page at a time; a look-up by uuid probes each partition once', async () => {
      await few('GET /events', (q) => listEvents(q, { limit: 50 }), 300);
      await few('GET /events?eventType=customerCreate', (q) => listEvents(q, { eventTypes: ['customerCreate'], limit: 50 }), 300);
      await few('GET /events/{uuid} (random uuid)', (q) => findEvent(q, someUuid), 250);
      await few('GET /events/{uuid} (time-ordered uuid)', (q) => findEvent(q, v7Uuid), 20);
      assert.equal((await findEvent(tdb.db, someUuid))?.uuid, someUuid);
      assert.equal((await findEvent(tdb.db, v7Uuid))?.uuid, v7Uuid);
      assert.equal(v7Uuid[14], '7');
    });

    it('the claim reads the due deliveries, not the month', async () => {
      await few('claim', (q) => claimLanes(q, [{ subscriptionId: sub, room: 2, held: 0 }], 60_000, crypto.randomUUID()), 400);
    });

    it('the logs lists read a page; the 24 h chart reads its day', async () => {
      await few('deliveries', (q) => listDeliveries(q, { limit: 50 }, null), 400);
      await few('logs', (q) => listAttempts(q, { limit: 50 }, null), 400);
      const since = addDays(first, DAYS - 1).toISOString();
      await few('stats (24 h)', (q) => attemptStats(q, since), 200);
    });

    it('statements by a delivery\'s id name its partition: a manual retry, the release of claims, the failure events', async () => {
      const db = tdb.db;
      type Row = { id: string; uuid: string; created_at: string };
      const pick = async (offset: number) => (await db.query<Row>(
        `SELECT id, uuid, created_at FROM webhook_deliveries WHERE status = 'delivered' ORDER BY id OFFSET $1 LIMIT 1`, [offset])).rows[0];
      const state = async (d: Row) => (await db.query<{ status: string; lock_token: string | null }>(
        `SELECT status, lock_token FROM webhook_deliveries WHERE id = $1`, [d.id])).rows[0];

      const retried = await pick(DAYS * PER_DAY / 3);
      await few('manual retry (UPDATE by id)', (q) => retryDelivery(q, retried, 99), 30);
      assert.equal((await state(retried)).status, 'pending');

      const claimed = await pick(DAYS * PER_DAY / 4);
      const token = crypto.randomUUID();
      await db.query(`UPDATE webhook_deliveries SET lock_token = $2, locked_until = now() + interval '1 minute' WHERE id = $1`, [claimed.id, token]);
      await few('release of claims', (q) => releaseClaims(q, [claimed], token), 30);
      assert.equal((await state(claimed)).lock_token, null);

      // A delivery failed after its schedule: one webhookDeliveryFailed event per call (nobody listens to it here).
      const failed = await pick(DAYS * PER_DAY / 5);
      await db.query(`UPDATE webhook_deliveries SET status = 'failed', schedule_pos = 0 WHERE id = $1`, [failed.id]);
      await few('failure events', (q) => emitOperational(q, [{ id: failed.id, createdAt: failed.created_at }], [], 'TULIP_API', 99), 22);
      const events = await db.query(`SELECT 1 FROM events WHERE event_type = 'webhookDeliveryFailed' AND resource_uuid = $1`, [failed.uuid]);
      assert.equal(events.rows.length, 8); // costOf's 7 calls and the measured one

      // The logs of one delivery: a time-ordered uuid finds the delivery in its partition.
      const ev = (await db.query<{ id: string; created_at: string }>(
        `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
         VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'logs', 'TULIP_API') RETURNING id, created_at`)).rows[0];
      const v7 = (await db.query<{ uuid: string }>(
        `INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status) VALUES ($1, $2, $3, 'delivered') RETURNING uuid`,
        [ev.id, ev.created_at, sub])).rows[0].uuid;
      assert.equal(v7[14], '7');
      await few('logs of a delivery (time-ordered uuid)', (q) => listAttempts(q, { delivery: v7, limit: 50 }, null), 60);
    });
  });
}
