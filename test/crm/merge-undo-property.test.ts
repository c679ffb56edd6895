// Merges, undos and writes of attached data from several concurrent clients (PostgreSQL only: PGlite runs
// one transaction at a time), as a fast-check property. Rounds run one after another; within a round
// every operation is fired at once. After each round: no 5xx; every attached row exists exactly once and
// sits on the survivor of the customer it was created on (itself when active, else its mergedInto), so
// after every undo each row that existed before that merge is back with its original customer; the
// association pairs are those of their customers' survivors, restored duplicates with their old ids;
// every disabled customer points straight at an active one.
// UNDO_PROPERTY_RUNS (default 4) sets the number of random plans.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { describePg } from '../helpers/suite.ts';
import { ATTACHED_TABLES, attach, makeAssociate, makeCustomer, type Made } from './fixtures.ts';

const N = 6; // customers per run
const RUNS = Number(process.env.UNDO_PROPERTY_RUNS ?? 4);

const op = fc.oneof(
  fc.record({ kind: fc.constant('merge' as const), primary: fc.nat({ max: N - 1 }), secondaries: fc.uniqueArray(fc.nat({ max: N - 1 }), { minLength: 1, maxLength: 2 }) }),
  fc.record({ kind: fc.constant('undo' as const), pick: fc.nat({ max: 50 }) }),
  fc.record({ kind: fc.constant('order' as const), customer: fc.nat({ max: N - 1 }) }),
  fc.record({ kind: fc.constant('associate' as const), customer: fc.nat({ max: N - 1 }), associate: fc.nat({ max: 2 }) }),
);
const plan = fc.array(fc.array(op, { minLength: 2, maxLength: 7 }), { minLength: 2, maxLength: 5 });

await describePg('merge undo under concurrency', (ctx) => {

  let run = 0;
  it('random merges, undos and writes keep every row with its original customer or that customer\'s survivor', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async (rounds) => {
        const db = ctx.tdb.db;
        const api = ctx.srv.api.withVersion('2026-11');
        const prefix = `up${run++}`;
        const assocs: { id: string; uuid: string }[] = [];
        for (let a = 0; a < 3; a++) {
          const id = await makeAssociate(db, `${prefix}-a${a}`);
          assocs.push({ id, uuid: (await db.query('SELECT uuid FROM associates WHERE id = $1', [id])).rows[0].uuid });
        }
        const cs: Made[] = [];
        for (let i = 0; i < N; i++) {
          const c = await makeCustomer(db, `${prefix}-c${i}`);
          await attach(db, c.id, 1, [assocs[i % 3].id, assocs[(i + 1) % 3].id]);
          cs.push(c);
        }
        const ids = cs.map((c) => c.id);
        // home: uuid of every attached row → the customer it was created on.
        const home = new Map<string, string>();
        const assocHome = new Map<string, { customer: string; associate: string }>();
        for (const t of ATTACHED_TABLES) {
          for (const r of (await db.query(`SELECT uuid, customer_id${t === 'customer_associates' ? ', associate_id' : ''} FROM ${t} WHERE customer_id = ANY($1::bigint[])`, [ids])).rows) {
            home.set(`${t}:${r.uuid}`, r.customer_id);
            if (t === 'customer_associates') assocHome.set(r.uuid, { customer: r.customer_id, associate: r.associate_id });
          }
        }
        const merges: string[] = [];
        const undone = new Set<string>();

        for (const round of rounds) {
          const answers = await Promise.all(round.map(async (o) => {
            if (o.kind === 'merge') {
              const sec = o.secondaries.filter((x) => x !== o.primary);
              if (sec.length === 0) return null;
              const r = await api.post(`/crm/customers/${cs[o.primary].externalId}/merge`, { mergeWithCustomerIds: sec.map((x) => cs[x].externalId) });
              if (r.status === 200 && r.body.mergeUuid) merges.push(r.body.mergeUuid);
              assert.ok(r.status === 200 || (r.status === 403 && r.body.errors[0].errorCode === 'CustomerDisabled'), `merge: ${r.status} ${r.text}`);
              return r.status;
            }
            if (o.kind === 'undo') {
              if (merges.length === 0) return null;
              const uuid = merges[o.pick % merges.length];
              const r = await api.post(`/crm/merges/${uuid}/undo`);
              assert.ok(r.status === 200 || (r.status === 409 && r.body.errors[0].errorCode === 'MergeNotUndoable'), `undo: ${r.status} ${r.text}`);
              if (r.status === 200) {
                assert.ok(!undone.has(uuid), 'a merge is undone at most once');
                undone.add(uuid);
              }
              return r.status;
            }
            const c = cs[o.customer];
            if (o.kind === 'order') {
              const r = await api.post(`/crm/customers/${c.externalId}/orders`, { externalId: `${prefix}-o`, orderedAt: '2026-01-01T00:00:00.000Z', currency: 'EUR', total: '1.00' });
              assert.ok(r.status === 201 || (r.status === 403 && r.body.errors[0].errorCode === 'CustomerDisabled'), `order: ${r.status} ${r.text}`);
              if (r.status === 201) home.set(`orders:${r.body.uuid}`, c.id);
              return r.status;
            }
            const r = await api.post(`/crm/customers/${c.externalId}/associates`, { associateUuid: assocs[o.associate].uuid });
            assert.ok(r.status === 201 || r.status === 409 || (r.status === 403 && r.body.errors[0].errorCode === 'CustomerDisabled'), `associate: ${r.status} ${r.text}`);
            if (r.status === 201) {
              home.set(`customer_associates:${r.body.uuid}`, c.id);
              assocHome.set(r.body.uuid, { customer: c.id, associate: assocs[o.associate].id });
            }
            return r.status;
          }));
          for (const a of answers) assert.ok(a === null || a < 500, `no 5xx (${a})`);

          // Quiescent: check the invariants against the database.
          const state = new Map((await db.query('SELECT id, status, merged_into FROM customers WHERE id = ANY($1::bigint[])', [ids])).rows.map((r) => [r.id, r]));
          for (const c of state.values()) {
            if (c.status === 'active') assert.equal(c.merged_into, null);
            else assert.equal(state.get(c.merged_into)?.status, 'active', `customer ${c.id} points straight at an active customer`);
          }
          const survivor = (id: string) => (state.get(id)!.status === 'active' ? id : state.get(id)!.merged_into);
          const now = new Map<string, string>();
          for (const t of ATTACHED_TABLES) {
            for (const r of (await db.query(`SELECT uuid, customer_id FROM ${t} WHERE customer_id = ANY($1::bigint[])`, [ids])).rows) {
              assert.ok(!now.has(`${t}:${r.uuid}`), 'no row twice');
              now.set(`${t}:${r.uuid}`, r.customer_id);
            }
          }
          for (const [key, h] of home) {
            if (key.startsWith('customer_associates:')) continue;
            assert.equal(now.get(key), survivor(h), `${key} (created on ${h}) is on ${now.get(key)}, expected ${survivor(h)}`);
          }
          assert.equal([...now.keys()].filter((k) => !k.startsWith('customer_associates:')).length, [...home.keys()].filter((k) => !k.startsWith('customer_associates:')).length, 'nothing lost, nothing added');
          // Associations: one per (survivor, associate), and a row whose customer is active again is back with its old uuid.
          const pairs = new Set([...assocHome.values()].map((a) => `${survivor(a.customer)}/${a.associate}`));
          const actual = (await db.query('SELECT uuid, customer_id, associate_id FROM customer_associates WHERE customer_id = ANY($1::bigint[])', [ids])).rows;
          assert.deepEqual(actual.map((a) => `${a.customer_id}/${a.associate_id}`).sort(), [...pairs].sort());
          for (const a of actual) assert.ok(assocHome.has(a.uuid), 'only associations that were created');
          const byUuid = new Map(actual.map((a) => [a.uuid, a]));
          for (const [uuid, a] of assocHome) {
            if (state.get(a.customer)!.status === 'active') assert.equal(byUuid.get(uuid)?.customer_id, a.customer, `association ${uuid} of an active customer is its own`);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
}, { poolSize: 20 });
