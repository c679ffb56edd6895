// The real process (`npm start` = node --import tsx src/main.ts serve): first start prints where it
// listens, where the console and the API reference are (/ redirects to the console) and the admin key, the key works, a second start creates none, JSON logs never contain
// secrets, SIGTERM drains and exits 0.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { TEST_SECRET_KEY, freshDb, postgresAvailable, skippedWithoutPostgres, type TestDb } from '../helpers/db.ts';
import { startBulb, type Proc } from '../helpers/process.ts';
import { LATEST } from '../../src/http/versioning/versions.ts';

const get = (url: string, token?: string) =>
  fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} }).then(async (r) => ({ status: r.status, body: await r.json() as any }));
const post = (url: string, token: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: await r.json() as any }));

describe('process', () => {
  const dirs: string[] = [];
  const procs: Proc[] = [];
  after(() => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('npm start on a fresh data dir: prints the address and an admin key that works; a restart creates no new key; SIGTERM exits 0', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-start-'));
    dirs.push(dataDir);
    fs.chmodSync(dataDir, 0o755);
    const first = await startBulb({ BULB_DATA_DIR: dataDir });
    procs.push(first);
    // The database's folder is its owner's alone: PGlite writes its files 0666 less the umask (found by probing).
    assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700);
    assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    await first.waitFor(/curl -H/);
    const key = /^\s+(bulb_key_[A-Za-z0-9_-]+)\s*$/m.exec(first.output())?.[1];
    assert.ok(key, `no admin key printed:\n${first.output()}`);
    assert.match(first.output(), /curl -H "Authorization: Bearer bulb_key_/);
    // The hint names the newest version, as the README's first steps do.
    const tried = /curl -H "Authorization: Bearer \S+" (\S+)/.exec(first.output())?.[1];
    assert.equal(tried, `${first.url}/api/${LATEST}/crm/customers`);
    assert.equal((await get(tried!, key)).status, 200);
    // First run: the banner says where the console and the API reference are, and / leads to the console.
    assert.ok(first.output().includes(`console:        ${first.url}/admin\n`), first.output());
    assert.ok(first.output().includes(`API reference:  ${first.url}/docs\n`), first.output());
    const root = await fetch(`${first.url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/admin');
    assert.equal((await fetch(`${first.url}/`)).url, `${first.url}/admin`, 'followed, it is the console');
    const list = await get(`${first.url}/api/2025-04/crm/customers`, key);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, { data: [], nextCursor: null });
    assert.equal((await post(`${first.url}/api/2025-04/crm/customers`, key!, { externalId: 'persisted' })).status, 201);
    assert.equal(await first.stop(), 0, first.output());

    const second = await startBulb({ BULB_DATA_DIR: dataDir });
    procs.push(second);
    await second.waitFor(/API keys exist already/);
    assert.doesNotMatch(second.output(), /bulb_key_/, 'no new key on the second start');
    const again = await get(`${second.url}/api/2025-04/crm/customers`, key);
    assert.equal(again.status, 200, 'the first key still works');
    assert.deepEqual(again.body.data.map((c: any) => c.externalId), ['persisted'], 'data survived the restart');
    assert.equal(await second.stop(), 0, second.output());
  });

  it('npm start passes SIGTERM on to the server, which drains and exits: nothing is left running on the data folder', async () => {
    // Before, npm's shell kept the server as its child and died alone: the server went on serving, undrained,
    // holding the data folder (a probe, 2026-11-28). The script now execs node in place of the shell.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-npm-'));
    dirs.push(dataDir);
    const npm = await startBulb({ BULB_DATA_DIR: dataDir }, { npm: true });
    procs.push(npm);
    await npm.waitFor(/curl -H/);
    const pid = Number(fs.readFileSync(path.join(dataDir, 'bulb.pid'), 'utf8').trim());
    assert.notEqual(pid, npm.child.pid, 'the server is npm\'s child, not npm');
    npm.child.kill('SIGTERM');
    await once(npm.child, 'exit');
    let alive = true;
    for (let i = 0; i < 200 && alive; i++) {
      try {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 100));
      } catch {
        alive = false;
      }
    }
    if (alive) process.kill(pid, 'SIGKILL');
    assert.equal(alive, false, `the server (pid ${pid}) outlived npm:\n${npm.output()}`);
    assert.match(npm.output(), /SIGTERM: draining/);
    // said as JSON lines, as the requests' and jobs' lines are (plain text until 2026-11-29), the drain's end included
    const said = npm.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    assert.ok(said.some((l) => l.msg === 'SIGTERM: draining' && l.pid === pid), npm.output());
    assert.ok(said.some((l) => l.msg === 'SIGTERM: drained; exiting'), npm.output());
  });

  it('JSON logs never contain bearer tokens, keys or client secrets; SIGTERM finishes the request in flight and exits 0', async () => {
    let tdb: TestDb | undefined;
    const env: Record<string, string> = { BULB_LOG_LEVEL: 'trace' };
    if (await postgresAvailable()) {
      tdb = await freshDb('pg');
      env.DATABASE_URL = tdb.url!;
      env.BULB_SECRET_KEY = TEST_SECRET_KEY;
    } else {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-logs-'));
      dirs.push(dataDir);
      env.BULB_DATA_DIR = dataDir;
    }
    const adminKey = `bulb_key_test_${crypto.randomBytes(16).toString('hex')}`;
    env.BULB_ADMIN_KEY = adminKey;
    try {
      const p = await startBulb(env);
      procs.push(p);
      const base = `${p.url}/api/2025-04`;
      const secrets = [adminKey];
      assert.equal((await get(`${base}/crm/customers`, adminKey)).status, 200);
      const k = await post(`${base}/integrations/apiKeys`, adminKey, { name: 'logged?', scopes: ['read'] });
      secrets.push(k.body.key);
      assert.equal((await get(`${base}/crm/customers?limit=1`, k.body.key)).status, 200);
      const c = await post(`${base}/integrations/authClients`, adminKey, { name: 'c', scopes: ['read'] });
      secrets.push(c.body.clientSecret);
      const tok = await fetch(`${p.url}/auth/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${c.body.clientId}:${c.body.clientSecret}`).toString('base64')}` },
        body: 'grant_type=client_credentials',
      }).then((r) => r.json() as any);
      secrets.push(tok.access_token);
      assert.equal((await get(`${base}/crm/customers`, tok.access_token)).status, 200);
      const fake = 'bulb_key_not_a_real_one_' + crypto.randomBytes(8).toString('hex');
      secrets.push(fake);
      assert.equal((await get(`${base}/crm/customers`, fake)).status, 401);
      const bad = await fetch(`${p.url}/auth/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&client_id=${c.body.clientId}&client_secret=wrong_${fake}`,
      });
      assert.equal(bad.status, 401);

      // A request in flight when SIGTERM arrives is finished: its headers are read (the server answered
      // 100 Continue), the signal is sent, then its body; the answer is a 201 and the process exits 0.
      const u = new URL(p.url);
      const sock = net.connect(Number(u.port), u.hostname);
      await once(sock, 'connect');
      let answer = '';
      sock.on('data', (b) => (answer += b));
      const closed = once(sock, 'close');
      const payload = JSON.stringify({ externalId: 'in-flight' });
      sock.write(
        `POST /api/2025-04/crm/customers HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${adminKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nExpect: 100-continue\r\n\r\n`,
      );
      for (let i = 0; i < 600 && !answer.includes('100 Continue'); i++) await new Promise((r) => setTimeout(r, 50));
      assert.match(answer, /^HTTP\/1\.1 100 Continue/);
      // A keep-alive connection idle when SIGTERM arrives, whose next request is sent just after: answered (with
      // Connection: close), not reset. Until 2026-11-29 idle connections were closed at once, and a request already on
      // its way on one got ECONNRESET (found by a probe).
      const idle = net.connect(Number(u.port), u.hostname);
      await once(idle, 'connect');
      let idleAnswer = '';
      idle.on('data', (b) => (idleAnswer += b));
      idle.on('error', () => {});
      const idleClosed = once(idle, 'close');
      const request = (body: string) =>
        `POST /api/2025-04/crm/customers HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${adminKey}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      idle.write(request(JSON.stringify({ externalId: 'before-drain' })));
      for (let i = 0; i < 600 && !idleAnswer.includes('\r\n\r\n{'); i++) await new Promise((r) => setTimeout(r, 50));
      assert.match(idleAnswer, /^HTTP\/1\.1 201 Created/);
      assert.doesNotMatch(idleAnswer, /connection: close/i, 'kept alive before the drain');
      idleAnswer = '';
      const exit = p.stop('SIGTERM');
      await p.waitFor(/SIGTERM: draining/);
      idle.write(request(JSON.stringify({ externalId: 'during-drain' })));
      sock.write(payload);
      // Not ready while draining (a load balancer stops sending work here): it said 200 through the grace.
      const ready = await fetch(`${p.url}/ready`);
      assert.equal(ready.status, 503, await ready.text());
      await Promise.race([closed, exit]); // the server closes the connection after answering (Connection: close)
      await Promise.race([idleClosed, exit]);
      assert.match(idleAnswer, /^HTTP\/1\.1 201 Created/, `the idle connection's request is answered: ${JSON.stringify(idleAnswer)}`);
      assert.match(idleAnswer, /connection: close/i);
      assert.match(answer, /HTTP\/1\.1 201 Created/, answer);
      assert.equal(await exit, 0, p.output());
      const out = p.output();
      for (const s of secrets) assert.ok(!out.includes(s), `a secret appears in the logs: ${s.slice(0, 12)}…`);
      const json = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      assert.ok(json.some((l) => l.req?.url?.includes('/crm/customers') && typeof l.level === 'number'), 'requests are logged as JSON');
      assert.ok(json.some((l) => l.res?.statusCode === 401), 'answers are logged with their status');
    } finally {
      await tdb?.close();
    }
  });

  it('SIGTERM while a client keeps an upload going: its connection is cut, the upload kept as failed, and the process exits 0 (it was killed at 25 s, exit 1)', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-slow-'));
    dirs.push(dataDir);
    const adminKey = `bulb_key_test_${crypto.randomBytes(16).toString('hex')}`;
    const env = { BULB_DATA_DIR: dataDir, BULB_ADMIN_KEY: adminKey };
    const p = await startBulb(env);
    procs.push(p);
    const { hostname, port } = new URL(p.url);
    const sock = net.connect(Number(port), hostname);
    await once(sock, 'connect');
    sock.on('error', () => {});
    const line = JSON.stringify({ externalId: 'slow-1', firstName: 'Slow' }) + '\n';
    sock.write(`POST /api/2026-11/crm/imports?format=ndjson HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${adminKey}\r\n` +
      `Content-Type: application/x-ndjson\r\nContent-Length: 10000000\r\n\r\n${line}`);
    // The upload is under way (its import is receiving), and its client never sends the rest.
    for (let i = 0; i < 300; i++) {
      const list = await get(`${p.url}/api/2026-11/crm/imports`, adminKey);
      if (list.body.data?.[0]?.status === 'receiving') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal((await get(`${p.url}/api/2026-11/crm/imports`, adminKey)).body.data[0].status, 'receiving');
    const closed = once(sock, 'close');
    assert.equal(await p.stop(), 0, p.output());
    await closed;
    // Restarted on the same data: the upload was kept as failed, not left receiving.
    const again = await startBulb(env);
    procs.push(again);
    const [imp] = (await get(`${again.url}/api/2026-11/crm/imports`, adminKey)).body.data;
    assert.equal(imp.status, 'failed', JSON.stringify(imp));
    assert.equal(await again.stop(), 0);
  });

  it('SIGTERM while the database stops answering: the worker exits 0 within 25 s, its drain cut if need be (it was killed at 25 s, exit 1)', async (t) => {
    if (await skippedWithoutPostgres(t)) return;
    const tdb = await freshDb('pg');
    // A TCP relay to PostgreSQL that goes silent on demand (as a pooler paused, or a network partition): connections stay
    // open, nothing more passes either way.
    const pgUrl = new URL(tdb.url!);
    let silent = false;
    const pairs: net.Socket[] = [];
    const relay = net.createServer((client) => {
      const server = net.connect(Number(pgUrl.port || 5432), pgUrl.hostname);
      pairs.push(client, server);
      for (const [from, to] of [[client, server], [server, client]] as const) {
        from.on('data', (b) => void (silent || to.write(b)));
        from.on('error', () => to.destroy());
        from.on('close', () => to.destroy());
      }
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const via = new URL(tdb.url!);
    via.host = `127.0.0.1:${(relay.address() as net.AddressInfo).port}`;
    try {
      const w = await startBulb({ BULB_ROLE: 'worker', DATABASE_URL: via.href, BULB_SECRET_KEY: TEST_SECRET_KEY }, { ready: /worker running/ });
      procs.push(w);
      await w.waitFor(/API keys exist|First start/); // its last words before it handles SIGTERM
      silent = true;
      // Exit 0 within the 25 s stop() allows: the drain either ends on its own (the pool's connection timeout fails the
      // statements waiting for a connection) or is cut at 22 s (a statement in flight on a connection gone silent, such as
      // the LISTEN session's UNLISTEN, waits for its deadline), which of the two depends on what was in flight.
      assert.equal(await w.stop(), 0, `${w.child.signalCode} ${w.output()}`);
      assert.match(w.output(), /SIGTERM: draining/);
    } finally {
      for (const sck of pairs) sck.destroy();
      relay.close();
      await tdb.close();
    }
  });
});
