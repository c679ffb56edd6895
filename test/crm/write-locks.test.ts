// A customer write locks its row FOR NO KEY UPDATE, not FOR UPDATE: it changes no key another table references,
// and FOR UPDATE also blocks every foreign-key check on the customer (FOR KEY SHARE). With it, the duplicates
// refresher deadlocked with customer writes under ordinary load (a probe: 20 in minutes, 4 writers): the refresher
// claims the customer's queue row (deletes it), then inserts its profile (a key check on the customer), while the
// write, holding the customer, updates it and queues it again (its insert waited for the refresher's delete until
// migration 087; now it adds a queue row of its own and waits for nothing: both sides are checked here).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describePg } from '../helpers/suite.ts';
import { findCustomer } from '../../src/crm/customers/store.ts';
import { lockByExternalIds } from '../../src/crm/customers/bulk-store.ts';

await describePg('customer write locks', (ctx) => {
  for (const [door, lock] of [
    ['a single write (findCustomer)', (tx: any, id: string) => findCustomer(tx, id, true)],
    ['a bulk write (lockByExternalIds)', (tx: any, id: string) => lockByExternalIds(tx, [id])],
  ] as const) {
    it(`${door} and the duplicates refresher's profile write on the same customer: no deadlock`, async () => {
      const xid = `wl-${door.length}`;
      assert.equal((await ctx.srv.api.post('/crm/customers', { externalId: xid, firstName: 'Ann' })).status, 201);
      const id = (await ctx.tdb.db.query<{ id: string }>(`SELECT id FROM customers WHERE external_id = $1`, [xid])).rows[0].id;
      await ctx.tdb.db.query(`DELETE FROM duplicate_profiles WHERE customer_id = $1`, [id]);
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      let claimed!: () => void;
      const isClaimed = new Promise<void>((r) => (claimed = r));
      let updated!: () => void;
      const isUpdated = new Promise<void>((r) => (updated = r));
      let profiled!: () => void;
      const isProfiled = new Promise<void>((r) => (profiled = r));
      // A lock wait that would never end (the old behaviour of either side) fails its statement instead of hanging the test.
      const bounded = (tx: any) => tx.query(`SET LOCAL lock_timeout = '5s'`);
      // The write: its customer locked, then changed (its trigger queues it for the refresher again).
      const write = ctx.tdb.db.transaction(async (tx) => {
        await bounded(tx);
        await lock(tx, xid);
        locked();
        await isClaimed;
        // As the API's update writes it: every column, the externalId unchanged (a key column set to its own value). Its
        // trigger queues the customer again without waiting for the refresher's claim.
        await tx.query(`UPDATE customers SET external_id = $2, first_name = 'Anne', updated_at = clock_timestamp() WHERE id = $1`, [id, xid]);
        updated();
        await isProfiled; // the customer held meanwhile
      });
      // The refresher: the customer's queue row claimed, then its profile written.
      const refresh = ctx.tdb.db.transaction(async (tx) => {
        try {
          await bounded(tx);
          await isLocked;
          await tx.query(`DELETE FROM duplicate_dirty WHERE customer_id = $1`, [id]);
          claimed();
          await Promise.race([isUpdated, write]); // the write has re-queued the customer (or failed: then the outcomes say so)
          await tx.query(`INSERT INTO duplicate_profiles (customer_id, name, emails, phones, postal_codes, cities) VALUES ($1, 'ann', '{}', '{}', '{}', '{}')`, [id]);
        } finally {
          profiled();
        }
      });
      const outcomes = await Promise.allSettled([write, refresh]);
      assert.deepEqual(outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as Error).message) : 'ok')), ['ok', 'ok']);
      const queued = await ctx.tdb.db.query(`SELECT 1 FROM duplicate_dirty WHERE customer_id = $1`, [id]);
      assert.equal(queued.rows.length, 1, 'the write\'s change stays queued for the refresher');
    });
  }
});
