// The background refresher of possible duplicates stops between batches: SIGTERM must not wait for a
// large backlog of changed customers to be folded in (SPEC §9: drain and exit within 25 s); what is left
// stays queued for the next start. It defers to a running import (both would compete for the same
// tables and cores) and catches up once the import is done.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import pg from 'pg';
import { BATCH, refreshBatch, refreshDuplicates, startDuplicateRefresher } from '../../src/crm/duplicates/refresh.ts';
import { COMMON_CONTACT } from '../../src/crm/duplicates/score.ts';

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

    it('defers while an import is being applied; a customer changed meanwhile is refreshed after the import ends', async () => {
      const db = tdb.db;
      await db.query('DELETE FROM duplicate_dirty');
      await db.query(
        `INSERT INTO customers (external_id, first_name, last_name, emails) VALUES
           ('imp-a', 'Ines', 'Moreau', '[{"email":"ines@moreau.example"}]'), ('imp-b', 'Paul', 'Girard', '[{"email":"paul@girard.example"}]')`,
      );
      await refreshDuplicates(db, 'US');
      const pairOf = async () => (await db.query(
        `SELECT p.score FROM duplicate_pairs p JOIN customers a ON a.id = p.a JOIN customers b ON b.id = p.b
         WHERE ARRAY[a.external_id, b.external_id] <@ ARRAY['imp-a', 'imp-b']`,
      )).rows.length;
      assert.equal(await pairOf(), 0);
      const imp = await db.query<{ id: string }>(
        `INSERT INTO imports (status, format, with_events, source, lock_token, locked_until)
         VALUES ('running', 'ndjson', false, 'TEST_API', gen_random_uuid(), clock_timestamp() + interval '1 hour') RETURNING id`,
      );
      await db.query(`UPDATE customers SET emails = '[{"email":"INES@moreau.example"}]' WHERE external_id = 'imp-b'`);
      assert.equal(await dirty(), 1, 'the trigger queued the changed customer');
      assert.equal(await refreshDuplicates(db, 'US'), 0, 'nothing refreshed while the import runs');
      assert.equal(await dirty(), 1, 'the change stays queued');
      assert.equal(await pairOf(), 0);
      const stop = startDuplicateRefresher(db, 'US', 5);
      try {
        await db.query(`UPDATE imports SET status = 'completed', locked_until = NULL, finished_at = clock_timestamp() WHERE id = $1`, [imp.rows[0].id]);
        for (let i = 0; i < 2000 && (await pairOf()) === 0; i++) await new Promise((r) => setTimeout(r, 10));
      } finally {
        await stop();
      }
      assert.equal(await pairOf(), 1, 'the background refresher caught up after the import');
      assert.equal(await dirty(), 0);
    });

    it('a refresh that puts a key\'s bearers back on the queue does not wait for a writer re-queuing one of them (a deadlock with migration 070)', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      const db = tdb.db;
      await db.query('DELETE FROM duplicate_dirty');
      const ids = (await db.query<{ id: string }>(
        `INSERT INTO customers (external_id, first_name, last_name, emails)
         SELECT 'dl-' || g, 'Name' || g, 'Shared', '[{"email":"family@dl.example"}]' FROM generate_series(1, $1::int) g RETURNING id`,
        [COMMON_CONTACT],
      )).rows.map((r) => r.id);
      await refreshDuplicates(db, 'US');
      const y = ids[0];
      await db.query(`UPDATE customers SET first_name = 'Renamed' WHERE id = $1`, [y]); // queued, committed
      // One more bearer of the email: its refresh takes the key past its cap and puts the others back on the queue.
      const x = (await db.query<{ id: string }>(`INSERT INTO customers (external_id, first_name, last_name, emails) VALUES ('dl-x', 'Extra', 'Shared', '[{"email":"family@dl.example"}]') RETURNING id`)).rows[0].id;
      await db.query(`DELETE FROM duplicate_dirty WHERE customer_id = $1`, [y]);
      await db.query(`UPDATE customers SET first_name = 'Renamed again' WHERE id = $1`, [y]); // y queued again, committed
      const deadlocks = async () => Number((await db.query<{ n: string }>(`SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()`)).rows[0].n);
      const before = await deadlocks();
      const writer = new pg.Client({ connectionString: tdb.url });
      await writer.connect();
      try {
        await writer.query('BEGIN');
        await writer.query(`UPDATE customers SET first_name = 'Third' WHERE id = $1`, [y]); // holds y's queue row
        const refreshing = refreshBatch(db, 'US'); // claims x (y is skipped: locked), then re-queues the key's bearers
        await new Promise((r) => setTimeout(r, 300));
        const writing = writer.query(`UPDATE customers SET first_name = 'Extra 2' WHERE id = $1`, [x]).then(() => writer.query('COMMIT'));
        await Promise.all([refreshing, writing]);
      } finally {
        await writer.query('ROLLBACK').catch(() => {});
        await writer.end();
      }
      assert.equal(await deadlocks(), before, 'no deadlock');
      await refreshDuplicates(db, 'US');
      assert.equal(await dirty(), 0);
    });

    it('a customer written while already queued is read once that write has committed (the refresher read it before, and the change was never folded in)', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      const db = tdb.db;
      await db.query('DELETE FROM duplicate_dirty');
      const id = (await db.query<{ id: string }>(
        `INSERT INTO customers (external_id, first_name, last_name, emails) VALUES ('race-x', 'Olga', 'Berg', '[{"email":"olga-1@berg.example"}]') RETURNING id`,
      )).rows[0].id;
      await refreshDuplicates(db, 'US');
      // A first write, committed: the customer is on the queue.
      await db.query(`UPDATE customers SET emails = '[{"email":"olga-2@berg.example"}]' WHERE id = $1`, [id]);
      assert.equal(await dirty(), 1);
      // A second write, not committed yet, while the refresher runs.
      const writer = new pg.Client({ connectionString: tdb.url });
      await writer.connect();
      try {
        await writer.query('BEGIN');
        await writer.query(`UPDATE customers SET emails = '[{"email":"olga-3@berg.example"}]' WHERE id = $1`, [id]);
        await refreshBatch(db, 'US');
        await writer.query('COMMIT');
      } finally {
        await writer.query('ROLLBACK').catch(() => {});
        await writer.end();
      }
      await refreshDuplicates(db, 'US');
      const stored = (await db.query<{ emails: string[] }>(`SELECT emails FROM duplicate_profiles WHERE customer_id = $1`, [id])).rows[0];
      assert.deepEqual(stored?.emails, ['olga-3@berg.example'], 'the profile is the customer as last written');
      assert.equal(await dirty(), 0);
    });
  });
}
