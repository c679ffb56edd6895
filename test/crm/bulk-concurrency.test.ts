// Bulk upserts at once over overlapping new externalIds (PostgreSQL only: PGlite runs one transaction at a time).
// Found by a probe (2026-11-29): 16 requests, each one existing customer and the same 50 new externalIds in its own
// order, answered 500 (deadlock detected) in 2 of 15 rounds: each insert waited on the others' uncommitted keys in
// item order. Inserted in one order (externalId, byte order), the later request waits for the earlier, then updates.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describePg } from '../helpers/suite.ts';

await describePg('bulk upserts at once', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');

  it('overlapping new externalIds in different orders: every request 200, each customer created once with one customerCreate', async () => {
    for (let round = 0; round < 6; round++) {
      const p = `bc${round}`;
      const REQUESTS = 12;
      for (let i = 0; i < REQUESTS; i++) assert.equal((await api().post('/crm/customers', { externalId: `${p}-old-${i}` })).status, 201);
      const shared = Array.from({ length: 50 }, (_, k) => `${p}-new-${k}`);
      const shuffled = () => {
        const a = [...shared];
        for (let i = a.length - 1; i > 0; i--) {
          const j = Math.floor(Math.random() * (i + 1));
          [a[i], a[j]] = [a[j], a[i]];
        }
        return a;
      };
      const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) =>
        api().post('/crm/customers/bulk', [{ externalId: `${p}-old-${i}`, firstName: `R${i}` }, ...shuffled().map((externalId) => ({ externalId, lastName: `R${i}` }))])));
      for (const a of answers) {
        assert.equal(a.status, 200, a.text);
        for (const r of a.body.results) assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r));
      }
      const created = answers.flatMap((a) => a.body.results.filter((r: any) => r.status === 201).map((r: any) => r.customer.externalId)).sort();
      assert.deepEqual(created, [...shared].sort(), 'each new customer created by exactly one request');
      const n = await ctx.tdb.db.query<{ customers: number; creates: number }>(
        `SELECT (SELECT count(*) FROM customers WHERE external_id LIKE $1)::int AS customers,
           (SELECT count(*) FROM events WHERE event_type = 'customerCreate' AND resource_external_id LIKE $1)::int AS creates`,
        [`${p}-new-%`],
      );
      assert.deepEqual(n.rows[0], { customers: 50, creates: 50 });
    }
  });
});
