// The volume bench's data generator (bench/volume-data.ts) drops the big tables' secondary indexes and unique
// constraints for its load and builds them again: after it, every index and constraint of the five tables and of
// each of their partitions is there again as the migrations made it, and the rows are whole (each note's customer,
// each delivery's event with its partition key, each attempt's delivery). On PostgreSQL through two connections of
// its own; on PGlite through the one session (pgliteConn), as the bench's PGlite part makes its data.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { grow, growOn, pgliteConn } from '../../bench/volume-data.ts';
import type { PgliteDb } from '../../src/db/pglite.ts';
import { ensurePartitions } from '../../src/partitions/maintain.ts';
import { partitions } from '../../src/partitions/store.ts';
import { PARTITIONED } from '../../src/partitions/tables.ts';

const TABLES = ['customers', 'notes', 'events', 'webhook_deliveries', 'webhook_attempts'];

for (const backend of await backends()) {
  describe(`volume bench data [${backend}]`, () => {
    let tdb: TestDb;
    before(async () => {
      tdb = await freshDb(backend);
    });
    after(() => tdb?.close());
    const q = (sql: string, p: unknown[] = []) => tdb.db.query<any>(sql, p);
    /**
     * Every index of the tables and their partitions, and every constraint, as definitions (a partition's index
     * without its name: built again from its table's, it is named after its columns).
     */
    const schema = async () =>
      (await q(
        `SELECT regexp_replace(pg_get_indexdef(i.indexrelid), 'INDEX \\S+ ON', 'INDEX ON') AS d FROM pg_index i
         WHERE i.indrelid IN (SELECT relid FROM unnest($1::regclass[]) t, pg_partition_tree(t) UNION SELECT unnest($1::regclass[]))
         UNION ALL
         SELECT k.conrelid::regclass::text || ' ' || k.conname || ' ' || pg_get_constraintdef(k.oid) FROM pg_constraint k
         WHERE k.conrelid IN (SELECT relid FROM unnest($1::regclass[]) t, pg_partition_tree(t) UNION SELECT unnest($1::regclass[]))
         ORDER BY 1`,
        [TABLES],
      )).rows.map((r: { d: string }) => r.d);

    it('leaves the indexes and constraints as it found them, on every partition, and the rows whole', async () => {
      const sub = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://hooks.example/v', ARRAY['customerCreate'], 'not-a-secret') RETURNING id`)).rows[0].id;
      let day0 = new Date(0);
      for (const t of PARTITIONED) for (const p of await partitions(tdb.db, t)) if (p.name.endsWith('_legacy') && p.to && p.to > day0) day0 = p.to;
      await ensurePartitions(tdb.db, day0);
      const before = await schema();
      assert.ok(before.some((d) => d.includes('gin_trgm_ops')) && before.some((d) => /ON public\.events_p\d+ USING btree \(resource_uuid/.test(d)), 'the schema read includes GIN and partition indexes');

      if (backend === 'pg') await grow(tdb.url!, 0, 3_000, sub, 'https://hooks.example/v', day0, () => {});
      else await growOn([pgliteConn(tdb.db as PgliteDb), pgliteConn(tdb.db as PgliteDb)], 0, 3_000, sub, 'https://hooks.example/v', day0, () => {}, '64MB');

      assert.deepEqual(await schema(), before);
      const n = (await q(
        `SELECT (SELECT count(*) FROM customers)::int AS customers, (SELECT count(*) FROM notes)::int AS notes,
           (SELECT count(*) FROM events)::int AS events, (SELECT count(*) FROM webhook_deliveries)::int AS deliveries,
           (SELECT count(*) FROM webhook_attempts)::int AS attempts,
           (SELECT count(*) FROM notes n WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = n.customer_id))::int AS orphan_notes,
           (SELECT count(*) FROM webhook_deliveries d WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = d.event_id AND e.created_at = d.event_created_at))::int AS orphan_deliveries,
           (SELECT count(*) FROM webhook_attempts a WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = a.delivery_id AND d.created_at = a.delivery_created_at))::int AS orphan_attempts,
           (SELECT count(DISTINCT uuid) FROM customers)::int AS uuids,
           (SELECT count(*) FROM customers WHERE substr(uuid::text, 15, 1) = '7')::int AS v7,
           (SELECT count(*) FROM duplicate_dirty)::int AS dirty`,
      )).rows[0];
      assert.deepEqual(
        { ...n, attempts: n.attempts >= 6_000 && n.attempts <= 12_000 },
        { customers: 3_000, notes: 1_500, events: 6_000, deliveries: 6_000, attempts: true, orphan_notes: 0, orphan_deliveries: 0, orphan_attempts: 0, uuids: 3_000, v7: 3_000, dirty: 0 },
      );
      // The unique constraints are enforced again.
      await assert.rejects(q(`INSERT INTO customers (external_id) VALUES ('v1')`), /customers_external_id_key/);
      // Triggers fire again (on PostgreSQL the load's replica role was its sessions'; on PGlite it was reset): a new
      // customer is queued.
      await q(`INSERT INTO customers (external_id) VALUES ('after-the-load')`);
      assert.equal((await q(`SELECT count(*)::int AS n FROM duplicate_dirty`)).rows[0].n, 1);
    });
  });
}
