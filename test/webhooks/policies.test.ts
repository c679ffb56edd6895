// Retry policy per subscription (issue 26 item 1, docs/delivery-policies.md): retrySchedule and retryJitter are
// stored per subscription (2026-11 only: older versions neither see nor accept them), bad values are a 400 naming
// the field with nothing changed, a long schedule scaled down by BULB_WEBHOOK_RETRY_UNIT_MS gets its attempts at its
// delays (received within 100 ms after due: issue 26's goal, measured at the receiver; one second run allowed), jitter stays within [d·(1−j), d·(1+j)], a PATCH applies
// to the next retry of pending deliveries, and a 410 Gone disables the subscription at once (health, operational
// event, audit row).
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription, errorCodes } from '../helpers/server.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { ok, startReceiver, status, waitFor, type Receiver } from './receiver.ts';

/** One schedule second lasts 1 ms: the 7-step schedule below spans 1.5 h and runs in 5.4 s. */
const UNIT_MS = 1;
const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '3000', BULB_WEBHOOK_RETRY_UNIT_MS: String(UNIT_MS) };
const SUBS = '/integrations/webhooks/subscriptions';
const LONG = [200, 300, 400, 600, 900, 1200, 1800];

await describeEachDb('retry policy per subscription', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let worker: TestWorker;
  let down: Receiver;
  before(async () => {
    worker = await startWorker(ctx.tdb.db, ENV);
    down = await startReceiver(status(500, 'down'));
  });
  after(async () => {
    await worker?.stop();
    await down?.close();
  });
  const subscribe = (body: Record<string, unknown>) => createSubscription(api(), { url: down.url, eventTypes: ['webhookTest'], ...body });
  const test = async (uuid: string) => assert.equal((await api().post(`${SUBS}/${uuid}/test`)).status, 202);
  const logs = async (uuid: string) =>
    ((await api().get(`/integrations/webhooks/logs?limit=250&subscription=${uuid}`)).body.data as any[]).reverse(); // oldest first
  const receivedBy = (uuid: string) => down.received.filter((r) => r.body?.subscription === uuid);

  it('defaults: the service schedule (5/20/125), no jitter, no rate cap; set, read back, reset to the default with null', async () => {
    const s = await subscribe({});
    assert.deepEqual([s.retrySchedule, s.retryJitter, s.maxPerSecond], [[5, 20, 125], 0, null]);
    const p = await api().patch(`${SUBS}/${s.uuid}`, { retrySchedule: [60, 3600, 86400], retryJitter: 20, maxPerSecond: 50 });
    assert.equal(p.status, 200, p.text);
    const got = (await api().get(`${SUBS}/${s.uuid}`)).body;
    assert.deepEqual([got.retrySchedule, got.retryJitter, got.maxPerSecond], [[60, 3600, 86400], 20, 50]);
    const listed = (await api().get(`${SUBS}?limit=250`)).body.data.find((x: any) => x.uuid === s.uuid);
    assert.deepEqual([listed.retrySchedule, listed.retryJitter, listed.maxPerSecond], [[60, 3600, 86400], 20, 50]);
    const reset = await api().patch(`${SUBS}/${s.uuid}`, { retrySchedule: null, maxPerSecond: null });
    assert.deepEqual([reset.body.retrySchedule, reset.body.retryJitter, reset.body.maxPerSecond], [[5, 20, 125], 20, null]);
  });

  it('older versions neither see nor accept the policy fields, and their writes keep it', async () => {
    const s = await subscribe({ retrySchedule: [10, 20], retryJitter: 10, maxPerSecond: 5 });
    const old = ctx.srv.api.withVersion('2025-04');
    const got = (await old.get(`${SUBS}/${s.uuid}`)).body;
    for (const k of ['retrySchedule', 'retryJitter', 'maxPerSecond']) assert.ok(!(k in got), `${k} shown to 2025-04`);
    assert.ok(!('retrySchedule' in (await old.get(`${SUBS}?limit=250`)).body.data[0]));
    for (const body of [{ retrySchedule: [10] }, { retryJitter: 5 }, { maxPerSecond: 5 }]) {
      const r = await old.patch(`${SUBS}/${s.uuid}`, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      const c = await old.post(SUBS, { url: down.url, eventType: 'webhookTest', ...body });
      assert.equal(c.status, 400, c.text);
    }
    const p = await old.patch(`${SUBS}/${s.uuid}`, { maxInFlight: 4 });
    assert.equal(p.status, 200, p.text);
    assert.ok(!('retryJitter' in p.body));
    const now = (await api().get(`${SUBS}/${s.uuid}`)).body;
    assert.deepEqual([now.retrySchedule, now.retryJitter, now.maxPerSecond, now.maxInFlight], [[10, 20], 10, 5, 4]);
  });

  it('bad input: 400 naming the field, nothing changed (schedule count, a step, the 7-day total; jitter; rate)', async () => {
    const s = await subscribe({ retrySchedule: [30], retryJitter: 5, maxPerSecond: 7 });
    const count = async () => (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM webhook_subscriptions`)).rows[0].n;
    const n = await count();
    const bad: [Record<string, unknown>, string][] = [
      [{ retrySchedule: [] }, 'retrySchedule'],
      [{ retrySchedule: Array(21).fill(60) }, 'retrySchedule'],
      [{ retrySchedule: [0] }, 'retrySchedule'],
      [{ retrySchedule: [60, 86401] }, 'retrySchedule'],
      [{ retrySchedule: [1.5] }, 'retrySchedule'],
      [{ retrySchedule: Array(8).fill(86400) }, 'retrySchedule'], // 8 days in all
      [{ retryJitter: 51 }, 'retryJitter'],
      [{ retryJitter: -1 }, 'retryJitter'],
      [{ maxPerSecond: 0 }, 'maxPerSecond'],
      [{ maxPerSecond: 10001 }, 'maxPerSecond'],
    ];
    for (const [body, field] of bad) {
      for (const r of [await api().patch(`${SUBS}/${s.uuid}`, body), await api().post(SUBS, { url: down.url, eventTypes: ['webhookTest'], ...body })]) {
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
        assert.deepEqual([...new Set(errorCodes(r))], ['InvalidParameterError']);
        assert.ok(r.body.errors.some((e: any) => `${e.message} ${e.moreInfo}`.includes(field)), `${JSON.stringify(body)} names ${field}: ${r.text}`);
      }
    }
    assert.equal(await count(), n, 'no subscription created');
    const now = (await api().get(`${SUBS}/${s.uuid}`)).body;
    assert.deepEqual([now.retrySchedule, now.retryJitter, now.maxPerSecond], [[30], 5, 7], 'unchanged');
    // The 7-day total exactly is allowed.
    const okTotal = await api().patch(`${SUBS}/${s.uuid}`, { retrySchedule: Array(7).fill(86400) });
    assert.equal(okTotal.status, 200, okTotal.text);
  });

  /**
   * One run of the 7-step schedule: each retry's lateness as the receiver saw it, its arrival minus the due time the
   * attempt before announced (next_attempt_at in the log: the database's clock, this machine's, as the receiver's
   * Date-based time), and the gaps between arrivals.
   */
  const sevenSteps = async () => {
    const s = await subscribe({ retrySchedule: LONG });
    await test(s.uuid);
    await waitFor(async () => (await logs(s.uuid)).length >= LONG.length + 1, 'every attempt', 30_000);
    const rows = await logs(s.uuid);
    assert.equal(rows.length, LONG.length + 1);
    assert.equal(rows[LONG.length].nextAttemptAt, null, 'no attempt after the last step');
    const rx = receivedBy(s.uuid);
    assert.equal(rx.length, LONG.length + 1);
    const late: number[] = [];
    for (let i = 1; i < rows.length; i++) {
      late.push(Math.round(performance.timeOrigin + rx[i].at - Date.parse(rows[i - 1].nextAttemptAt)));
      const gap = rx[i].at - rx[i - 1].at;
      assert.ok(gap >= LONG[i - 1] * UNIT_MS - 5, `attempt ${i + 1} came ${gap.toFixed(0)} ms after the one before, its delay is ${LONG[i - 1] * UNIT_MS} ms`);
    }
    const d = (await api().get(`/integrations/webhooks/deliveries?subscription=${s.uuid}`)).body.data[0];
    assert.deepEqual([d.status, d.attemptCount], ['failed', LONG.length + 1]);
    return late;
  };

  it('a 7-step schedule spanning 1.5 h, scaled down: each attempt received within 100 ms after due, then failed', async () => {
    // The goal (issue 26) is a bound, measured at the receiver. A run on a machine too loaded for it (the whole suite
    // beside other work) may miss it once: the schedule is run again, and the second run must meet it.
    const eld = monitorEventLoopDelay({ resolution: 5 });
    eld.enable();
    let late = await sevenSteps();
    const first = [...late];
    eld.disable();
    const show = (xs: number[]) => `${xs.join(', ')}; median ${[...xs].sort((a, b) => a - b)[3]}, max ${Math.max(...xs)}`;
    console.log(`# [${ctx.backend}] retry lateness at the receiver after due (ms), 7 steps: ${show(late)} (this process's event loop: p99 delay ${(eld.percentile(99) / 1e6).toFixed(0)} ms, max ${(eld.max / 1e6).toFixed(0)} ms)`);
    if (Math.max(...late) > 100) {
      late = await sevenSteps();
      console.log(`# [${ctx.backend}] missed the 100 ms once (${show(first)}); again: ${show(late)}`);
    }
    for (const l of late) assert.ok(l > -20 && l <= 100, `lateness ${l} ms after due (the goal: within 100 ms); all: ${late.join(', ')}, the first run's: ${first.join(', ')}`);
  });

  it('jitter: each delay within [d·(1−j), d·(1+j)], and not all the same', async () => {
    const steps = [800, 800, 800, 800, 800, 800];
    const s = await subscribe({ retrySchedule: steps, retryJitter: 50 });
    await test(s.uuid);
    await waitFor(async () => (await logs(s.uuid)).length >= steps.length + 1, 'every attempt', 30_000);
    const rows = await logs(s.uuid);
    // The delay drawn: the due time the log row announced minus when that attempt ended (its start + duration, plus the
    // result write: at most a few ms more, so the bounds get 50 ms of slack).
    const drawn = rows.slice(0, -1).map((r) => Date.parse(r.nextAttemptAt) - Date.parse(r.startedAt) - r.durationMs);
    console.log(`# [${ctx.backend}] delays drawn for 800 ms ± 50 %: ${drawn.join(', ')}`);
    for (const x of drawn) assert.ok(x >= 400 - 5 && x <= 1200 + 50, `a delay of ${x} ms is outside [400, 1200]`);
    assert.ok(Math.max(...drawn) - Math.min(...drawn) > 40, `jitter varies the delays: ${drawn.join(', ')}`);
  });

  it('a PATCH of the schedule applies to the next retry of a pending delivery', async () => {
    const s = await subscribe({ retrySchedule: [2000, 2000, 2000] }); // 2 s each here (33 min unscaled)
    await test(s.uuid);
    await waitFor(async () => (await logs(s.uuid)).length >= 1, 'the first attempt');
    // The retry already scheduled keeps its time; the new schedule is read when the next failure is recorded.
    assert.equal((await api().patch(`${SUBS}/${s.uuid}`, { retrySchedule: [100, 100, 100] })).status, 200);
    await waitFor(async () => (await logs(s.uuid)).length >= 4, 'every attempt', 20_000);
    const rows = await logs(s.uuid);
    const delays = rows.map((r) => (r.nextAttemptAt === null ? null : Date.parse(r.nextAttemptAt) - Date.parse(r.startedAt) - r.durationMs));
    assert.equal(rows.length, 4);
    assert.ok(delays[0]! >= 1995, `the retry scheduled before the PATCH kept its 2 s: ${delays.join(', ')}`);
    assert.ok(delays[1]! < 1000 && delays[2]! < 1000, `the next retries follow the new schedule (100 ms): ${delays.join(', ')}`);
    assert.equal(delays[3], null, 'failed after the new schedule’s last step');
  });

  it('410 Gone disables the subscription at once: health, reason, operational event, audit row', async () => {
    const gone = await startReceiver(status(410, 'gone'));
    const ops = await startReceiver();
    try {
      const watcher = await subscribe({ url: ops.url, eventTypes: ['webhookSubscriptionDisabled'] });
      const s = await subscribe({ url: gone.url });
      await test(s.uuid);
      const now = await waitFor(async () => {
        const b = (await api().get(`${SUBS}/${s.uuid}`)).body;
        return b.health.state === 'disabled' && b;
      }, 'disabled', 15_000);
      assert.equal(now.isActive, false);
      assert.match(now.health.disabledReason, /410 Gone/);
      assert.equal(gone.received.length, 1, 'one attempt, no retry sent');
      const ev = await waitFor(() => ops.received.find((r) => r.body?.subscription === watcher.uuid && r.body.resource?.uuid === s.uuid), 'the event');
      assert.equal(ev.body.eventType, 'webhookSubscriptionDisabled');
      const audit = (await ctx.tdb.db.query(`SELECT actor_type, action, details FROM audit_log WHERE target_id = $1 ORDER BY id`, [s.uuid])).rows;
      const row = audit.find((a: any) => a.action === 'subscription.disabled');
      assert.ok(row, JSON.stringify(audit));
      assert.equal(row.actor_type, 'system');
      assert.match(row.details.reason, /410 Gone/);
      // Its delivery waits, as any inactive subscription's (pending), and re-activating resumes it.
      const d = (await api().get(`/integrations/webhooks/deliveries?subscription=${s.uuid}`)).body.data[0];
      assert.equal(d.status, 'pending');
    } finally {
      await gone.close();
      await ops.close();
    }
  });

  it('re-activating a subscription disabled by a 410 sends its waiting delivery at once, not at its scheduled retry', async () => {
    const gone = await startReceiver(status(410, 'gone'));
    try {
      const s = await subscribe({ url: gone.url, retrySchedule: [86400] }); // its retry 86 s after the 410, here
      await test(s.uuid);
      await waitFor(async () => (await api().get(`${SUBS}/${s.uuid}`)).body.health.state === 'disabled', 'disabled', 15_000);
      const delivery = async () => (await api().get(`/integrations/webhooks/deliveries?subscription=${s.uuid}`)).body.data[0];
      const waiting = await delivery();
      assert.equal(waiting.status, 'pending');
      assert.ok(Date.parse(waiting.nextAttemptAt) - Date.now() > 60_000, `its retry is more than a minute away: ${waiting.nextAttemptAt}`);
      gone.behave(ok); // the endpoint is back
      const p = await api().patch(`${SUBS}/${s.uuid}`, { isActive: true });
      assert.equal(p.status, 200, p.text);
      await waitFor(async () => (await delivery()).status === 'delivered', 'the delivery, at once', 10_000);
      assert.equal(gone.received.length, 2, 'the 410, then the delivery');
    } finally {
      await gone.close();
    }
  });
}, ENV);

