// A start that fails on a setting the operator gave says so in one line naming the setting, exit 2 (docs/operations.md):
// a port in use, a data folder that cannot be written, a database that does not exist, a DATABASE_URL that is not one.
// Until 2026-11-28 each was a raw stack trace with exit 1 (or, for a bad DATABASE_URL, a minute of "not reachable").
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, it } from 'node:test';
import { skippedWithoutPostgres, TEST_SECRET_KEY } from '../helpers/db.ts';
import { runBulb } from '../helpers/process.ts';

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
