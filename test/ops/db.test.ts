// Database layer: concurrent migrations on one PostgreSQL, and timestamps formatted identically on
// both backends whatever the session time zone.
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
