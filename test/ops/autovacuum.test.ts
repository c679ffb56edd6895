// PGlite has no autovacuum daemon (single-user PostgreSQL): Bulb's own pass vacuums and analyzes the tables past
// PostgreSQL's default thresholds, and on PostgreSQL leaves the job to the daemon.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freshDb, postgresAvailable } from '../helpers/db.ts';
import { maintain, startAutovacuum, tablesDue } from '../../src/db/autovacuum.ts';
import type { Db } from '../../src/db/db.ts';

const statsOf = async (db: Db) => {
  await db.query('SELECT pg_stat_force_next_flush()');
  const r = await db.query<{ n_dead_tup: string; last_vacuum: Date | null; last_analyze: Date | null; reltuples: number }>(
    `SELECT s.n_dead_tup, s.last_vacuum, s.last_analyze, c.reltuples FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'customers'`,
  );
  return r.rows[0];
};

describe('autovacuum on PGlite', () => {
  it('vacuums a table full of dead rows and analyzes a changed one, then finds nothing more to do', async () => {
    const tdb = await freshDb('pglite');
    try {
      const db = tdb.db;
      await db.query(`INSERT INTO customers (external_id, first_name) SELECT 'av' || g, 'A' FROM generate_series(1, 2000) g`);
      await db.query(`UPDATE customers SET first_name = 'B'`);
      const before = await statsOf(db);
      // reltuples: -1 (never analyzed) or 0 (analyzed empty, by migration 079): the planner does not know the rows.
      assert.ok(Number(before.n_dead_tup) >= 2000 && before.last_vacuum === null && before.reltuples <= 0, JSON.stringify(before));
      assert.deepEqual((await tablesDue(db)).find((t) => t.relname === 'customers'), { relname: 'customers', vacuum: true, analyze: true });
      const done = await maintain(db);
      assert.ok(done.vacuumed.includes('customers') && done.analyzed.includes('customers'), JSON.stringify(done));
      const after = await statsOf(db);
      assert.equal(Number(after.n_dead_tup), 0);
      assert.ok(after.last_vacuum !== null && after.last_analyze !== null);
      assert.equal(after.reltuples, 2000, 'the planner now knows the table');
      assert.equal((await tablesDue(db)).find((t) => t.relname === 'customers'), undefined);
    } finally {
      await tdb.close();
    }
  });

  it('runs in the background on PGlite until stopped', async () => {
    const tdb = await freshDb('pglite');
    const stop = startAutovacuum(tdb.db, 50);
    try {
      await tdb.db.query(`INSERT INTO customers (external_id) SELECT 'bg' || g FROM generate_series(1, 500) g`);
      await tdb.db.query('SELECT pg_stat_force_next_flush()');
      let s = await statsOf(tdb.db);
      for (let i = 0; i < 100 && s.last_analyze === null; i++) {
        await new Promise((r) => setTimeout(r, 50));
        s = await statsOf(tdb.db);
      }
      assert.ok(s.last_analyze !== null, 'analyzed by the background pass');
    } finally {
      await stop();
      await tdb.close();
    }
  });

  it('is not started on PostgreSQL (the daemon does the job)', async (t) => {
    if (!(await postgresAvailable())) return t.skip('no PostgreSQL');
    const tdb = await freshDb('pg');
    try {
      await tdb.db.query(`INSERT INTO customers (external_id) SELECT 'pg' || g FROM generate_series(1, 500) g`);
      const stop = startAutovacuum(tdb.db, 10);
      await new Promise((r) => setTimeout(r, 300));
      await stop();
      assert.equal((await statsOf(tdb.db)).last_analyze, null, 'no ANALYZE from Bulb');
    } finally {
      await tdb.close();
    }
  });
});
