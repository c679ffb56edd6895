// A worker opens no API port, yet the attempt and delivery counters live in it: BULB_METRICS_PORT gives it a listener of
// its own for /metrics and /health (src/http/metrics-server.ts). And BULB_ROLE=api on the embedded database, where no
// other process can run the workers, warns at start. Both found by probing (2026-11-28).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

/** Starts Bulb with env; resolves with its output once it matches `re` (at most 120 s). */
function startUntil(env: Record<string, string>, re: RegExp): Promise<{ child: ChildProcess; out: () => string; match: RegExpExecArray }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BULB_') && k !== 'DATABASE_URL' && k !== 'PORT' && k !== 'HOST'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], { cwd: ROOT, env: { ...clean, PORT: '0', HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`no ${re} within 120 s:\n${out}`)), 120_000);
    const check = () => {
      const match = re.exec(out);
      if (match) {
        clearTimeout(deadline);
        resolve({ child, out: () => out, match });
      }
    };
    child.stdout!.on('data', (b) => ((out += b), check()));
    child.stderr!.on('data', (b) => ((out += b), check()));
    child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
  });
}

it('a worker with BULB_METRICS_PORT serves /metrics (its queue and delivery series) and /health, nothing else', async () => {
  const w = await startUntil({ BULB_ROLE: 'worker', BULB_DATA_DIR: 'memory://', BULB_METRICS_PORT: '0' }, /metrics: +(http:\/\/\S+)\/metrics/);
  const base = w.match[1];
  const m = await fetch(`${base}/metrics`);
  assert.equal(m.status, 200);
  assert.match(m.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await m.text();
  assert.match(text, /^bulb_webhook_queue_depth \d+$/m);
  assert.match(text, /^# TYPE bulb_webhook_attempts_total counter$/m);
  const h = await fetch(`${base}/health`);
  assert.deepEqual([h.status, await h.json()], [200, { status: 'ok' }]);
  assert.equal((await fetch(`${base}/api/2026-11/crm/customers`)).status, 404, 'not the API');
  w.child.kill('SIGTERM');
});

it('BULB_ROLE=api on the embedded database warns that nothing will send webhooks', async () => {
  const a = await startUntil({ BULB_ROLE: 'api', BULB_DATA_DIR: 'memory://' }, /warning: BULB_ROLE=api on the embedded database/);
  assert.match(a.out(), /nothing will send webhooks/);
  a.child.kill('SIGTERM');
});
