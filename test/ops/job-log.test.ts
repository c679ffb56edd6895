// Background jobs log JSON lines at BULB_LOG_LEVEL (src/job-log.ts), like the HTTP server: an error, however many lines
// its stack and fields take, is one line. Until 2026-11-28 they wrote multi-line console dumps between the JSON lines.
import assert from 'node:assert/strict';
import os from 'node:os';
import { Writable } from 'node:stream';
import { it } from 'node:test';
import { jobLog } from '../../src/job-log.ts';
import { loadConfig } from '../../src/config.ts';
import { backgroundJobs } from '../../src/scheduler.ts';
import { prepareSecrets } from '../../src/secrets/startup.ts';
import { freshDb, hookedDb, TEST_SECRET_KEY } from '../helpers/db.ts';

function capture() {
  const lines: string[] = [];
  let buf = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      buf += chunk;
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        lines.push(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
      cb();
    },
  });
  return { lines, stream };
}

it('a job failure is one JSON line with the error, its stack and its fields; a message is info', async () => {
  const { lines, stream } = capture();
  const log = jobLog({ logLevel: 'info', role: 'worker' }, stream);
  const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5544'), { code: 'ECONNREFUSED' });
  log('webhooks: sweep failed; retrying', err);
  log('partition maintenance: created 3 partitions');
  await new Promise((r) => setImmediate(r));
  assert.equal(lines.length, 2, lines.join('\n'));
  const [failed, said] = lines.map((l) => JSON.parse(l));
  assert.equal(failed.level, 50);
  assert.equal(failed.msg, 'webhooks: sweep failed; retrying');
  assert.equal(failed.role, 'worker');
  assert.equal(failed.err.message, err.message);
  assert.equal(failed.err.code, 'ECONNREFUSED');
  assert.match(failed.err.stack, /\n\s+at /, 'the stack, inside the one line');
  assert.equal(said.level, 30);
  assert.equal(said.msg, 'partition maintenance: created 3 partitions');
});

it('an error said again and again (a database down) is one line every REPEAT_EVERY_MS, the next saying how many were left out', async () => {
  const { lines, stream } = capture();
  let t = 0;
  const log = jobLog({ logLevel: 'info', role: 'worker' }, stream, () => t);
  for (let i = 0; i < 50; i++, t += 200) log('webhooks: queue statement failed; retrying', new Error('ECONNREFUSED')); // 10 s of turns
  log('import worker: will retry', new Error('ECONNREFUSED'));
  log('said'); // messages are not held back
  log('said');
  await new Promise((r) => setImmediate(r));
  const json = lines.map((l) => JSON.parse(l));
  const queue = json.filter((l) => l.msg.startsWith('webhooks: queue statement failed'));
  assert.equal(queue.length, 2, 'one line at 0 s, one at 5 s (50 failures in 10 s)');
  assert.equal(queue[0].repeated, undefined);
  assert.equal(queue[1].repeated, 24);
  assert.match(queue[1].msg, /\(24 more since the last such line\)$/);
  assert.equal(queue[1].err.message, 'ECONNREFUSED');
  assert.equal(json.filter((l) => l.msg === 'import worker: will retry').length, 1, 'another message has its own count');
  assert.equal(json.filter((l) => l.msg === 'said').length, 2);
});

it('the count of a window is said at its end when no failure follows (an outage\'s last errors were never counted); lines name the host', async () => {
  const { lines, stream } = capture();
  let t = 0;
  const timers: { fn: () => void; ms: number }[] = [];
  const log = jobLog({ logLevel: 'info', role: 'worker' }, stream, () => t, (fn, ms) => void timers.push({ fn, ms }));
  for (let i = 0; i < 4; i++, t += 1000) log('webhooks: sweep failed; retrying', new Error(`ECONNREFUSED ${i}`));
  await new Promise((r) => setImmediate(r));
  assert.equal(lines.length, 1, 'the first line only, so far');
  assert.deepEqual(timers.map((x) => x.ms), [4000], 'one timer, for the end of the window');
  t = 5000;
  timers[0].fn();
  await new Promise((r) => setImmediate(r));
  const [first, counted] = lines.map((l) => JSON.parse(l));
  assert.equal(first.hostname, os.hostname());
  assert.deepEqual([counted.level, counted.repeated, counted.err.message], [50, 3, 'ECONNREFUSED 3']);
  assert.match(counted.msg, /\(3 more since the last such line\)$/);
  // the count line opened a new window: a failure right after it is counted, not said
  log('webhooks: sweep failed; retrying', new Error('again'));
  await new Promise((r) => setImmediate(r));
  assert.equal(lines.length, 2, 'within the new window: counted, not said');
});

it('warnings are held to one line a window too, the count said with the last one\'s fields (a receiver down failed 10,000 deliveries, a line each)', async () => {
  const { lines, stream } = capture();
  let t = 0;
  const timers: (() => void)[] = [];
  const log = jobLog({ logLevel: 'info', role: 'worker' }, stream, () => t, (fn) => void timers.push(fn));
  for (let i = 0; i < 1000; i++, t += 1) log.warn!('webhooks: delivery failed: no attempts left', { deliveryUuid: `d-${i}` });
  await new Promise((r) => setImmediate(r));
  assert.equal(lines.length, 1);
  t = 5000;
  timers[0]();
  await new Promise((r) => setImmediate(r));
  const [first, counted] = lines.map((l) => JSON.parse(l));
  assert.deepEqual([first.level, first.deliveryUuid, first.repeated], [40, 'd-0', undefined]);
  assert.deepEqual([counted.level, counted.deliveryUuid, counted.repeated], [40, 'd-999', 999]);
  assert.match(counted.msg, /\(999 more since the last such line\)$/);
});

it('BULB_LOG_LEVEL reaches the jobs: error drops their messages, silent everything; an unknown level is a configuration error', async () => {
  for (const [level, want] of [['error', 1], ['silent', 0]] as const) {
    const { lines, stream } = capture();
    const log = jobLog({ logLevel: level, role: 'all' }, stream);
    log('said');
    log('failed', new Error('x'));
    await new Promise((r) => setImmediate(r));
    assert.equal(lines.length, want, level);
  }
  assert.throws(() => loadConfig({ BULB_LOG_LEVEL: 'verbose' }), /BULB_LOG_LEVEL must be one of/);
});

it('the webhook delivery job logs through the jobs\' log, not console.error (its failures were multi-line dumps until 2026-11-29)', async () => {
  const tdb = await freshDb('pglite');
  const said: { m: string; err: unknown }[] = [];
  const dumped: unknown[][] = [];
  const consoleError = console.error;
  console.error = (...args: unknown[]) => void dumped.push(args);
  // The fallback sweep's statement fails, as while the database restarts.
  const failing = hookedDb(tdb.db, { statement: (sql) => { if (/WITH RECURSIVE subs/.test(sql)) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }); } });
  const config = loadConfig({ BULB_LOG_LEVEL: 'silent', BULB_SECRET_KEY: TEST_SECRET_KEY });
  await prepareSecrets(tdb.db, config);
  const job = backgroundJobs(failing, config, (m, err) => void said.push({ m, err })).find((j) => j.name === 'webhook delivery')!;
  const stop = await job.start();
  try {
    for (let i = 0; i < 500 && !said.some((s) => /sweep failed/.test(s.m)); i++) await new Promise((r) => setTimeout(r, 10));
  } finally {
    await stop();
    console.error = consoleError;
    await tdb.close();
  }
  const failed = said.find((s) => /sweep failed/.test(s.m));
  assert.equal(failed?.m, 'webhooks: sweep failed; retrying');
  assert.match(String((failed?.err as Error)?.message), /ECONNREFUSED/);
  assert.deepEqual(dumped.filter((a) => /webhooks:/.test(String(a[0]))), [], 'nothing went to console.error');
});
