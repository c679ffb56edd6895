// Upgrading to Tulip's address names (migration 027): a database at 026 with addresses in Bulb's earlier shape
// (line1, line2, city, region, postalCode, country, type, isPrimary), in customers and in staged import lines, keeps
// every address, its values under Tulip's names; a country that is no 2-letter code is kept as it was.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends, emptyDb } from '../helpers/db.ts';
import { migrate } from '../../src/db/migrate.ts';

const OLD = [
  { line1: '1 Main St', line2: 'Apt 4', city: 'Albany', region: 'NY', postalCode: '12207', country: 'us', type: 'home', isPrimary: true },
  { line1: '2 rue X', city: 'Paris', country: 'France', region: 'Île-de-France' },
  { city: 'Nowhere' },
];

const EMPTY = { externalId: null, address1: null, address2: null, city: null, countryCode: null, zoneCode: null, postCode: null, firstName: null, lastName: null, phone: null, emailAddress: null, type: null, disabled: false, isPrimary: false };
const NEW = [
  { ...EMPTY, address1: '1 Main St', address2: 'Apt 4', city: 'Albany', zoneCode: 'US-NY', postCode: '12207', countryCode: 'US', type: 'home', isPrimary: true },
  { ...EMPTY, address1: '2 rue X', city: 'Paris', countryCode: 'France', zoneCode: 'Île-de-France' },
  { ...EMPTY, city: 'Nowhere' },
];

for (const backend of await backends()) {
  describe(`migration to Tulip's address names (${backend})`, () => {
    it('a database at 026 with old-shape addresses keeps every address, under the new names, each with its own uuid', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, 26);
        await t.db.query(
          `INSERT INTO customers (external_id, addresses, updated_at) VALUES ('m-1', $1, '2026-01-01T00:00:00Z'), ('m-2', '[]', '2026-01-01T00:00:00Z')`,
          [JSON.stringify(OLD)],
        );
        const imp = (await t.db.query<{ id: string }>(`INSERT INTO imports (format, with_events, source, status) VALUES ('ndjson', false, 'TULIP_API', 'queued') RETURNING id`)).rows[0].id;
        await t.db.query(
          `INSERT INTO import_rows (import_id, line, external_id, fields, addresses) VALUES ($1, 1, 'm-3', 16, $2), ($1, 2, 'm-4', 1, NULL)`,
          [imp, JSON.stringify(OLD.slice(0, 1))],
        );
        await migrate(t.db);

        const c = (await t.db.query<{ addresses: any[]; updated_at: string }>(`SELECT addresses, updated_at::text FROM customers WHERE external_id = 'm-1'`)).rows[0];
        assert.equal(c.addresses.length, 3, 'every address kept');
        for (const a of c.addresses) assert.match(a.uuid, /^[0-9a-f-]{36}$/);
        assert.equal(new Set(c.addresses.map((a) => a.uuid)).size, 3, 'each its own uuid');
        assert.deepEqual(c.addresses.map(({ uuid, ...rest }) => rest), NEW);
        assert.match(c.updated_at, /^2026-01-01/, 'the upgrade is no change of the customer (updatedAt kept)');
        assert.deepEqual((await t.db.query(`SELECT addresses FROM customers WHERE external_id = 'm-2'`)).rows[0].addresses, []);

        const staged = (await t.db.query<{ addresses: any[] | null }>(`SELECT addresses FROM import_rows WHERE import_id = $1 ORDER BY line`, [imp])).rows;
        assert.deepEqual(staged.map((r) => r.addresses), [[{ ...NEW[0], uuid: null }], null], 'staged lines too (their uuids come when applied)');
        const stored = (await t.db.query(`SELECT addresses::text AS a FROM customers`)).rows.map((r: any) => r.a).join('');
        assert.doesNotMatch(stored, /line1|postalCode|"region"|"country"/, 'no old name left');
      } finally {
        await t.close();
      }
    });
  });
}
