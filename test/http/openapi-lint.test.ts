// Every version's served OpenAPI document passes `redocly lint` with the recommended ruleset (redocly.yaml)
// without a single error or warning.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { freshDb, type TestDb } from '../helpers/db.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { VERSION_IDS } from '../../src/http/versioning/versions.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLI = path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');

describe('OpenAPI documents pass redocly lint (recommended)', () => {
  let tdb: TestDb;
  let srv: TestServer;
  let dir: string;
  before(async () => {
    tdb = await freshDb('pglite');
    srv = await startServer(tdb.db);
    dir = await mkdtemp(path.join(os.tmpdir(), 'bulb-lint-'));
  });
  after(async () => {
    await srv?.close();
    await tdb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('no error and no warning in any version', async () => {
    const files: string[] = [];
    for (const v of VERSION_IDS) {
      const r = await srv.api.withToken(undefined).get(`/api/${v}/openapi.json`);
      assert.equal(r.status, 200, v);
      const file = path.join(dir, `bulb-${v}.json`);
      await writeFile(file, r.text);
      files.push(file);
    }
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    const run = await promisify(execFile)(process.execPath, [CLI, 'lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json', ...files], { cwd: ROOT, env, maxBuffer: 64 << 20 })
      .catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
    // One JSON report per file, printed one after the other (and Node 20's deprecation box after them).
    type Report = { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string; source: { ref: string } }[] }[] };
    let reports: Report[];
    try {
      const json = run.stdout.slice(run.stdout.indexOf('{'), run.stdout.lastIndexOf('}') + 1);
      reports = JSON.parse(`[${json.replace(/\}\s*\{\s*"totals"/g, '},{"totals"')}]`);
    } catch {
      throw new Error(`redocly printed no JSON report: ${run.stdout.slice(0, 500)} ${run.stderr.slice(0, 500)}`);
    }
    assert.equal(reports.length, files.length, 'one report per document');
    const lines = reports.flatMap((r) => r.problems).map((p) => `${p.severity} ${p.ruleId} ${path.basename(p.location[0]?.source.ref ?? '')}${p.location[0]?.pointer ?? ''}: ${p.message}`);
    assert.deepEqual(lines, [], lines.slice(0, 30).join('\n'));
    for (const r of reports) assert.equal(r.totals.errors + r.totals.warnings, 0);
  });
});

describe('OpenAPI documents name every errorCode the server answers', () => {
  it('each code a refusal in src/ can carry is listed in ErrorEntry.errorCode of every version', async () => {
    // the codes as the server's source writes them (the console's own are the browser's, never answered):
    // new ApiError('Code', …), ApiError.many('Code', …), errorCode: 'Code'
    const { stdout } = await promisify(execFile)('grep', ['-rhoE', '--exclude-dir=console', "(new ApiError\\(|ApiError\\.many\\(|errorCode: )'[A-Za-z]+'", path.join(ROOT, 'src')]);
    const codes = new Set(stdout.split('\n').filter(Boolean).map((l) => /'([A-Za-z]+)'/.exec(l)![1]));
    assert.ok(codes.has('MergeNotUndoable') && codes.has('InvalidParameterError'), [...codes].join());
    const tdb = await freshDb('pglite');
    const srv = await startServer(tdb.db);
    try {
      for (const v of VERSION_IDS) {
        const doc = (await srv.api.withToken(undefined).get(`/api/${v}/openapi.json`)).body;
        const listed = new Set(String(doc.components.schemas.ErrorEntry.properties.errorCode.description).split(/[^A-Za-z]+/));
        assert.deepEqual([...codes].filter((c) => !listed.has(c)), [], v);
      }
    } finally {
      await srv.close();
      await tdb.close();
    }
  });
});
