// The partition keys' backfill after an upgrade (migration 060, src/partitions/backfill.ts): a database written
// before time partitioning (migration 052) holds deliveries and attempts without event_created_at /
// delivery_created_at; after the migrations the job fills each with its joined row's created_at, in batches (two
// workers at once here: each batch is one's), and records the walk as done. Rows written since carry the key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends, emptyDb } from '../helpers/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { backfillKeys } from '../../src/partitions/backfill.ts';

const BEFORE = 52; // the last migration before time partitioning (053–055)
const N = 300;

for (const backend of await backends()) {
  describe(`partition keys of rows written before the conversion [${backend}]`, () => {
    it('are filled in batches by the backfill job, each from its joined row', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, BEFORE);
        const q = <T = any>(sql: string, p: unknown[] = []) => t.db.query<T>(sql, p);
        const sub = (await q<{ id: string }>(
          `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://hooks.example/a', ARRAY['customerCreate'], 'not-a-secret') RETURNING id`,
        )).rows[0].id;
        // The old schema's rows, as the old code wrote them: events of the last days, a delivery each made a while
        // after its event, an attempt for every other delivery.
        await q(
          `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
           SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'c-' || g, 'TULIP_API', now() - interval '3 days' + g * interval '10 minutes'
           FROM generate_series(1, $1::int) g`,
          [N],
        );
        await q(
          `INSERT INTO webhook_deliveries (event_id, subscription_id, status, created_at)
           SELECT id, $1, 'delivered', created_at + interval '7 seconds' FROM events ORDER BY id`,
          [sub],
        );
        await q(
          `INSERT INTO webhook_attempts (delivery_id, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code, outcome, request_headers, request_body)
           SELECT id, subscription_id, event_id, 1, 'https://hooks.example/a', created_at + interval '2 seconds', 5, 200, 'success', '{}', '{}'
           FROM webhook_deliveries WHERE id % 2 = 0`,
        );
        await migrate(t.db);
        const missing = async () => (await q<{ d: number; a: number }>(
          `SELECT (SELECT count(*) FROM webhook_deliveries WHERE event_created_at IS NULL)::int AS d,
                  (SELECT count(*) FROM webhook_attempts WHERE delivery_created_at IS NULL)::int AS a`,
        )).rows[0];
        assert.deepEqual(await missing(), { d: N, a: N / 2 }, 'the old rows carry no key after the conversion');

        // A row written since carries its key: the walk passes it by.
        await q(
          `INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status)
           SELECT id, created_at, $1, 'delivered' FROM events ORDER BY id DESC LIMIT 1`,
          [sub],
        );
        const runs = backend === 'pg' ? 2 : 1; // two workers at once on PostgreSQL (SKIP LOCKED: one batch each)
        const filled = await Promise.all(Array.from({ length: runs }, () => backfillKeys(t.db, { batch: 64, pauseMs: 0 })));
        const total = (name: string) => filled.reduce((s, f) => s + (f[name] ?? 0), 0);
        assert.equal(total('webhook_deliveries_legacy'), N);
        assert.equal(total('webhook_attempts_legacy'), N / 2);
        assert.deepEqual(await missing(), { d: 0, a: 0 });

        const wrong = (await q<{ d: number; a: number }>(
          `SELECT (SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.event_created_at IS DISTINCT FROM e.created_at)::int AS d,
                  (SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE a.delivery_created_at IS DISTINCT FROM d.created_at)::int AS a`,
        )).rows[0];
        assert.deepEqual(wrong, { d: 0, a: 0 }, 'each key is its joined row\'s created_at');

        const walks = (await q<{ name: string; done: boolean }>(`SELECT name, done_at IS NOT NULL AS done FROM partition_backfills ORDER BY name`)).rows;
        assert.deepEqual(walks, [{ name: 'webhook_attempts_legacy', done: true }, { name: 'webhook_deliveries_legacy', done: true }]);
        assert.deepEqual(await backfillKeys(t.db, { batch: 64, pauseMs: 0 }), {}, 'a finished backfill does nothing');
      } finally {
        await t.close();
      }
    });
  });
}
