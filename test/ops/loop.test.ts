// The background loop (src/loop.ts): the pause before the next pass may follow the last pass's result, so partition
// maintenance runs again soon after a pass that left a busy table (or failed), not an hour later.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { startLoop } from '../../src/loop.ts';
import { BUSY_RETRY_MS } from '../../src/partitions/maintain.ts';

it('the next pass comes after the pause the last result asks for; a failed pass is undefined', async () => {
  const results = ['busy', 'fail', 'done'];
  const seen: (string | undefined)[] = [];
  const errors: unknown[] = [];
  let passes = 0;
  let finished!: () => void;
  const allDone = new Promise<void>((r) => (finished = r));
  const stop = startLoop(async () => {
    const r = results[passes++];
    if (r === 'fail') throw new Error('pass failed');
    return r;
  }, (last) => {
    seen.push(last);
    if (last === 'done') finished();
    return last === 'done' ? 3_600_000 : 5; // an hour after a clean pass: the test would never see a fourth
  }, (e) => errors.push(e), 0);
  const alive = setInterval(() => {}, 1000); // the loop's timers are unref'd: they keep no process alive
  await allDone;
  clearInterval(alive);
  await stop();
  assert.deepEqual(seen, ['busy', undefined, 'done']);
  assert.equal(passes, 3);
  assert.equal(errors.length, 1);
  assert.ok(BUSY_RETRY_MS <= 60_000, 'maintenance retries a busy pass within a minute');
});
