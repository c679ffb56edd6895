// Upgrading a running deployment across the partitioning migrations (053–055, docs/partitioning.md): a database
// holding deliveries in flight (due, leased by a worker that died, retrying after a failed attempt, and one already
// delivered) migrates, its old tables become the legacy partitions, and a worker with a real receiver then makes
// every pending delivery exactly once, each with its event; new events land in their day's partition and are
// delivered too.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import { backends, emptyDb } from '../helpers/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { emitEvents } from '../../src/events/emit.ts';
import { insertSubscription } from '../../src/webhooks/store.ts';
import { newSigningSecret } from '../../src/webhooks/signing.ts';
import { startWorker } from '../helpers/worker.ts';
import { startReceiver, waitFor, sleep } from '../webhooks/receiver.ts';
import { ensurePartitions } from '../../src/partitions/maintain.ts';

const BEFORE = 52; // the last migration before time partitioning (053–055)

for (const backend of await backends()) {
  describe(`upgrade across time partitioning [${backend}]`, () => {
    it('deliveries in flight (due, leased, retrying) are each made exactly once after the migration, with their events', async () => {
      const t = await emptyDb(backend);
      const rx = await startReceiver();
      let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
      try {
        await migrate(t.db, BEFORE);
        const q = (sql: string, p: unknown[] = []) => t.db.query<any>(sql, p);
        const sub = await insertSubscription(t.db, {
          url: rx.url, eventTypes: ['customerCreate'], isActive: true, authMethod: 'NONE', bearerToken: null, basicUsername: null,
          basicPassword: null, webhookVersion: '2022-08',
        }, newSigningSecret());
        // The old schema's rows, as the old code wrote them.
        const states = ['due', 'leased', 'retrying', 'delivered', 'due-2', 'leased-2'];
        const events: Record<string, string> = {};
        for (const s of states) {
          events[s] = (await q(
            `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
             VALUES ('customerCreate', 'Customer', gen_random_uuid(), $1, 'TULIP_API') RETURNING uuid`,
            [`old-${s}`],
          )).rows[0].uuid;
          const st = s.replace(/-2$/, '');
          await q(
            `INSERT INTO webhook_deliveries (event_id, subscription_id, status, attempt_count, schedule_pos, next_attempt_at, locked_until, lock_token, delivered_at)
             SELECT e.id, $2, CASE WHEN $3 = 'delivered' THEN 'delivered' ELSE 'pending' END,
               CASE WHEN $3 IN ('retrying', 'delivered') THEN 1 ELSE 0 END, CASE WHEN $3 = 'retrying' THEN 1 ELSE 0 END,
               CASE WHEN $3 = 'delivered' THEN NULL WHEN $3 = 'retrying' THEN clock_timestamp() + interval '1 second' ELSE clock_timestamp() END,
               CASE WHEN $3 = 'leased' THEN clock_timestamp() + interval '1 second' END,
               CASE WHEN $3 = 'leased' THEN gen_random_uuid() END,
               CASE WHEN $3 = 'delivered' THEN clock_timestamp() END
             FROM events e WHERE e.uuid = $1`,
            [events[s], sub.id, st],
          );
          if (st === 'retrying' || st === 'delivered') {
            await q(
              `INSERT INTO webhook_attempts (delivery_id, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code,
                 error_code, outcome, request_headers, request_body)
               SELECT d.id, d.subscription_id, d.event_id, 1, $2, clock_timestamp(), 5, $3, $4, $5, '{}', '{}'
               FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.uuid = $1`,
              [events[s], rx.url, st === 'retrying' ? 500 : 200, st === 'retrying' ? 'HTTP_STATUS' : null, st === 'retrying' ? 'failure' : 'success'],
            );
          }
        }

        const applied = await migrate(t.db);
        assert.ok(applied.includes('054_partition_events_deliveries.sql'), applied.join());
        const parts = (await q(
          `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_deliveries'::regclass ORDER BY 1`,
        )).rows.map((r: any) => r.name);
        assert.deepEqual(parts, ['webhook_deliveries_default', 'webhook_deliveries_legacy'], 'the old table adopted whole');
        const legacyAttempts = (await q(`SELECT count(*)::int AS n FROM webhook_attempts_legacy`)).rows[0].n;
        assert.equal(legacyAttempts, 2, 'the attempts too (migration 055)');
        const leased = (await q(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE locked_until IS NOT NULL`)).rows[0].n;
        assert.equal(leased, 2, 'the leases survive the conversion (their worker died: they expire)');
        await ensurePartitions(t.db);

        worker = await startWorker(t.db, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
        const [fresh] = await emitEvents(t.db, [{
          eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'new-1' }, source: 'TULIP_API',
        }]);
        const expected = [...states.filter((s) => s !== 'delivered').map((s) => events[s]), fresh];
        await waitFor(async () => {
          const r = await q(`SELECT count(*) FILTER (WHERE status <> 'delivered')::int AS n FROM webhook_deliveries`);
          return r.rows[0].n === 0;
        }, 'every delivery made');
        await sleep(1500); // a second send, if any, would come now
        const got = rx.received.map((r) => String(r.headers['webhook-id']));
        assert.deepEqual([...got].sort(), [...expected].sort(), 'each pending delivery once, the delivered one not again');
        for (const r of rx.received) assert.equal(r.body.uuid, r.headers['webhook-id'], 'each with its event');
        const attempts = (await q(
          `SELECT count(*)::int AS n, count(delivery_created_at)::int AS keyed FROM webhook_attempts WHERE started_at > clock_timestamp() - interval '1 hour'`,
        )).rows[0];
        assert.equal(attempts.n, expected.length + 2, 'one attempt per delivery made, beside the two old ones');
        assert.equal(attempts.keyed, expected.length, 'the new attempts carry their delivery\'s partition key');
        const where = (await q(`SELECT e.tableoid::regclass::text AS p FROM events e WHERE e.uuid = $1`, [fresh])).rows[0].p;
        assert.ok(where === 'events_legacy' || /^events_p\d{8}$/.test(where), where);
      } finally {
        await worker?.stop();
        await rx.close();
        await t.close();
      }
    });
  });
}
