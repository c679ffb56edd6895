// Migration 076: after the duplicates' fold began dropping format characters from names and reading phones after NFKC
// (src/crm/duplicates/normalize.ts), the active customers whose profile can change by it, and only those, go back on
// the refresher's queue, so their pairs are found without waiting for their next write.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends, emptyDb } from '../helpers/db.ts';
import { migrate } from '../../src/db/migrate.ts';

for (const backend of await backends()) {
  describe(`migration 076: the duplicates' refold (${backend})`, () => {
    it('queues the active customers with a format character in the name or a full-width phone, no others', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, 75);
        const add = async (first: string, phones: unknown[], status = 'active') =>
          (await t.db.query<{ id: string }>(`INSERT INTO customers (first_name, last_name, phones, status) VALUES ($1, 'Schmidt', $2, $3) RETURNING id`, [first, JSON.stringify(phones), status])).rows[0].id;
        const zw = await add('An\u200bna', []);
        const shy = await add('Jo\u00adhann', []);
        const wide = await add('Kenji', [{ number: '＋８１３１２３４５６７８' }]);
        await add('Anna', [{ number: '+81312345678' }]);
        await add('Mü\u200dller', [], 'disabled');
        await add('Ærø', []);
        await t.db.query('DELETE FROM duplicate_dirty');
        assert.equal((await migrate(t.db))[0], '076_duplicates_format_chars.sql');
        const queued = (await t.db.query<{ customer_id: string }>('SELECT customer_id FROM duplicate_dirty ORDER BY customer_id')).rows.map((r) => String(r.customer_id));
        assert.deepEqual(queued, [zw, shy, wide].map(String));
      } finally {
        await t.close();
      }
    });

    it('077 queues the active customers with any format character in the name or the addresses (isolates, tags, a street\'s joiner)', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, 76);
        const add = async (first: string, addresses: unknown[] = []) =>
          String((await t.db.query<{ id: string }>(`INSERT INTO customers (first_name, last_name, addresses) VALUES ($1, 'X', $2) RETURNING id`, [first, JSON.stringify(addresses)])).rows[0].id);
        const isolate = await add('An\u2066na\u2069');
        const street = await add('Jo', [{ address1: 'Main\u200dstreet 1', city: 'Berlin' }]);
        const tag = await add('Flag\u{e0067}');
        const thai = await add('สมชาย\u200bใจดี');
        await add('Plain', [{ address1: 'Main street 1', city: 'Berlin' }]);
        await t.db.query('DELETE FROM duplicate_dirty');
        assert.equal((await migrate(t.db))[0], '077_duplicates_format_chars_again.sql');
        const queued = (await t.db.query<{ customer_id: string }>('SELECT customer_id FROM duplicate_dirty ORDER BY customer_id')).rows.map((r) => String(r.customer_id));
        assert.deepEqual(queued, [isolate, street, tag, thai]);
      } finally {
        await t.close();
      }
    });
  });
}
