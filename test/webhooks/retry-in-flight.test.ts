// A manual retry asked for while the delivery's scheduled attempt is under way is made right after that attempt ends,
// and that attempt's log row says so: its nextAttemptAt is not before its own start (it was the delivery's old due time,
// before the attempt had even started; found by probing, 2026-11-28). The schedule is resumed where it stood.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription } from '../helpers/server.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { ok, waitFor, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '1500' };
const HOOKS = '/integrations/webhooks';

await describeEachDb('a manual retry while an attempt is under way', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let rx: Receiver;
  useWorkerAndReceiver(ctx, ENV, (_w, r) => (rx = r));

  it('is made right after that attempt, whose log row is due after its own start', async () => {
    const held: http.ServerResponse[] = [];
    rx.behave((_q, res) => void held.push(res)); // the first attempt hangs until its deadline
    const sub = await createSubscription(api(), { url: rx.url, eventTypes: ['webhookTest'], retrySchedule: [600] });
    assert.equal((await api().post(`${HOOKS}/subscriptions/${sub.uuid}/test`)).status, 202);
    await waitFor(() => rx.received.length === 1, 'the first attempt, under way');
    rx.behave(ok);
    const [d] = (await api().get(`${HOOKS}/deliveries?subscription=${sub.uuid}`)).body.data;
    assert.equal((await api().post(`${HOOKS}/deliveries/${d.uuid}/retry`)).status, 202);
    await waitFor(() => rx.received.length === 2, 'the manual attempt, right after the first ended (the schedule says 600 s)');
    const logs = await waitFor(async () => {
      const l = (await api().get(`${HOOKS}/logs?subscription=${sub.uuid}`)).body.data as any[];
      return l.length === 2 ? l.reverse() : null;
    }, 'both attempts logged');
    assert.deepEqual(logs.map((a) => [a.attemptNumber, a.outcome, a.errorCode]), [[1, 'failure', 'TIMEOUT'], [2, 'success', null]]);
    assert.ok(Date.parse(logs[0].nextAttemptAt) >= Date.parse(logs[0].startedAt), `due ${logs[0].nextAttemptAt}, started ${logs[0].startedAt}`);
    const [done] = (await api().get(`${HOOKS}/deliveries?subscription=${sub.uuid}`)).body.data;
    assert.deepEqual([done.status, done.attemptCount], ['delivered', 2]);
    for (const res of held) res.destroy();
  });
}, ENV);
