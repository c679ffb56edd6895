// A worker claims up to four ceilings of a lane and holds what it cannot start yet (docs/delivery.md "Leases"). A
// change of the subscription reaches what it holds before it starts (dispatcher.ts `changed`): a new URL gets the
// held deliveries, a deleted subscription's are not sent, and a 410 Gone stops the lane until the subscription is
// disabled. Each case: maxInFlight 1, the first request held open at the receiver while the worker claims more.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription } from '../helpers/server.ts';
import { heardChange, startWorker, type TestWorker } from '../helpers/worker.ts';
import { ok, startReceiver, waitFor, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '5000' };
const SUBS = '/integrations/webhooks/subscriptions';

await describeEachDb('claims a worker holds follow their subscription', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let worker: TestWorker;
  let rx: Receiver;
  let other: Receiver;
  before(async () => {
    worker = await startWorker(ctx.tdb.db, ENV);
    rx = await startReceiver();
    other = await startReceiver();
  });
  after(async () => {
    await worker?.stop();
    await rx?.close();
    await other?.close();
  });

  const from = (r: Receiver, uuid: string) => r.received.filter((q) => q.body?.subscription === uuid).length;

  /**
   * A subscription to `rx` whose first request is held open: five test events are queued, and this returns once the
   * first has arrived and the worker holds at least two more. `answer` lets the held request go with that status.
   */
  async function held(): Promise<{ sub: any; id: string; answer: (code: number) => void }> {
    const open: http.ServerResponse[] = [];
    rx.behave((_q, res) => void open.push(res));
    const sub = await createSubscription(api(), { url: rx.url, eventTypes: ['webhookTest'], maxInFlight: 1 });
    const id = (await ctx.tdb.db.query<{ id: string }>(`SELECT id FROM webhook_subscriptions WHERE uuid = $1`, [sub.uuid])).rows[0].id;
    for (let i = 0; i < 5; i++) assert.equal((await api().post(`${SUBS}/${sub.uuid}/test`)).status, 202);
    await waitFor(() => open.length === 1, 'the first request, held open');
    await waitFor(async () => {
      const r = await ctx.tdb.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 AND lock_token IS NOT NULL`, [id]);
      return r.rows[0].n >= 3;
    }, 'the worker holding more of them');
    return { sub, id, answer: (code) => {
      rx.behave(ok);
      for (const res of open.splice(0)) res.writeHead(code).end();
    } };
  }

  /** Every request the worker started before now has arrived: a later delivery of another subscription arrived. */
  async function settled(): Promise<void> {
    const probe = await createSubscription(api(), { url: other.url, eventTypes: ['webhookTest'] });
    assert.equal((await api().post(`${SUBS}/${probe.uuid}/test`)).status, 202);
    await waitFor(() => from(other, probe.uuid) === 1, 'the probe delivery');
    assert.equal((await api().delete(`${SUBS}/${probe.uuid}`)).status, 204);
  }

  it('a new URL: the deliveries held for the old one go to the new one', async () => {
    const { sub, id, answer } = await held();
    // The held request ends only once the worker has heard of the new URL: ended before, the next delivery could start
    // to the old URL in between, as the subscription then was (the suite's run of 2026-11-28 on PostgreSQL, a busy CI).
    const heard = heardChange(worker, id);
    const moved = await api().patch(`${SUBS}/${sub.uuid}`, { url: other.url });
    assert.equal(moved.status, 200, moved.text);
    await heard;
    answer(200);
    await waitFor(() => from(other, sub.uuid) === 4, 'the four others at the new URL');
    assert.equal(from(rx, sub.uuid), 1, 'only the one under way when the URL changed went to the old URL');
    assert.equal((await api().delete(`${SUBS}/${sub.uuid}`)).status, 204);
  });

  it('deleted: none of the held deliveries is sent', async () => {
    const { sub, id, answer } = await held();
    // As with a new URL: ended before the worker heard of the delete, the next held delivery could start in between
    // (the suite's CI run of 2026-11-28 on PostgreSQL: a second attempt logged).
    const heard = heardChange(worker, id);
    assert.equal((await api().delete(`${SUBS}/${sub.uuid}`)).status, 204);
    await heard;
    answer(200);
    await waitFor(async () => (await ctx.tdb.db.query(`SELECT 1 FROM webhook_attempts WHERE subscription_id = $1`, [id])).rows.length === 1,
      'the attempt under way, logged');
    await settled();
    assert.equal(from(rx, sub.uuid), 1, 'only the attempt under way at the delete was sent');
    const states = (await ctx.tdb.db.query<{ status: string; attempt_count: number }>(
      `SELECT status, attempt_count FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY attempt_count DESC`, [id])).rows;
    assert.deepEqual(states.map((s) => s.status), Array(5).fill('cancelled'));
    // The attempt under way is counted on its delivery as it is logged (attemptCount was 0 beside it until 2026-11-28).
    assert.deepEqual(states.map((s) => s.attempt_count), [1, 0, 0, 0, 0]);
  });

  it('410 Gone: nothing more starts; the subscription is disabled and the rest wait for it', async () => {
    const { sub, id, answer } = await held();
    answer(410);
    await waitFor(async () => (await api().get(`${SUBS}/${sub.uuid}`)).body.health.state === 'disabled', 'disabled by the 410');
    await settled();
    assert.equal(from(rx, sub.uuid), 1, 'nothing was sent after the 410');
    const states = (await ctx.tdb.db.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 GROUP BY 1`, [id])).rows;
    assert.deepEqual(states, [{ status: 'pending', n: 5 }], 'all five wait for the subscription to be re-activated');
  });
}, ENV);
