// The duplicates bench's base (bench/duplicates.ts seedBase) is written in SQL in bulk, "as the refresher would
// write it": its fold rates are only the refresher's if that holds. Here a seeded base is put back on the queue
// whole and refreshed by the real refresher: the profiles, keys (with their names) and counts it computes are the
// ones seeded, row for row, and the indexes, constraints and triggers the seed dropped or disabled are there
// again. On both engines: the PGlite part of the bench seeds through PGlite's one session.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { seedBase } from '../../bench/duplicates.ts';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';

const N = 1_500;
const TABLES = ['customers', 'duplicate_profiles', 'duplicate_keys', 'duplicate_key_counts'];

for (const backend of await backends()) {
  describe(`duplicates bench base [${backend}]`, () => {
    let tdb: TestDb;
    before(async () => {
      tdb = await freshDb(backend);
    });
    after(() => tdb?.close());
    const q = (sql: string, p: unknown[] = []) => tdb.db.query<any>(sql, p);
    const schema = async () =>
      (await q(
        `SELECT pg_get_indexdef(indexrelid) AS d FROM pg_index WHERE indrelid = ANY($1::regclass[])
         UNION ALL SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = ANY($1::regclass[])
         UNION ALL SELECT tgname || ' ' || tgenabled::text FROM pg_trigger WHERE tgrelid = ANY($1::regclass[]) AND NOT tgisinternal
         ORDER BY 1`,
        [TABLES],
      )).rows.map((r: { d: string }) => r.d);
    const stored = async () => ({
      profiles: (await q(`SELECT customer_id::text, name, emails, phones, postal_codes, cities FROM duplicate_profiles ORDER BY 1`)).rows,
      keys: (await q(`SELECT key, customer_id::text, name FROM duplicate_keys ORDER BY 1, 2`)).rows,
      counts: (await q(`SELECT key, bearers FROM duplicate_key_counts WHERE bearers > 0 ORDER BY 1`)).rows,
    });

    it('seeds the profiles, keys and counts the refresher computes for the same customers, and leaves the schema as it found it', async () => {
      const schemaBefore = await schema();
      assert.ok(schemaBefore.some((d) => d.includes('duplicate_keys_pkey')) && schemaBefore.some((d) => / O$/.test(d)), 'indexes, constraints and enabled triggers are read');
      await seedBase(tdb.db, N, '64MB');
      assert.deepEqual(await schema(), schemaBefore);
      const seeded = await stored();
      assert.equal(seeded.profiles.length, N);
      assert.ok(seeded.keys.some((k: { key: string }) => k.key.startsWith('n:') && k.key.includes('|s:')), 'street keys seeded');
      assert.ok(seeded.keys.some((k: { key: string }) => k.key.startsWith('w:')), 'word keys seeded');
      assert.equal((await q('SELECT count(*)::int AS n FROM duplicate_dirty')).rows[0].n, 0, 'the seed queues nobody: a base already folded in');

      // One seeded key taken away: the refresher writes it back (it writes what differs from what it computes).
      const gone = seeded.keys.find((k: { key: string }) => k.key.includes('|s:'));
      await q('DELETE FROM duplicate_keys WHERE key = $1 AND customer_id = $2', [gone.key, gone.customer_id]);
      await q('INSERT INTO duplicate_dirty (customer_id) SELECT id FROM customers');
      assert.equal(await refreshDuplicates(tdb.db, 'US'), N, 'every customer refreshed once (no key or name changed step: nobody re-queued)');
      const refreshed = await stored();
      assert.deepEqual(refreshed.profiles, seeded.profiles);
      assert.deepEqual(refreshed.keys, seeded.keys);
      assert.deepEqual(refreshed.counts, seeded.counts);
    });
  });
}
