// Database layer: concurrent migrations on one PostgreSQL, timestamps formatted identically on both
// backends whatever the session time zone, and named (prepared) statements answering as unnamed ones do.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import pg from 'pg';
import { PG_URL, backends, freshDb, postgresAvailable } from '../helpers/db.ts';
import { PgDb } from '../../src/db/pg.ts';
import { migrate, migrationFiles } from '../../src/db/migrate.ts';
import { iso } from '../../src/http/time.ts';

describe('migrations', () => {
  it('two connections migrating one empty PostgreSQL at once both succeed and apply each migration once', async (t) => {
    if (!(await postgresAvailable())) return t.skip('no PostgreSQL');
    const name = `bulb_mig_${crypto.randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const u = new URL(PG_URL);
    u.pathname = '/' + name;
    const a = new PgDb(u.toString(), 2);
    const b = new PgDb(u.toString(), 2);
    try {
      const [ra, rb] = await Promise.all([migrate(a), migrate(b)]);
      const all = migrationFiles().map((m) => m.name);
      assert.deepEqual([...ra, ...rb].sort(), [...all].sort(), 'every migration applied by exactly one of them');
      const rows = (await a.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows;
      assert.deepEqual(rows.map((r) => r.version), migrationFiles().map((m) => m.version));
      assert.deepEqual(await migrate(b), [], 'a third run applies nothing');
    } finally {
      await a.close();
      await b.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});

describe('timestamps', () => {
  it('PostgreSQL UTC text of any year 1–9999 and fraction length becomes the instant in RFC 3339, milliseconds truncated', () => {
    let seed = 42;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const pad = (x: number, w = 2) => String(x).padStart(w, '0');
    for (let i = 0; i < 5000; i++) {
      const [y, mo, d, h, mi, s] = [1 + rnd(9999), 1 + rnd(12), 1 + rnd(28), rnd(24), rnd(60), rnd(60)];
      const digits = rnd(7);
      const frac = digits ? pad(rnd(10 ** digits), digits) : '';
      const text = `${pad(y, 4)}-${pad(mo)}-${pad(d)} ${pad(h)}:${pad(mi)}:${pad(s)}${digits ? '.' + frac : ''}+00`;
      const at = new Date(0);
      at.setUTCFullYear(y, mo - 1, d);
      at.setUTCHours(h, mi, s, Number((frac + '000').slice(0, 3)));
      assert.equal(iso(text), at.toISOString(), text);
    }
    assert.equal(iso(null), null);
  });
});

for (const backend of await backends()) {
  describe(`timestamps [${backend}]`, () => {
    it('timestamptz text becomes the same RFC 3339 …Z string on both backends, in any session time zone', async () => {
      const tdb = await freshDb(backend, 2);
      const cases: [string, string][] = [
        ['2026-03-04T05:06:07.891234Z', '2026-03-04T05:06:07.891Z'],
        ['2026-03-04T05:06:07+05:30', '2026-03-03T23:36:07.000Z'],
        ['0099-01-01T00:00:00Z', '0099-01-01T00:00:00.000Z'],
        ['1850-06-01T12:00:00Z', '1850-06-01T12:00:00.000Z'],
      ];
      try {
        const zone = (await tdb.db.query<{ tz: string }>('SELECT current_setting($1) AS tz', ['TimeZone'])).rows[0].tz;
        assert.match(zone, /^(UTC|Etc\/UTC|GMT)$/, 'sessions run in UTC');
        for (const tz of ['UTC', 'Europe/Amsterdam', 'America/St_Johns', 'Asia/Kolkata']) {
          await tdb.db.transaction(async (tx) => {
            await tx.query(`SELECT set_config('TimeZone', $1, true)`, [tz]);
            for (const [input, expected] of cases) {
              const raw = (await tx.query<{ t: string }>('SELECT $1::timestamptz AS t', [input])).rows[0].t;
              assert.equal(typeof raw, 'string');
              assert.equal(iso(raw), expected, `${input} in ${tz} (${raw})`);
            }
          });
        }
      } finally {
        await tdb.close();
      }
    });
  });
}

for (const backend of await backends()) {
  describe(`named statements [${backend}]`, () => {
    it('answer the rows, counts, types and errors of the same unnamed query, in and out of transactions', async () => {
      const tdb = await freshDb(backend, 2);
      const db = tdb.db;
      const name = `test_named_${crypto.randomBytes(4).toString('hex')}`;
      const sql = `SELECT $1::uuid AS u, $2::text[] AS a, $3::jsonb AS j, $4::timestamptz AS t, $5::bigint AS n, $6::boolean AS b, $7::int AS i`;
      try {
        await db.exec('CREATE TABLE named_t (id int PRIMARY KEY, v text)');
        const cases: unknown[][] = [
          [crypto.randomUUID(), ['x', 'y,z', 'q"r'], JSON.stringify({ k: [1, 'two', null] }), '2026-03-04T05:06:07.891234Z', '9007199254740993', true, 7],
          [crypto.randomUUID(), [], 'null', '0099-01-01T00:00:00Z', '-1', false, null],
        ];
        for (const params of cases) {
          const unnamed = await db.query(sql, params);
          for (let i = 0; i < 7; i++) assert.deepEqual(await db.query(sql, params, name), unnamed, `call ${i} (past the custom plans)`);
          assert.deepEqual(await db.transaction((tx) => tx.query(sql, params, name)), unnamed, 'in a transaction');
        }
        const insert = 'INSERT INTO named_t (id, v) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING';
        assert.equal((await db.query(insert, [1, 'a'], `${name}_ins`)).rowCount, 1);
        assert.equal((await db.query(insert, [1, 'b'], `${name}_ins`)).rowCount, 0, 'no row: rowCount 0');
        await assert.rejects(db.transaction(async (tx) => {
          await tx.query(insert, [2, 'c'], `${name}_ins`);
          throw new Error('undo');
        }), /undo/);
        assert.deepEqual((await db.query('SELECT id, v FROM named_t ORDER BY id')).rows, [{ id: 1, v: 'a' }], 'rolled back with its transaction');
        const update = 'UPDATE named_t SET v = $2 WHERE id = $1';
        assert.equal((await db.query(update, [1, 'u'], `${name}_upd`)).rowCount, 1);
        // Errors carry the SQLSTATE, whether the first call (parse) or a later one (bind, execute) fails.
        const bad = 'SELECT $1::uuid AS u, 1 / $2::int AS q';
        await assert.rejects(db.query(bad, ['not-a-uuid', 1], `${name}_bad`), (e: any) => e.code === '22P02');
        assert.deepEqual((await db.query(bad, [cases[0][0], 1], `${name}_bad`)).rows, [{ u: cases[0][0], q: 1 }], 'usable after a failed call');
        await assert.rejects(db.query(bad, [cases[0][0], 0], `${name}_bad`), (e: any) => e.code === '22012');
        await assert.rejects(db.query('SELEC 1', [], `${name}_syntax`), (e: any) => e.code === '42601');
        await assert.rejects(db.transaction(async (tx) => {
          await assert.rejects(tx.query(bad, [cases[0][0], 0], `${name}_bad`), (e: any) => e.code === '22012');
          await tx.query(bad, [cases[0][0], 1], `${name}_bad`);
        }), (e: any) => e.code === '25P02', 'a failed statement aborts its transaction, as unnamed');
        assert.deepEqual((await db.query(bad, [cases[0][0], 2], `${name}_bad`)).rows, [{ u: cases[0][0], q: 0 }]);
      } finally {
        await tdb.close();
      }
    });
  });
}
