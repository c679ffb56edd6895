// Endpoint health and its consequences (SPEC §11): the health object follows attempts; a subscription failing
// for BULB_WEBHOOK_DISABLE_AFTER_HOURS is disabled and its deliveries wait until re-activation; the
// operational events reach every other listening subscription and never loop; a manual retry keeps the
// schedule of a pending delivery; credentials must be sendable in a header; the hourly stats endpoint.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { startReceiver, ok, status, waitFor, sleep, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.1', BULB_WEBHOOK_TIMEOUT_MS: '3000' };
const SUBS = '/integrations/webhooks/subscriptions';

await describeEachDb('endpoint health', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let worker: TestWorker;
  let rxOk: Receiver;
  let rxA: Receiver;
  let rxB: Receiver;
  before(async () => {
    worker = await startWorker(ctx.tdb.db, ENV);
    [rxOk, rxA, rxB] = await Promise.all([startReceiver(), startReceiver(status(500, 'down')), startReceiver(status(500, 'down'))]);
  });
  after(async () => {
    await worker?.stop();
    for (const r of [rxOk, rxA, rxB]) await r?.close();
  });

  const subscribe = async (url: string, eventTypes: string[]) => {
    const r = await api().post(SUBS, { url, eventTypes });
    assert.equal(r.status, 201, r.text);
    return r.body as { uuid: string };
  };
  const sub = async (uuid: string) => (await api().get(`${SUBS}/${uuid}`)).body;
  const deliveries = async (uuid: string, q = '') => (await api().get(`/integrations/webhooks/deliveries?limit=250&subscription=${uuid}${q}`)).body.data as any[];
  const attemptsOf = async (uuid: string) => (await api().get(`/integrations/webhooks/logs?limit=250&subscription=${uuid}`)).body.data as any[];
  const eventsOf = async (type: string) =>
    (await ctx.tdb.db.query<{ uuid: string; resource_uuid: string; resource_type: string }>(
      `SELECT uuid, resource_uuid, resource_type FROM events WHERE event_type = $1 ORDER BY id`, [type])).rows;
  const settled = async (uuid: string) => (await deliveries(uuid)).every((d) => d.status !== 'pending');

  it('credentials must be sendable in an HTTP header: 400 at write time, nothing written', async () => {
    const count = async () => (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM webhook_subscriptions`)).rows[0].n;
    const n = await count();
    const bad: [Record<string, string>, string][] = [
      [{ authMethod: 'BEARER', bearerToken: 'abc\r\nX-Evil: 1' }, 'bearerToken'],
      [{ authMethod: 'BEARER', bearerToken: 'tök' }, 'bearerToken'],
      [{ authMethod: 'BEARER', bearerToken: 'two words' }, 'bearerToken'],
      [{ authMethod: 'BASIC', basicUsername: 'a:b', basicPassword: 'p' }, 'basicUsername'],
      [{ authMethod: 'BASIC', basicUsername: 'ünï', basicPassword: 'p' }, 'basicUsername'],
      [{ authMethod: 'BASIC', basicUsername: 'u', basicPassword: 'p\nw' }, 'basicPassword'],
      [{ authMethod: 'BASIC', basicUsername: 'u', basicPassword: 'tab\there' }, 'basicPassword'],
    ];
    for (const [creds, field] of bad) {
      for (const client of [api(), ctx.srv.api.withVersion('2025-04')]) {
        const body = client.version === '2026-11' ? { url: rxOk.url, eventTypes: ['customerCreate'], ...creds } : { url: rxOk.url, eventType: 'customerCreate', ...creds };
        const r = await client.post(SUBS, body);
        assert.equal(r.status, 400, JSON.stringify(creds));
        assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
        assert.ok(r.body.errors.some((e: any) => e.moreInfo === field && /visible ASCII|":"/.test(e.message)), r.text);
      }
    }
    assert.equal(await count(), n, 'nothing written');
    const good = await api().post(SUBS, { url: rxOk.url, eventTypes: ['customerCreate'], authMethod: 'BEARER', bearerToken: '!#$%&*+-.^_`|~0aZ', isActive: false });
    assert.equal(good.status, 201, 'every visible ASCII character is fine');
    const raw = async () => (await ctx.tdb.db.query(`SELECT bearer_token FROM webhook_subscriptions WHERE uuid = $1`, [good.body.uuid])).rows[0].bearer_token;
    const stored = await raw();
    const p = await api().patch(`${SUBS}/${good.body.uuid}`, { bearerToken: 'x\ry' });
    assert.equal(p.status, 400);
    assert.equal(await raw(), stored, 'a refused patch changes nothing');
    await api().delete(`${SUBS}/${good.body.uuid}`);
  });

  let A: { uuid: string };
  let B: { uuid: string };
  let ops: { uuid: string };
  it('health follows attempts; webhookDeliveryFailed reaches the other listeners only, and a failed one emits nothing more', async () => {
    ops = await subscribe(rxOk.url, ['webhookDeliveryFailed', 'webhookSubscriptionDisabled']);
    A = await subscribe(rxA.url, ['customerCreate', 'webhookDeliveryFailed', 'webhookSubscriptionDisabled']);
    B = await subscribe(rxB.url, ['customerCreate', 'webhookDeliveryFailed']);
    const good = await subscribe(rxOk.url, ['customerCreate']);
    assert.deepEqual((await sub(A.uuid)).health, { state: 'healthy', consecutiveFailures: 0, lastSuccessAt: null, failingSince: null, disabledReason: null });
    assert.equal((await api().post('/crm/customers', { externalId: 'health-1' })).status, 201);

    await waitFor(async () => (await eventsOf('webhookDeliveryFailed')).length === 2 && (await settled(A.uuid)) && (await settled(B.uuid)), 'both failures announced and settled');
    await sleep(800);
    const failedEvents = await eventsOf('webhookDeliveryFailed');
    assert.equal(failedEvents.length, 2, 'the failed deliveries of webhookDeliveryFailed events announced nothing more (no loop)');
    const ccOf = async (uuid: string) => (await deliveries(uuid)).find((d) => d.eventType === 'customerCreate');
    const [ccA, ccB] = [await ccOf(A.uuid), await ccOf(B.uuid)];
    assert.equal(ccA.status, 'failed');
    assert.deepEqual(failedEvents.map((e) => e.resource_uuid).sort(), [ccA.uuid, ccB.uuid].sort());
    assert.ok(failedEvents.every((e) => e.resource_type === 'WebhookDelivery'));

    // Each subscription gets the announcement about the other one, never about itself.
    const aboutOf = async (uuid: string) => {
      const ds = (await deliveries(uuid)).filter((d) => d.eventType === 'webhookDeliveryFailed');
      return ds.map((d) => failedEvents.find((e) => e.uuid === d.eventUuid)!.resource_uuid);
    };
    assert.deepEqual(await aboutOf(A.uuid), [ccB.uuid]);
    assert.deepEqual(await aboutOf(B.uuid), [ccA.uuid]);
    const toOps = rxOk.received.filter((r) => r.body?.subscription === ops.uuid);
    assert.equal(toOps.length, 2);
    for (const r of toOps) {
      assert.equal(r.body.eventType, 'webhookDeliveryFailed');
      assert.equal(r.body.resourceType, 'WebhookDelivery');
      assert.equal(r.body.resource.externalId, null);
    }
    assert.deepEqual(toOps.map((r) => r.body.resource.uuid).sort(), [ccA.uuid, ccB.uuid].sort());

    const logsA = await attemptsOf(A.uuid);
    const hA = (await sub(A.uuid)).health;
    assert.equal(hA.state, 'failing');
    assert.equal(hA.consecutiveFailures, logsA.length, 'every failed attempt counts');
    assert.equal(hA.lastSuccessAt, null);
    assert.equal(hA.failingSince, logsA.map((a) => a.startedAt).sort()[0], 'since the first failure');
    assert.equal(hA.disabledReason, null);
    const hGood = (await sub(good.uuid)).health;
    assert.equal(hGood.state, 'healthy');
    assert.equal(hGood.consecutiveFailures, 0);
    assert.equal(hGood.lastSuccessAt, (await attemptsOf(good.uuid))[0].startedAt);
    assert.equal((await ctx.srv.api.withVersion('2025-04').get(`${SUBS}/${A.uuid}`)).body.health.state, 'failing', 'older versions show health too');
    await api().delete(`${SUBS}/${good.uuid}`);
  });

  it(`after BULB_WEBHOOK_DISABLE_AFTER_HOURS of failure it is disabled (with why), announced to others; its deliveries wait and resume on re-activation`, async () => {
    // 121 hours of failure: the first failure moved back in time (the clock cannot wait five days).
    await ctx.tdb.db.query(`UPDATE webhook_subscriptions SET failing_since = now() - interval '121 hours' WHERE uuid = $1`, [A.uuid]);
    await api().post('/crm/customers', { externalId: 'health-2' });
    const disabled = await waitFor(async () => ((await sub(A.uuid)).isActive === false ? sub(A.uuid) : null), 'A disabled');
    assert.equal(disabled.health.state, 'disabled');
    assert.match(disabled.health.disabledReason, /no successful delivery attempt for 120 hours/);
    assert.match(disabled.health.disabledReason, /HTTP_STATUS 500/);
    const ev = await waitFor(async () => (await eventsOf('webhookSubscriptionDisabled'))[0], 'the event');
    assert.equal(ev.resource_uuid, A.uuid);
    assert.equal(ev.resource_type, 'WebhookSubscription');
    const toOps = await waitFor(() => rxOk.received.find((r) => r.body?.subscription === ops.uuid && r.body.eventType === 'webhookSubscriptionDisabled'), 'delivered to ops');
    assert.deepEqual(toOps.body.resource, { uuid: A.uuid, externalId: null });
    assert.equal((await deliveries(A.uuid)).filter((d) => d.eventType === 'webhookSubscriptionDisabled').length, 0, 'not sent to the subscription it is about');

    // Its pending delivery (a retry was due 0.1 s later) waits while it is disabled.
    const seen = rxA.received.length;
    await sleep(1000);
    assert.equal(rxA.received.length, seen, 'no attempt while disabled');
    const pending = await deliveries(A.uuid, '&status=pending');
    assert.equal(pending.length, 1);

    // Re-activated (by an older client, as any PATCH): health starts afresh, the waiting delivery goes out.
    rxA.behave(ok);
    const re = await ctx.srv.api.withVersion('2025-04').patch(`${SUBS}/${A.uuid}`, { isActive: true });
    assert.equal(re.status, 200);
    assert.deepEqual(re.body.health, { ...disabled.health, state: 'healthy', consecutiveFailures: 0, failingSince: null, disabledReason: null });
    await waitFor(async () => (await deliveries(A.uuid)).find((d) => d.uuid === pending[0].uuid)?.status === 'delivered', 'delivered after re-activation');
    const h = (await sub(A.uuid)).health;
    assert.equal(h.state, 'healthy');
    assert.ok(h.lastSuccessAt);
  });

  it('manual retry: a pending delivery that fails keeps its scheduled retries; a failed one stays failed and is not announced again', async () => {
    await worker.stop();
    worker = await startWorker(ctx.tdb.db, { ...ENV, BULB_WEBHOOK_RETRY_SCHEDULE: '30' });
    const P = await subscribe(rxB.url, ['customerMerge']);
    const t = await api().post(`${SUBS}/${P.uuid}/test`);
    assert.equal(t.status, 202);
    const first = await waitFor(async () => (await deliveries(P.uuid)).find((d) => d.attemptCount === 1), 'the first attempt');
    assert.equal(first.status, 'pending');
    assert.ok(Date.parse(first.nextAttemptAt) > Date.now() + 20_000, 'next attempt 30 s later');
    assert.equal((await api().post(`/integrations/webhooks/deliveries/${first.uuid}/retry`)).status, 202);
    const second = await waitFor(async () => (await deliveries(P.uuid)).find((d) => d.attemptCount === 2), 'the manual attempt');
    assert.equal(second.status, 'pending', 'still pending: its scheduled retry is kept');
    assert.equal(second.nextAttemptAt, first.nextAttemptAt, 'at the same time as before');
    const logs = await attemptsOf(P.uuid);
    assert.equal(logs[0].attemptNumber, 2);
    assert.equal(logs[0].nextAttemptAt, first.nextAttemptAt, 'the log says when the next attempt is');
    await api().delete(`${SUBS}/${P.uuid}`);

    await worker.stop();
    worker = await startWorker(ctx.tdb.db, ENV);
    const Q = await subscribe(rxB.url, ['customerMerge']);
    await api().post(`${SUBS}/${Q.uuid}/test`);
    const failed = await waitFor(async () => (await deliveries(Q.uuid)).find((d) => d.status === 'failed'), 'failed after its schedule');
    assert.equal(failed.attemptCount, 2);
    const announced = async () => (await eventsOf('webhookDeliveryFailed')).filter((e) => e.resource_uuid === failed.uuid).length;
    await waitFor(async () => (await announced()) === 1, 'announced once');
    assert.equal((await api().post(`/integrations/webhooks/deliveries/${failed.uuid}/retry`)).status, 202);
    const again = await waitFor(async () => (await deliveries(Q.uuid)).find((d) => d.attemptCount === 3 && d.status !== 'pending'), 'the manual attempt');
    assert.equal(again.status, 'failed');
    assert.equal(again.nextAttemptAt, null);
    await sleep(300);
    assert.equal(await announced(), 1, 'a failed manual retry is not announced again');
    await api().delete(`${SUBS}/${Q.uuid}`);
  });

  it('stats: attempts and successes per hour, per subscription and overall, in one 2026-11 request', async () => {
    // The chart reads the BRIN time index: with its page ranges summarised (as autovacuum does, partition by
    // partition: docs/partitioning.md), it still finds every attempt the logs (read by subscription) show.
    await ctx.tdb.db.query(`SELECT brin_summarize_new_values(inhrelid) FROM pg_inherits WHERE inhparent = 'webhook_attempts_started'::regclass`);
    const r = await api().get('/integrations/webhooks/stats?hours=24');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.hours, 24);
    assert.equal(r.body.overall.length, 24);
    assert.equal(r.body.since, r.body.overall[0].hour);
    assert.equal(Date.parse(r.body.overall[23].hour), Math.floor(Date.now() / 3_600_000) * 3_600_000, 'the last bucket is the current hour');
    const sum = (bs: any[], k: 'attempts' | 'successes') => bs.reduce((n, b) => n + b[k], 0);
    const logsA = await attemptsOf(A.uuid);
    const a = r.body.subscriptions.find((s: any) => s.subscriptionUuid === A.uuid);
    assert.equal(sum(a.buckets, 'attempts'), logsA.length);
    assert.equal(sum(a.buckets, 'successes'), logsA.filter((x) => x.outcome === 'success').length);
    const live = (await ctx.tdb.db.query(
      `SELECT count(*)::int AS n, (count(*) FILTER (WHERE a.outcome = 'success'))::int AS ok FROM webhook_attempts a
       JOIN webhook_subscriptions s ON s.id = a.subscription_id WHERE s.deleted_at IS NULL AND a.started_at >= $1`, [r.body.since])).rows[0];
    assert.equal(sum(r.body.overall, 'attempts'), live.n);
    assert.equal(sum(r.body.overall, 'successes'), live.ok);
    assert.ok(live.n > 0);
    for (const q of ['hours=0', 'hours=169', 'hours=x', 'foo=1']) assert.equal((await api().get(`/integrations/webhooks/stats?${q}`)).status, 400, q);
    const old = await ctx.srv.api.withVersion('2025-04').get('/integrations/webhooks/stats');
    assert.equal(old.status, 404);
    assert.deepEqual(errorCodes(old), ['EndpointNotInVersion']);
  });
}, ENV);
