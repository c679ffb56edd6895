// The embedded database folder's owner file (src/db/data-dir-lock.ts): one live process at a time, a stale file taken
// over, and the takeover itself made once when two processes find the same stale file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DataDirInUse, lockDataDir, takeoverHooks } from '../../src/db/data-dir-lock.ts';

/** The pid of a process that has exited. */
const deadPid = () => spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid!;
const folder = () => fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-lock-'));
const owner = (dir: string, name = 'bulb.pid') => fs.readFileSync(path.join(dir, name), 'utf8').trim();

describe('data folder lock', () => {
  it('takes a free folder, refuses it while its owner lives, releases it', () => {
    const dir = folder();
    const release = lockDataDir(dir);
    assert.equal(owner(dir), String(process.pid));
    fs.writeFileSync(path.join(dir, 'bulb.pid'), `${process.ppid}\n`);
    assert.throws(() => lockDataDir(dir), (e: unknown) => e instanceof DataDirInUse && new RegExp(`in use by process ${process.ppid}`).test((e as Error).message));
    release(); // not ours any more: left alone
    assert.equal(owner(dir), String(process.ppid));
    fs.writeFileSync(path.join(dir, 'bulb.pid'), `${process.pid}\n`);
    assert.throws(() => lockDataDir(dir), /\(this one\)/);
    release();
    assert.ok(!fs.existsSync(path.join(dir, 'bulb.pid')));
  });

  it('takes over a file whose process is gone, or that names none', () => {
    for (const content of [`${deadPid()}\n`, 'garbage', '']) {
      const dir = folder();
      fs.writeFileSync(path.join(dir, 'bulb.pid'), content);
      const release = lockDataDir(dir);
      assert.equal(owner(dir), String(process.pid), JSON.stringify(content));
      assert.ok(!fs.existsSync(path.join(dir, 'bulb.pid.takeover')), 'the guard is gone after the takeover');
      release();
    }
  });

  it('a takeover another process made meanwhile stands: the second taker is refused and removes nothing', () => {
    const dir = folder();
    fs.writeFileSync(path.join(dir, 'bulb.pid'), `${deadPid()}\n`);
    // Between this process finding the file stale and taking it, another (alive: the test runner's parent) takes it.
    takeoverHooks.beforeTakeover = () => {
      fs.rmSync(path.join(dir, 'bulb.pid'));
      fs.writeFileSync(path.join(dir, 'bulb.pid'), `${process.ppid}\n`, { flag: 'wx' });
    };
    try {
      assert.throws(() => lockDataDir(dir), (e: unknown) => e instanceof DataDirInUse && new RegExp(`process ${process.ppid}`).test((e as Error).message));
    } finally {
      takeoverHooks.beforeTakeover = undefined;
    }
    assert.equal(owner(dir), String(process.ppid), "the other's file is kept (it was removed, and both went on as owners)");
  });

  it('refused while a live process is taking over; a guard left by a dead taker is cleared', () => {
    const dir = folder();
    fs.writeFileSync(path.join(dir, 'bulb.pid'), `${deadPid()}\n`);
    fs.writeFileSync(path.join(dir, 'bulb.pid.takeover'), `${process.ppid}\n`);
    assert.throws(() => lockDataDir(dir), /being taken over by process/);
    fs.writeFileSync(path.join(dir, 'bulb.pid.takeover'), `${deadPid()}\n`);
    const release = lockDataDir(dir);
    assert.equal(owner(dir), String(process.pid));
    assert.ok(!fs.existsSync(path.join(dir, 'bulb.pid.takeover')));
    release();
  });
});
