// The background refresher of possible duplicates stops between batches: SIGTERM must not wait for a
// large backlog of changed customers to be folded in (SPEC §9: drain and exit within 25 s); what is left
// stays queued for the next start.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { BATCH, startDuplicateRefresher } from '../../src/crm/duplicates/refresh.ts';

const BACKLOG = 40 * BATCH;

for (const backend of await backends()) {
  describe(`duplicate refresher [${backend}]`, () => {
    let tdb: TestDb;
    before(async () => {
      tdb = await freshDb(backend);
    });
    after(() => tdb?.close());

    const dirty = async () => Number((await tdb.db.query<{ n: string }>('SELECT count(*) AS n FROM duplicate_dirty')).rows[0].n);

    it('stop() ends after the batch in progress and leaves the rest of the backlog queued', async () => {
      await tdb.db.query(
        `INSERT INTO customers (external_id, first_name, last_name)
         SELECT 'dup-bl-' || g, 'Name' || g, 'Family' || (g % 97) FROM generate_series(1, $1::int) g`,
        [BACKLOG],
      );
      assert.equal(await dirty(), BACKLOG, 'the trigger queued every new customer');
      const stop = startDuplicateRefresher(tdb.db, 'US', 1);
      // Wait until the refresher has taken at least one batch off the queue, then stop it.
      let left = BACKLOG;
      for (let i = 0; i < 6000 && left === BACKLOG; i++) {
        await new Promise((r) => setTimeout(r, 10));
        left = await dirty();
      }
      assert.ok(left < BACKLOG, 'the refresher started');
      await stop();
      const remaining = await dirty();
      assert.ok(remaining > 0, `stop() waited for the whole backlog to drain (${BACKLOG} queued, ${remaining} left)`);
      assert.ok(remaining <= left, 'nothing was queued again');
      assert.equal(remaining % BATCH, 0, 'whole batches were taken, none half');
    });
  });
}
