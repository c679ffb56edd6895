// A damaged embedded data folder stops the start with its reason, exit 2; never a new, empty database over it. A folder
// without PG_VERSION (a partial copy or restore) was re-initialised by PGlite and served empty with no word (found by a
// probe, 2026-11-29: 63,796 customers gone); other damage ended in a WebAssembly stack trace, exit 1.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DataDirUnusable, OPENED_MARK, openDb } from '../../src/db/open.ts';
import { runBulb } from '../helpers/process.ts';

const folder = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-damaged-')), 'data');

describe('a damaged embedded data folder', () => {
  it('without PG_VERSION: refused, naming the file; the database\'s files are left as they were', async () => {
    const dir = folder();
    const db = await openDb({ dataDir: dir });
    await db.query('CREATE TABLE kept (x int)');
    await db.query('INSERT INTO kept VALUES (42)');
    await db.close();
    const pgVersion = fs.readFileSync(path.join(dir, 'PG_VERSION'));
    fs.rmSync(path.join(dir, 'PG_VERSION'));
    const before = fs.readdirSync(path.join(dir, 'base'), { recursive: true }).length;
    await assert.rejects(openDb({ dataDir: dir }), (e: Error) => e instanceof DataDirUnusable && /without its PG_VERSION file/.test(e.message) && e.message.includes(dir));
    assert.equal(fs.existsSync(path.join(dir, 'PG_VERSION')), false, 'no new database made');
    assert.equal(fs.readdirSync(path.join(dir, 'base'), { recursive: true }).length, before);
    assert.equal(fs.existsSync(path.join(dir, 'bulb.pid')), false, 'the folder\'s lock is released');
    // Restored, the same folder opens with its data.
    fs.writeFileSync(path.join(dir, 'PG_VERSION'), pgVersion);
    const again = await openDb({ dataDir: dir });
    assert.deepEqual((await again.query('SELECT x FROM kept')).rows, [{ x: 42 }]);
    await again.close();
  });

  it('a first start cut short (base/ and global/ written, no PG_VERSION yet, never opened) initialises again', async () => {
    const dir = folder();
    const db = await openDb({ dataDir: dir });
    await db.close();
    // As a first start killed before PGlite wrote PG_VERSION leaves it: never opened, so no mark either.
    fs.rmSync(path.join(dir, 'PG_VERSION'));
    fs.rmSync(path.join(dir, OPENED_MARK));
    const again = await openDb({ dataDir: dir });
    assert.deepEqual((await again.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
    await again.close();
    assert.ok(fs.existsSync(path.join(dir, 'PG_VERSION')) && fs.existsSync(path.join(dir, OPENED_MARK)));
  });

  it('the process says why and exits 2: no PG_VERSION, or an empty one', async () => {
    const dir = folder();
    const db = await openDb({ dataDir: dir });
    await db.close();
    fs.rmSync(path.join(dir, 'PG_VERSION'));
    const headless = await runBulb({ BULB_DATA_DIR: dir });
    assert.equal(headless.code, 2, headless.out);
    assert.match(headless.out, /holds a database \(base, global, pg_wal\) without its PG_VERSION file/);
    fs.writeFileSync(path.join(dir, 'PG_VERSION'), '');
    const empty = await runBulb({ BULB_DATA_DIR: dir });
    assert.equal(empty.code, 2, empty.out);
    assert.match(empty.out, /could not be opened .*: its PG_VERSION file is empty; restore the folder from its backup/);
  });
});
