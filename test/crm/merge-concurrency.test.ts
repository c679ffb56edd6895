// Concurrent merges over overlapping customers (PostgreSQL only: PGlite runs one transaction at a
// time). A fast-check property over random merge plans, each fired at once through all three doors:
// no 5xx, no attached row lost or duplicated, every row on an active customer, every disabled
// customer pointing straight at an active one (no chains, no cycles), associations kept per associate.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { describePg } from '../helpers/suite.ts';
import { ATTACHED_TABLES, attach, makeAssociate, makeCustomer, type Made } from './fixtures.ts';

const N = 8; // customers per run

await describePg('customer merge under concurrency', (ctx) => {

  const mergeStep = fc.record({
    primary: fc.nat({ max: N - 1 }),
    secondaries: fc.uniqueArray(fc.nat({ max: N - 1 }), { minLength: 1, maxLength: 3 }),
    door: fc.constantFrom('2025-04', 'uuid', 'externalId'),
  });
  const plan = fc.array(mergeStep, { minLength: 4, maxLength: 14 }).map((steps) =>
    steps.map((s) => ({ ...s, secondaries: s.secondaries.filter((x) => x !== s.primary) })).filter((s) => s.secondaries.length > 0),
  );

  let run = 0;
  it('random overlapping merge plans, fired at once, keep every invariant', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async (steps) => {
        const db = ctx.tdb.db;
        const prefix = `cc${run++}`;
        const assoc = [await makeAssociate(db, `${prefix}-a0`), await makeAssociate(db, `${prefix}-a1`), await makeAssociate(db, `${prefix}-a2`)];
        const cs: Made[] = [];
        for (let i = 0; i < N; i++) {
          const c = await makeCustomer(db, `${prefix}-c${i}`);
          await attach(db, c.id, 1 + (i % 2), [assoc[i % 3], assoc[(i + 1) % 3]]);
          cs.push(c);
        }
        const ids = cs.map((c) => c.id);
        const rowsOf = async () => {
          const out: Record<string, string[]> = {};
          for (const t of ATTACHED_TABLES) {
            out[t] = (await db.query(`SELECT id FROM ${t} WHERE customer_id = ANY($1::bigint[]) ORDER BY id`, [ids])).rows.map((r) => r.id);
          }
          return out;
        };
        const initial = await rowsOf();
        const initialAssoc = (await db.query(`SELECT customer_id, associate_id FROM customer_associates WHERE customer_id = ANY($1::bigint[])`, [ids])).rows;

        const answers = await Promise.all(
          steps.map((s) => {
            const p = cs[s.primary];
            const sec = s.secondaries.map((i) => cs[i]);
            if (s.door === '2025-04') return ctx.srv.api.post(`/crm/customers/${p.externalId}/merge`, { mergeWithCustomerIds: sec.map((c) => c.externalId) });
            if (s.door === 'uuid') return ctx.srv.api.withVersion('2022-08').put(`/crm/customers/${p.uuid}/merge`, { ids: sec.map((c) => c.uuid) });
            return ctx.srv.api.withVersion('2022-04').put(`/crm/customers/${p.externalId}/merge_by_external_id`, { ids: sec.map((c) => c.externalId) });
          }),
        );
        for (const a of answers) {
          assert.ok(a.status === 200 || a.status === 403, `unexpected ${a.status}: ${a.text}`);
          if (a.status === 403) assert.equal(a.body.errors[0].errorCode, 'CustomerDisabled');
        }
        assert.ok(answers.some((a) => a.status === 200), 'at least one merge succeeded');

        // Every attached row still exists, exactly once, on a customer of this run.
        const now = await rowsOf();
        for (const t of ATTACHED_TABLES) if (t !== 'customer_associates') assert.deepEqual(now[t], initial[t], t);

        const state = new Map(
          (await db.query(`SELECT id, status, merged_into FROM customers WHERE id = ANY($1::bigint[])`, [ids])).rows.map((r) => [r.id, r]),
        );
        for (const c of state.values()) {
          if (c.status === 'active') assert.equal(c.merged_into, null);
          else assert.equal(state.get(c.merged_into)?.status, 'active', `customer ${c.id} points at an active customer (no chain, no cycle)`);
        }
        const survivor = (id: string) => (state.get(id)!.status === 'active' ? id : state.get(id)!.merged_into);
        const holders = (await db.query(`SELECT DISTINCT customer_id FROM (${ATTACHED_TABLES.map((t) => `SELECT customer_id FROM ${t}`).join(' UNION ALL ')}) x WHERE customer_id = ANY($1::bigint[])`, [ids])).rows;
        for (const h of holders) assert.equal(state.get(h.customer_id)!.status, 'active', 'attached rows belong to active customers');

        // Associations: each (survivor, associate) exactly once.
        const finalAssoc = (await db.query(`SELECT customer_id, associate_id FROM customer_associates WHERE customer_id = ANY($1::bigint[])`, [ids])).rows;
        const expected = new Set(initialAssoc.map((a) => `${survivor(a.customer_id)}/${a.associate_id}`));
        assert.deepEqual(finalAssoc.map((a) => `${a.customer_id}/${a.associate_id}`).sort(), [...expected].sort());

        // One customerMerge event per merge record.
        const records = (await db.query(`SELECT count(*)::int AS n FROM merges WHERE primary_id = ANY($1::bigint[])`, [ids])).rows[0].n;
        const externals = cs.map((c) => c.externalId);
        const mergeEvents = (await db.query(`SELECT count(*)::int AS n FROM events WHERE event_type = 'customerMerge' AND resource_external_id = ANY($1)`, [externals])).rows[0].n;
        assert.equal(mergeEvents, records);
      }),
      { numRuns: 12 },
    );
  });
}, { poolSize: 20 });
