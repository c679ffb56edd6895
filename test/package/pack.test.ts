// The package as an integrator gets it: `npm pack`, installed into an empty project, type-checked with
// `tsc --strict`, and run on plain Node (no tsx): bulb/verify verifies a real delivery from a real Bulb
// server, bulb/client creates, merges and lists customers. npm may use the network; it prefers its cache.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { freshDb, type TestDb } from '../helpers/db.ts';
import { ADMIN_KEY, startServer, type TestServer } from '../helpers/server.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '1,1,1' };

const CONSUMER = String.raw`
import http from 'node:http';
import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from 'bulb/verify';
import { createBulbClient, type Customer, type MergeResult } from 'bulb/client';

const baseUrl = process.env.BULB_URL!;
const token = process.env.BULB_KEY!;
const bulb = createBulbClient({ baseUrl, token });
let secret = '';
let rejectedForged = false;

let delivered: (e: WebhookEvent) => void = () => {};
const event = new Promise<WebhookEvent>((resolve) => (delivered = resolve));
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    try {
      verifyWebhook(raw, req.headers, 'whsec_' + Buffer.alloc(32, 7).toString('base64'));
    } catch (err) {
      rejectedForged = err instanceof WebhookVerificationError;
    }
    try {
      const e = verifyWebhook(raw, req.headers, secret, { toleranceSec: 300 });
      res.writeHead(204).end();
      if (e.eventType === 'customerCreate' && e.resource.externalId === 'pk-1') delivered(e);
    } catch {
      res.writeHead(401).end();
    }
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const port = (receiver.address() as import('node:net').AddressInfo).port;

// The subscription through plain fetch (its shape differs across versions); the rest through the client.
const sub = await fetch(baseUrl + '/api/2025-04/integrations/webhooks/subscriptions', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
  body: JSON.stringify({ url: 'http://127.0.0.1:' + port + '/hook', eventType: 'customerCreate' }),
});
secret = ((await sub.json()) as { signingSecret: string }).signingSecret;

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

const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no verified delivery within 60 s')), 60_000).unref());
const e = await Promise.race([event, timeout]);
receiver.close();

console.log(JSON.stringify({
  created: created.map((c) => c.uuid),
  merge: { mergeUuid: result.mergeUuid, mergedCustomerIds: result.mergedCustomerIds, primary: result.primary.externalId, moved: result.moved },
  listed: listed.data.data.map((c) => [c.externalId, c.status, c.mergedInto?.externalId ?? null]),
  notFound: { status: missing.response.status, errorCode: missing.error?.errors[0]?.errorCode },
  event: { eventType: e.eventType, externalId: e.resource.externalId, uuid: e.resource.uuid },
  rejectedForged,
}));

// Never called: proves the generated types are real (an unknown field does not type-check).
export async function typesAreReal() {
  // @ts-expect-error externalId is a string
  await bulb.POST('/api/2026-11/crm/customers', { body: { externalId: 5 } });
  // @ts-expect-error no such path
  await bulb.GET('/api/2026-11/crm/nothing');
}
`;

describe('npm pack: bulb/verify and bulb/client on plain Node, type-checked with tsc --strict', () => {
  let tdb: TestDb;
  let srv: TestServer;
  let worker: TestWorker;
  let dir: string;
  before(async () => {
    tdb = await freshDb('pglite');
    srv = await startServer(tdb.db, ENV);
    worker = await startWorker(tdb.db, ENV);
    dir = await mkdtemp(path.join(os.tmpdir(), 'bulb-pack-'));
  });
  after(async () => {
    await worker?.stop();
    await srv?.close();
    await tdb?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('packs, installs, type-checks, verifies a delivery and creates, merges and lists customers', { timeout: 600_000 }, async () => {
    const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, env: npmEnv, maxBuffer: 64 << 20 });
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')));
    const files: string[] = info.files.map((f: { path: string }) => f.path);
    for (const f of ['dist/webhooks/verify.js', 'dist/webhooks/verify.d.ts', 'dist/client/index.js', 'dist/client/index.d.ts', 'dist/client/openapi.d.ts']) assert.ok(files.includes(f), `${f} is in the package`);
    assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('node_modules/')), 'no tests in the package');

    const proj = path.join(dir, 'consumer');
    await mkdir(path.join(proj, 'src'), { recursive: true });
    await writeFile(path.join(proj, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-package-lock', '--ignore-scripts', path.join(dir, info.filename)], { cwd: proj, env: npmEnv, maxBuffer: 64 << 20 });
    await writeFile(path.join(proj, 'src/main.ts'), CONSUMER);
    await writeFile(path.join(proj, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'out', rootDir: 'src',
        typeRoots: [path.join(ROOT, 'node_modules/@types')], types: ['node'],
      },
      include: ['src'],
    }));
    const tsc = await run(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', proj], { cwd: proj }).catch((err) => err);
    assert.equal(tsc.code ?? 0, 0, `tsc --strict: ${tsc.stdout}${tsc.stderr}`);

    // Plain Node: no tsx, no loader, the installed package only.
    const out = await run(process.execPath, [path.join(proj, 'out/main.js')], { cwd: proj, env: { PATH: process.env.PATH, BULB_URL: srv.url, BULB_KEY: ADMIN_KEY }, timeout: 120_000 });
    const r = JSON.parse(out.stdout.trim().split('\n').pop()!);
    assert.equal(r.created.length, 2);
    assert.deepEqual(r.merge.mergedCustomerIds, ['pk-2']);
    assert.equal(r.merge.primary, 'pk-1');
    assert.match(r.merge.mergeUuid, /^[0-9a-f-]{36}$/);
    assert.deepEqual(r.listed.sort(), [['pk-1', 'active', null], ['pk-2', 'disabled', 'pk-1']]);
    assert.deepEqual(r.notFound, { status: 404, errorCode: 'NotFound' });
    assert.deepEqual(r.event, { eventType: 'customerCreate', externalId: 'pk-1', uuid: r.created[0] });
    assert.equal(r.rejectedForged, true, 'a signature under another secret is refused');
  });
});
