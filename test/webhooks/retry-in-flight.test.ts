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

  it('a second retry while the first retry\'s attempt is under way is a 409 (it answered 202 and sent nothing); once logged, a retry goes', async () => {
    const held: http.ServerResponse[] = [];
    const sub = await createSubscription(api(), { url: rx.url, eventTypes: ['webhookTest'], retrySchedule: [600, 600] });
    rx.behave((_q, res) => void res.writeHead(500).end());
    const before = rx.received.length;
    assert.equal((await api().post(`${HOOKS}/subscriptions/${sub.uuid}/test`)).status, 202);
    const [d] = (await api().get(`${HOOKS}/deliveries?subscription=${sub.uuid}`)).body.data;
    await waitFor(async () => (await api().get(`${HOOKS}/logs?delivery=${d.uuid}`)).body.data.length === 1 || null, 'the first attempt logged, the next 600 s away');
    rx.behave((_q, res) => void held.push(res)); // the manual attempt hangs until its deadline
    assert.equal((await api().post(`${HOOKS}/deliveries/${d.uuid}/retry`)).status, 202);
    await waitFor(() => rx.received.length === before + 2, 'the manual attempt, under way');
    const second = await api().post(`${HOOKS}/deliveries/${d.uuid}/retry`);
    assert.equal(second.status, 409, second.text);
    assert.equal(second.body.errors[0].moreInfo, 'status');
    await waitFor(async () => (await api().get(`${HOOKS}/logs?delivery=${d.uuid}`)).body.data.length === 2 || null, 'the manual attempt logged');
    rx.behave(ok);
    assert.equal((await api().post(`${HOOKS}/deliveries/${d.uuid}/retry`)).status, 202);
    await waitFor(async () => (await api().get(`${HOOKS}/deliveries?subscription=${sub.uuid}`)).body.data[0].status === 'delivered' || null, 'the retry asked once the attempt was logged, made');
    for (const res of held) res.destroy();
  });

  it('so is a second retry of a failed delivery while the first retry\'s single attempt is under way (it answered 202 and sent nothing)', async () => {
    const held: http.ServerResponse[] = [];
    const sub = await createSubscription(api(), { url: rx.url, eventTypes: ['webhookTest'], retrySchedule: [1] });
    rx.behave((_q, res) => void res.writeHead(500).end());
    assert.equal((await api().post(`${HOOKS}/subscriptions/${sub.uuid}/test`)).status, 202);
    const d = await waitFor(async () => {
      const [x] = (await api().get(`${HOOKS}/deliveries?subscription=${sub.uuid}`)).body.data;
      return x?.status === 'failed' ? x : null;
    }, 'failed: its schedule used up');
    const before = rx.received.length;
    rx.behave((_q, res) => void held.push(res)); // the retry's single attempt hangs until its deadline
    assert.equal((await api().post(`${HOOKS}/deliveries/${d.uuid}/retry`)).status, 202);
    await waitFor(() => rx.received.length === before + 1, 'the retry\'s attempt, under way');
    const second = await api().post(`${HOOKS}/deliveries/${d.uuid}/retry`);
    assert.equal(second.status, 409, second.text);
    for (const res of held) res.destroy();
  });
}, ENV);
