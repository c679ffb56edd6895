// Released migrations are never edited: a database that applied one records only its name, so an edit reaches fresh
// databases and never the deployed ones (074 was corrected in place on 2026-11-29, and databases that ran its first
// form searched wrong until 075 mended them; found by a probe). Each file's SHA-256 is held in
// migration-files.sha256 beside this test: a new migration adds its line; a changed line means an edit to undo,
// written as a new migration instead.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { migrationFiles } from '../../src/db/migrate.ts';

const HELD = new Map(
  fs.readFileSync(path.join(import.meta.dirname, 'migration-files.sha256'), 'utf8').split('\n').filter(Boolean).map((l) => {
    const [sum, name] = l.split(/\s+\*?/);
    return [name, sum] as const;
  }),
);

it('every migration file is byte for byte as released (its SHA-256 held in migration-files.sha256)', () => {
  const files = migrationFiles();
  assert.ok(files.length >= 56, 'the migrations are read');
  const changed = files.filter((m) => HELD.has(m.name) && crypto.createHash('sha256').update(m.sql).digest('hex') !== HELD.get(m.name)).map((m) => m.name);
  assert.deepEqual(changed, [], 'a released migration was edited: write a new migration instead (a database that ran it never runs it again)');
  const unheld = files.filter((m) => !HELD.has(m.name)).map((m) => m.name);
  assert.deepEqual(unheld, [], 'a new migration: add its line (sha256sum src/db/migrations/<file> | sed "s| .*/|  |")');
  assert.deepEqual([...HELD.keys()].filter((n) => !files.some((m) => m.name === n)), [], 'a released migration was removed or renamed');
  // A database records the number only: a second file of one number is never run where the first was (065, 2026-11-28).
  const numbers = files.map((m) => m.version);
  assert.deepEqual(numbers.filter((v, i) => numbers.indexOf(v) !== i), [], 'two migrations share a number');
});
