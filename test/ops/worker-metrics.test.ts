// A worker opens no API port, yet the attempt and delivery counters live in it: BULB_METRICS_PORT gives it a listener of
// its own for /metrics and /health (src/http/metrics-server.ts). And BULB_ROLE=api on the embedded database, where no
// other process can run the workers, warns at start. Both found by probing (2026-11-28).
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { startBulb, type Proc } from '../helpers/process.ts';

const procs: Proc[] = [];
after(() => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
});

it('a worker with BULB_METRICS_PORT serves /metrics (its queue and delivery series) and /health, nothing else', async () => {
  const w = await startBulb({ BULB_ROLE: 'worker', BULB_DATA_DIR: 'memory://', BULB_METRICS_PORT: '0' }, { ready: /metrics: +(http:\/\/\S+)\/metrics/ });
  procs.push(w);
  const base = w.url;
  const m = await fetch(`${base}/metrics`);
  assert.equal(m.status, 200);
  assert.match(m.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await m.text();
  assert.match(text, /^bulb_webhook_queue_depth \d+$/m);
  assert.match(text, /^# TYPE bulb_webhook_attempts_total counter$/m);
  // Every series exists from the start at 0, so that a rate or a ratio answers 0 after a restart, not nothing.
  for (const outcome of ['delivered', 'retry', 'failed']) assert.match(text, new RegExp(`^bulb_webhook_deliveries_total\\{outcome="${outcome}"\\} 0$`, 'm'));
  assert.match(text, /^bulb_webhook_attempts_total\{outcome="success",error_code=""\} 0$/m);
  assert.match(text, /^bulb_webhook_attempts_total\{outcome="failure",error_code="TIMEOUT"\} 0$/m);
  assert.match(text, /^bulb_webhook_attempt_duration_seconds_count\{outcome="failure"\} 0$/m);
  const h = await fetch(`${base}/health`);
  assert.deepEqual([h.status, await h.json()], [200, { status: 'ok' }]);
  assert.equal((await fetch(`${base}/api/2026-11/crm/customers`)).status, 404, 'not the API');
  await w.stop();
});

it('BULB_ROLE=api on the embedded database warns that nothing will send webhooks', async () => {
  const a = await startBulb({ BULB_ROLE: 'api', BULB_DATA_DIR: 'memory://' });
  procs.push(a);
  await a.waitFor(/warning: BULB_ROLE=api on the embedded database/);
  assert.match(a.output(), /nothing will send webhooks/);
  await a.stop();
});
