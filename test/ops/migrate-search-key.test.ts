// Migration 075: the customer search folds a dotless ı into i and ß into ss (as 074 folds a final ς into σ), under new
// function and index names. A database that ran 074 as first released (its folded text null for a customer without an
// externalId: no search found one; 074 was then corrected in place, which such a database never runs again) searches
// right after upgrading.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends, emptyDb } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { migrate } from '../../src/db/migrate.ts';

/** Migration 074 as released at 00caab0: customer_search_fold(external_id) without coalesce. */
const FIRST_074 = [
  `CREATE OR REPLACE FUNCTION customer_search_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN translate(lower(t), 'ς', 'σ')`,
  `CREATE OR REPLACE FUNCTION customer_search_folded(first_name text, last_name text, external_id text, email_keys text[]) RETURNS text
     LANGUAGE sql IMMUTABLE PARALLEL SAFE
     RETURN customer_search_fold(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) || E'\\n' || customer_search_fold(external_id) || E'\\n' || customer_search_fold(array_to_string(email_keys, ' '))`,
  `CREATE INDEX IF NOT EXISTS customers_search_folded ON customers USING gin (customer_search_folded(first_name, last_name, external_id, email_keys) gin_trgm_ops)`,
  `DROP INDEX IF EXISTS customers_search`,
  `INSERT INTO schema_migrations (version, name) VALUES (74, '074_search_final_sigma.sql')`,
];

for (const backend of await backends()) {
  describe(`migration 075: the search key (${backend})`, () => {
    it('a database on the first 074 finds customers without an externalId after the upgrade; ı and ß fold on both sides', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, 73);
        for (const sql of FIRST_074) await t.db.query(sql);
        await t.db.query(`INSERT INTO customers (first_name, last_name, email_keys) VALUES ('Zorroalpha', 'Noext', '{zorro@example.com}')`);
        const broken = await t.db.query(`SELECT count(*)::int AS n FROM customers WHERE customer_search_folded(first_name, last_name, external_id, email_keys) LIKE '%zorroalpha%'`);
        assert.equal(broken.rows[0].n, 0, 'the state this migration mends: the keyless customer has no search text');
        assert.equal((await migrate(t.db))[0], '075_search_key_folds.sql');
        const srv = await startServer(t.db);
        try {
          const api = srv.api.withVersion('2026-11');
          const q = async (term: string) => (await api.get(`/crm/customers?q=${encodeURIComponent(term)}`)).body.data.map((c: any) => c.lastName ?? c.externalId);
          for (const term of ['zorroalpha', 'NOEXT', 'zorro@example.com']) assert.deepEqual(await q(term), ['Noext'], term);
          for (const c of [{ firstName: 'Işık', lastName: 'Yılmaz' }, { firstName: 'Jürgen', lastName: 'Großmann' }]) assert.equal((await api.post('/crm/customers', c)).status, 201);
          for (const term of ['IŞIK', 'ışık', 'işik', 'YILMAZ']) assert.deepEqual(await q(term), ['Yılmaz'], term);
          for (const term of ['GROSSMANN', 'grossmann', 'GROẞMANN', 'großmann']) assert.deepEqual(await q(term), ['Großmann'], term);
          const idx = await t.db.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'customers' AND indexname LIKE 'customers_search%'`);
          assert.deepEqual(idx.rows.map((r) => r.indexname), ['customers_search_keys'], 'one search index, on the new key');
        } finally {
          await srv.close();
        }
      } finally {
        await t.close();
      }
    });
  });
}
