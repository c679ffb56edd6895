// Automatic disabling means failing *for* BULB_WEBHOOK_DISABLE_AFTER_HOURS (issue 24; docs/delivery.md (failing streak)):
// the current failing streak started at least that long ago and no silence of that length or more broke it. One old
// failure, no attempts for longer than the window, then one new failure, starts a new streak: not disabled.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { startReceiver, status, waitFor, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.1', BULB_WEBHOOK_DISABLE_AFTER_HOURS: '120' };
const SUBS = '/integrations/webhooks/subscriptions';

await describeEachDb('a failing streak spans the disable window', (ctx) => {
  useWorkerAndReceiver(ctx, ENV, () => {});
  let down: Receiver | undefined;
  after(() => down?.close());
  const api = () => ctx.srv.api.withVersion('2026-11');

  /** A subscription whose health says it has been failing since `since` hours ago (its last failure `last` hours ago). */
  const failingFor = async (since: number, last?: number) => {
    down ??= await startReceiver(status(500, 'down'));
    const s = await api().post(SUBS, { url: down!.url, eventTypes: ['webhookTest'] });
    assert.equal(s.status, 201, s.text);
    await ctx.tdb.db.query(
      `UPDATE webhook_subscriptions SET consecutive_failures = 4, failing_since = now() - $2 * interval '1 hour' WHERE uuid = $1`,
      [s.body.uuid, since],
    );
    if (last !== undefined) await ctx.tdb.db.query(`UPDATE webhook_subscriptions SET last_failure_at = now() - $2 * interval '1 hour' WHERE uuid = $1`, [s.body.uuid, last]);
    return s.body.uuid as string;
  };
  /** One more failed delivery (first attempt and its retry; or the first alone, when that disables it), then the subscription. */
  const failOnce = async (uuid: string) => {
    assert.equal((await api().post(`${SUBS}/${uuid}/test`)).status, 202);
    await waitFor(async () => (await api().get(`/integrations/webhooks/deliveries?subscription=${uuid}`)).body.data[0]?.status === 'failed' || !(await api().get(`${SUBS}/${uuid}`)).body.isActive, 'the delivery failed');
    return (await api().get(`${SUBS}/${uuid}`)).body;
  };

  it('an old failure, then no attempts for longer than the window, then one failure: a new streak, not disabled', async () => {
    const t0 = Date.now();
    const uuid = await failingFor(150); // its last failure is all that is known: 150 h ago
    const s = await failOnce(uuid);
    assert.equal(s.isActive, true, JSON.stringify(s.health));
    assert.equal(s.health.state, 'failing');
    assert.ok(Date.parse(s.health.failingSince) >= t0 - 1000, `the streak starts at the new failure: ${s.health.failingSince}`);
    assert.equal(s.health.consecutiveFailures, 6, 'every failure since the last success still counts');
  });

  it('the same with the last failure known to be 130 h old', async () => {
    const s = await failOnce(await failingFor(150, 130));
    assert.equal(s.isActive, true, JSON.stringify(s.health));
  });

  it('failing since 150 h with the last failure an hour ago (attempts kept failing): the next failure disables it', async () => {
    const s = await failOnce(await failingFor(150, 1));
    assert.equal(s.isActive, false);
    assert.equal(s.health.state, 'disabled');
    assert.match(s.health.disabledReason, /no successful delivery attempt for 120 hours/);
  });

  it('a streak shorter than the window does not disable it', async () => {
    const s = await failOnce(await failingFor(100, 1));
    assert.equal(s.isActive, true);
  });
}, ENV);
