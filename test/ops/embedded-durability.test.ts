// The embedded default (PGlite in a data folder) makes a commit durable before it answers: fsync on, the WAL
// flushed by fsync(2) of its file when the commit returns (src/db/pglite-durable.ts); PGlite's own start would have
// fsync off and a file system whose sync does nothing. And a process killed right after its answers loses none of
// the writes it acknowledged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { PgliteDb } from '../../src/db/pglite.ts';
import { durableOptions } from '../../src/db/pglite-durable.ts';
import { startBulb } from '../helpers/process.ts';

const dirs: string[] = [];
const tmp = (tag: string) => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `bulb-${tag}-`));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('embedded database durability', () => {
  it('Bulb opens a data folder with fsync on and the WAL synced by fsync()', async () => {
    const db = await PgliteDb.open(tmp('fsync'));
    try {
      assert.equal((await db.query<{ fsync: string }>('SHOW fsync')).rows[0].fsync, 'on');
      assert.equal((await db.query<{ wal_sync_method: string }>('SHOW wal_sync_method')).rows[0].wal_sync_method, 'fsync');
    } finally {
      await db.close();
    }
  });

  it('each commit reaches the disk: the WAL file is fsync(2)ed before the commit returns', async () => {
    const dir = tmp('wal');
    const synced: string[] = [];
    const real = fs.fsyncSync;
    // Every fsync of this process, by the path of its descriptor (the data folder's files are real files).
    (fs as { fsyncSync: typeof fs.fsyncSync }).fsyncSync = (fd) => {
      synced.push(fs.readlinkSync(`/proc/self/fd/${fd}`));
      real(fd);
    };
    const pg = await PGlite.create(durableOptions(dir));
    try {
      await pg.exec('CREATE TABLE t (a int)');
      for (let i = 0; i < 5; i++) {
        synced.length = 0;
        await pg.query('INSERT INTO t VALUES ($1)', [i]);
        assert.ok(synced.some((p) => p.startsWith(path.join(dir, 'pg_wal') + path.sep)), `commit ${i}: no WAL fsync (${JSON.stringify(synced)})`);
      }
    } finally {
      await pg.close();
      (fs as { fsyncSync: typeof fs.fsyncSync }).fsyncSync = real;
    }
  });

  it('in memory (memory://) nothing is synced: PGlite is left as it makes it', () => {
    assert.deepEqual(durableOptions('memory://'), { dataDir: 'memory://' });
  });

  it('writes acknowledged by a Bulb process killed with SIGKILL are there after a restart', async () => {
    const dataDir = tmp('kill');
    const key = 'bulb_key_test_durability_0123456789abcdef';
    const start = () => startBulb({ BULB_DATA_DIR: dataDir, BULB_ADMIN_KEY: key, BULB_LOG_LEVEL: 'warn' });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const first = await start();
    const acked: string[] = [];
    try {
      // Writes in flight when the process dies: the ones answered 201 must all be there afterwards.
      // Killed just after the first answer (not after a fixed time: a loaded machine may answer none in it), so the
      // others are still in flight.
      let firstAnswer!: () => void;
      const answered = new Promise<void>((r) => (firstAnswer = r));
      const writes = Array.from({ length: 40 }, async (_, i) => {
        const r = await fetch(`${first.url}/api/2026-11/crm/customers`, { method: 'POST', headers, body: JSON.stringify({ externalId: `dur-${i}` }) }).catch(() => null);
        if (r?.status === 201) {
          acked.push(`dur-${i}`);
          firstAnswer();
        }
      });
      await Promise.race([Promise.all(writes), answered, new Promise((r) => setTimeout(r, 30_000))]);
      assert.ok(acked.length > 0, 'some writes were answered before the kill');
    } finally {
      await first.stop('SIGKILL');
    }
    const second = await start();
    try {
      const r = await fetch(`${second.url}/api/2026-11/crm/customers?limit=250`, { headers });
      assert.equal(r.status, 200);
      const found = new Set(((await r.json()) as { data: { externalId: string }[] }).data.map((c) => c.externalId));
      for (const id of acked) assert.ok(found.has(id), `${id} was acknowledged and is gone`);
    } finally {
      await second.stop('SIGKILL');
    }
  });

  it('a second server on the same data folder refuses to start, naming the first; the folder is free once it stops', async () => {
    const dataDir = tmp('twice');
    const env = { BULB_DATA_DIR: dataDir, BULB_ADMIN_KEY: 'bulb_key_test_twice_0123456789abcdef0123', BULB_LOG_LEVEL: 'warn' };
    const first = await startBulb(env);
    try {
      // It had migrated the files the first was writing, then died with a WASM "Aborted()" (or EADDRINUSE).
      await assert.rejects(startBulb(env), (err: Error) => {
        assert.match(err.message, /exited with 2 before listening/);
        assert.match(err.message, new RegExp(`BULB_DATA_DIR ${dataDir} is in use by process ${first.child.pid}`));
        return true;
      });
      assert.equal((await fetch(`${first.url}/health`)).status, 200, 'the first still serves');
      assert.equal(fs.readFileSync(path.join(dataDir, 'bulb.pid'), 'utf8').trim(), String(first.child.pid));
    } finally {
      assert.equal(await first.stop('SIGTERM'), 0);
    }
    assert.ok(!fs.existsSync(path.join(dataDir, 'bulb.pid')), 'released on a clean stop');
    const again = await startBulb(env);
    await again.stop('SIGTERM');
  });
});
