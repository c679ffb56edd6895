// A start that fails on a setting the operator gave says so in one line naming the setting, exit 2 (docs/operations.md):
// a port in use, a data folder that cannot be written, a database that does not exist, a DATABASE_URL that is not one.
// Until 2026-11-28 each was a raw stack trace with exit 1 (or, for a bad DATABASE_URL, a minute of "not reachable").
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, it } from 'node:test';
import { freshDb, skippedWithoutPostgres, TEST_SECRET_KEY } from '../helpers/db.ts';
import { runBulb } from '../helpers/process.ts';
import { resetwalPast } from '../../src/db/restored.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const run = (env: Record<string, string>) => runBulb({ BULB_DATABASE_WAIT_MS: '0', ...env });

const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-fail-'));
  dirs.push(d);
  return d;
};

it('a port in use: one line naming PORT, exit 2', async () => {
  const busy = net.createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  try {
    const port = (busy.address() as net.AddressInfo).port;
    const r = await run({ BULB_DATA_DIR: 'memory://', PORT: String(port) });
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, new RegExp(`start failed: PORT ${port} on HOST 127\\.0\\.0\\.1 is in use`));
    assert.doesNotMatch(r.out, /\n\s+at /, 'no stack trace');
  } finally {
    busy.close();
  }
});

it('BULB_METRICS_PORT equal to PORT: one line naming both (it blamed PORT and "another process"), exit 2', async () => {
  const free = net.createServer();
  await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
  const port = (free.address() as net.AddressInfo).port;
  await new Promise((r) => free.close(r));
  const r = await run({ BULB_DATA_DIR: 'memory://', PORT: String(port), BULB_METRICS_PORT: String(port) });
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, new RegExp(`start failed: BULB_METRICS_PORT and PORT are both ${port}`));
  assert.doesNotMatch(r.out, /another process/);
});

it('a data folder inside a file: one line naming BULB_DATA_DIR, exit 2', async () => {
  const file = path.join(tmp(), 'a-file');
  fs.writeFileSync(file, '');
  const r = await run({ BULB_DATA_DIR: path.join(file, 'data') });
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /start failed: BULB_DATA_DIR .* cannot be created/);
  assert.doesNotMatch(r.out, /\n\s+at /, 'no stack trace');
});

it('a DATABASE_URL that is not a PostgreSQL URL: a configuration error at once, its password not repeated', async () => {
  const r = await run({ DATABASE_URL: 'mysql://u:s3cretpw@db.invalid/x', BULB_SECRET_KEY: TEST_SECRET_KEY });
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /configuration error: DATABASE_URL must be a PostgreSQL URL/);
  assert.doesNotMatch(r.out, /s3cretpw|not reachable/);
});

it('a database that does not exist: one line naming DATABASE_URL, exit 2', async (t) => {
  if (await skippedWithoutPostgres(t)) return;
  const base = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
  base.pathname = `/bulb_missing_${process.pid}`;
  const r = await run({ DATABASE_URL: base.toString(), BULB_SECRET_KEY: TEST_SECRET_KEY });
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /start failed: DATABASE_URL names a database that does not exist/);
});

it('a user the server refuses: one line naming DATABASE_URL, its password not repeated, exit 2 (a stack trace, exit 1, before)', async (t) => {
  if (await skippedWithoutPostgres(t)) return;
  const base = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
  base.username = `bulb_nobody_${process.pid}`;
  base.password = 's3cretpw';
  const r = await run({ DATABASE_URL: base.toString(), BULB_SECRET_KEY: TEST_SECRET_KEY });
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /start failed: DATABASE_URL's user or password is refused by the server/);
  assert.doesNotMatch(r.out, /s3cretpw|\n\s+at /);
});

it('a BULB_DATABASE_DIRECT_URL reaching another database than DATABASE_URL: a configuration error naming both, exit 2', async (t) => {
  if (await skippedWithoutPostgres(t)) return;
  // A restore drill's mistake: an export served the other database's customers, an import failed with a 500 (a probe).
  const tdb = await freshDb('pg');
  try {
    const other = new URL(tdb.url!);
    other.pathname = '/postgres';
    const r = await run({ DATABASE_URL: tdb.url!, BULB_DATABASE_DIRECT_URL: other.toString(), BULB_SECRET_KEY: TEST_SECRET_KEY });
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, /configuration error: BULB_DATABASE_DIRECT_URL reaches database "postgres" .*DATABASE_URL "bulb_t_[^"]+" .*both must reach the same database/);
  } finally {
    await tdb.close();
  }
});

it('events written by transactions the cluster has not reached (a dump restored into another cluster): refused with the way out, exit 2', async (t) => {
  if (await skippedWithoutPostgres(t)) return;
  // The events API orders by the writing transaction's id: it hid every restored event and skipped new ones (a probe).
  const tdb = await freshDb('pg');
  try {
    await tdb.db.query(
      `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, xid)
       VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'restored', 'TULIP_API', (pg_current_xact_id()::text::bigint + 5000000)::text::xid8)`,
    );
    const r = await run({ DATABASE_URL: tdb.url!, BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_DATA_DIR: 'memory://' });
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, /configuration error: the events in this database \(and their time marks\) were written by transactions up to \d+, which this PostgreSQL cluster has not reached .*pg_resetwal -x \d+ -e \d+/);
    await tdb.db.query(`DELETE FROM events WHERE resource_external_id = 'restored'`);
    // Time marks alone (a dump whose events all went with retention): they bound since/until, so they count too.
    await tdb.db.query(
      `INSERT INTO event_time_marks (at, oldest_xid, mark_xid) VALUES (now() - interval '10 minutes',
         (pg_current_xact_id()::text::bigint + 5000000)::text::xid8, (pg_current_xact_id()::text::bigint + 5000000)::text::xid8)`,
    );
    const marks = await run({ DATABASE_URL: tdb.url!, BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_DATA_DIR: 'memory://' });
    assert.equal(marks.code, 2, marks.out);
    assert.match(marks.out, /has not reached .*pg_resetwal/);
  } finally {
    await tdb.close();
  }
});

it('the pg_resetwal values a refusal gives start a commit-log segment past the events (another value leaves PostgreSQL unable to start)', () => {
  assert.deepEqual(resetwalPast('335194'), { x: '1048576', e: '0' });
  assert.deepEqual(resetwalPast('1048576'), { x: '2097152', e: '0' });
  assert.deepEqual(resetwalPast(String(2n ** 32n - 5n)), { x: '1048576', e: '1' }, 'never 0 in its epoch');
  assert.deepEqual(resetwalPast(String(3n * 2n ** 32n + 7n)), { x: '1048576', e: '3' });
});
