// @bulb/client as a receiver gets it: `npm pack` in packages/client (its prepack compiles it with its own
// tsconfig, "types": []), the tarball installed into an empty project with plain npm, offline (its dependency
// openapi-fetch and that one's helpers packed from this checkout's node_modules), two consumers type-checked with
// TypeScript 5 and "types": [] (no Node types; the verifier with lib ES2022 alone, the client with ES2022 + DOM
// for fetch), then run on plain Node (no tsx) against a real Bulb server and worker: the verifier checks a real
// delivery and refuses it under another secret; the client creates, merges and lists customers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { freshDb, type TestDb } from '../helpers/db.ts';
import { ADMIN_KEY, startServer, type TestServer } from '../helpers/server.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = path.join(ROOT, 'packages/client');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const run = promisify(execFile);
const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '1,1,1' };
const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

/** Verification only: no Node types, no DOM, nothing but ES2022 (compiled with skipLibCheck off). */
const CHECK = String.raw`
import { verifyWebhook, WebhookVerificationError, type WebhookEvent, type WebhookHeaders } from '@bulb/client/verify';

/** The event, or why it was refused. */
export function check(raw: Uint8Array | string, headers: WebhookHeaders, secret: string): WebhookEvent | string {
  try {
    return verifyWebhook(raw, headers, secret, { toleranceSec: 300 });
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.message;
    throw err;
  }
}
`;

/** The typed client: fetch's types from lib DOM, still no Node types. */
const CLIENT = String.raw`
import { createBulbClient, type Customer, type MergeResult } from '@bulb/client';

export async function journey(baseUrl: string, token: string) {
  const bulb = createBulbClient({ baseUrl, token });
  const created: Customer[] = [];
  for (const externalId of ['pk-1', 'pk-2']) {
    const { data, error, response } = await bulb.POST('/api/2026-11/crm/customers', { body: { externalId, firstName: 'Ada', emails: [{ email: externalId + '@example.org' }] } });
    if (!data) throw new Error('create ' + response.status + ' ' + JSON.stringify(error));
    created.push(data);
  }
  const merged = await bulb.POST('/api/2026-11/crm/customers/{id}/merge', { params: { path: { id: 'pk-1' } }, body: { mergeWithCustomerIds: ['pk-2'] } });
  if (!merged.data) throw new Error('merge ' + merged.response.status + ' ' + JSON.stringify(merged.error));
  const result: MergeResult = merged.data;
  const listed = await bulb.GET('/api/2026-11/crm/customers', { params: { query: { status: 'all', limit: 10 } } });
  if (!listed.data) throw new Error('list ' + listed.response.status);
  const missing = await bulb.GET('/api/2026-11/crm/customers/{id}', { params: { path: { id: 'nobody' } } });
  return {
    created: created.map((c) => c.uuid),
    merge: { mergeUuid: result.mergeUuid, mergedCustomerIds: result.mergedCustomerIds, primary: result.primary.externalId },
    listed: listed.data.data.map((c) => [c.externalId, c.status, c.mergedInto?.externalId ?? null]),
    notFound: { status: missing.response.status, errorCode: missing.error?.errors[0]?.errorCode },
  };
}

// Never called: proves the generated types are real (a wrong field type or path does not type-check).
export async function typesAreReal(baseUrl: string) {
  const bulb = createBulbClient({ baseUrl, token: 't' });
  // @ts-expect-error externalId is a string
  await bulb.POST('/api/2026-11/crm/customers', { body: { externalId: 5 } });
  // @ts-expect-error no such path
  await bulb.GET('/api/2026-11/crm/nothing');
}
`;

/** Plain JavaScript on plain Node: a receiver on loopback, the subscription, the client's journey. */
const MAIN = String.raw`
import http from 'node:http';
import { check } from './out/check.js';
import { journey } from './out/client.js';

const baseUrl = process.env.BULB_URL;
const token = process.env.BULB_KEY;
let secret = '';
let lastRefusal = 'none';
let resolveEvent;
const event = new Promise((r) => (resolveEvent = r));
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const ok = check(raw, req.headers, secret);
    if (typeof ok === 'string') lastRefusal = ok;
    res.writeHead(typeof ok === 'string' ? 401 : 204).end();
    if (typeof ok !== 'string' && ok.eventType === 'customerCreate' && ok.resource.externalId === 'pk-1') {
      resolveEvent({ event: ok, underOtherSecret: check(raw, req.headers, 'whsec_' + Buffer.alloc(32, 7).toString('base64')), asString: check(raw.toString('utf8'), new Headers(Object.entries(req.headers)), secret).eventType });
    }
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const sub = await fetch(baseUrl + '/api/2026-11/integrations/webhooks/subscriptions', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
  body: JSON.stringify({ url: 'http://127.0.0.1:' + receiver.address().port + '/hook', eventTypes: ['customerCreate'] }),
});
if (sub.status !== 201) throw new Error('subscription ' + sub.status + ' ' + (await sub.text()));
secret = (await sub.json()).signingSecret;
const result = await journey(baseUrl, token);
const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('no verified delivery within 60 s; last refusal: ' + lastRefusal)), 60_000).unref());
const got = await Promise.race([event, timeout]);
receiver.close();
console.log(JSON.stringify({ ...result, event: { eventType: got.event.eventType, externalId: got.event.resource.externalId, uuid: got.event.resource.uuid }, underOtherSecret: got.underOtherSecret, asString: got.asString }));
`;

const tsconfig = (lib: string[], files: string[]) => JSON.stringify({
  compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib, types: [], skipLibCheck: false, outDir: 'out', rootDir: 'src' },
  files,
});

describe('npm pack of packages/client: @bulb/client and @bulb/client/verify without the server and without Node types', () => {
  let tdb: TestDb;
  let srv: TestServer;
  let worker: TestWorker;
  let dir: string;
  before(async () => {
    tdb = await freshDb('pglite');
    srv = await startServer(tdb.db, ENV);
    worker = await startWorker(tdb.db, ENV);
    dir = await mkdtemp(path.join(os.tmpdir(), 'bulb-client-pack-'));
  });
  after(async () => {
    await worker?.stop();
    await srv?.close();
    await tdb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('packs, installs three packages offline, type-checks both consumers with "types": [], verifies a real delivery and drives the API', { timeout: 600_000 }, async () => {
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: PKG, env: npmEnv, maxBuffer: 64 << 20 });
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')));
    const files: string[] = info.files.map((f: { path: string }) => f.path).sort();
    for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/verify.js', 'dist/verify.d.ts', 'dist/hmac-sha256.js', 'dist/openapi.d.ts', 'package.json', 'README.md']) assert.ok(files.includes(f), `${f} is in the package`);
    assert.deepEqual(files.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md'), [], 'nothing but dist/, package.json and README.md');

    // Its one dependency and that one's, packed from this checkout so that the install needs no network.
    const deps = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir, path.join(ROOT, 'node_modules/openapi-fetch'), path.join(ROOT, 'node_modules/openapi-typescript-helpers')], { cwd: dir, env: npmEnv });
    const depFiles: string[] = JSON.parse(deps.stdout.slice(deps.stdout.indexOf('['))).map((d: { filename: string }) => path.join(dir, d.filename));

    const proj = path.join(dir, 'receiver');
    await mkdir(path.join(proj, 'src'), { recursive: true });
    await writeFile(path.join(proj, 'package.json'), JSON.stringify({ name: 'receiver', private: true, type: 'module' }));
    const install = await run('npm', ['install', '--offline', '--no-package-lock', '--ignore-scripts', path.join(dir, info.filename), ...depFiles], { cwd: proj, env: npmEnv, maxBuffer: 64 << 20 });
    assert.doesNotMatch(install.stdout + install.stderr, /EBADENGINE|WARN/, 'no engine or other warnings');
    assert.match(install.stdout, /added 3 packages/);
    const installed = [...(await readdir(path.join(proj, 'node_modules'))).filter((n) => !n.startsWith('.') && !n.startsWith('@')), ...(await readdir(path.join(proj, 'node_modules/@bulb'))).map((n) => `@bulb/${n}`)].sort();
    assert.deepEqual(installed, ['@bulb/client', 'openapi-fetch', 'openapi-typescript-helpers']);

    await writeFile(path.join(proj, 'src/check.ts'), CHECK);
    await writeFile(path.join(proj, 'src/client.ts'), CLIENT);
    await writeFile(path.join(proj, 'main.mjs'), MAIN);
    await writeFile(path.join(proj, 'tsconfig.verify.json'), tsconfig(['ES2022'], ['src/check.ts']));
    await writeFile(path.join(proj, 'tsconfig.client.json'), tsconfig(['ES2022', 'DOM', 'DOM.Iterable'], ['src/client.ts']));
    for (const cfg of ['tsconfig.verify.json', 'tsconfig.client.json']) {
      const tsc = await run(process.execPath, [TSC, '-p', cfg], { cwd: proj }).catch((err) => err);
      assert.equal(tsc.code ?? 0, 0, `tsc -p ${cfg}: ${tsc.stdout}${tsc.stderr}`);
    }

    // Plain Node: no tsx, no loader, the installed package only.
    const out = await run(process.execPath, [path.join(proj, 'main.mjs')], { cwd: proj, env: { PATH: process.env.PATH, BULB_URL: srv.url, BULB_KEY: ADMIN_KEY }, timeout: 120_000 });
    const r = JSON.parse(out.stdout.trim().split('\n').pop()!);
    assert.equal(r.created.length, 2);
    assert.deepEqual(r.merge.mergedCustomerIds, ['pk-2']);
    assert.equal(r.merge.primary, 'pk-1');
    assert.match(r.merge.mergeUuid, /^[0-9a-f-]{36}$/);
    assert.deepEqual(r.listed.sort(), [['pk-1', 'active', null], ['pk-2', 'disabled', 'pk-1']]);
    assert.deepEqual(r.notFound, { status: 404, errorCode: 'NotFound' });
    assert.deepEqual(r.event, { eventType: 'customerCreate', externalId: 'pk-1', uuid: r.created[0] });
    assert.equal(r.underOtherSecret, 'no matching webhook-signature', 'a delivery checked under another secret is refused');
    assert.equal(r.asString, 'customerCreate', 'the body as a string with a Headers object verifies too');
  });
});
