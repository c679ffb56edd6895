// Retry-After and retry timing (docs/delivery.md, "Receiver back-pressure" and "Retry timing"), through a real worker
// and loopback receivers on both engines:
// - a pause is at least 1 s (`Retry-After: 0` made a hot loop: 258 attempts of one delivery in 5 s), and a receiver
//   that always answers Retry-After defers a delivery RETRY_AFTER_DEFERRALS times, then uses up its schedule: the
//   delivery fails (with its webhookDeliveryFailed event) instead of staying pending for ever;
// - the lane is claimed again when the database's pause ends, with the fallback sweep off (the claim at the lane's
//   own, earlier, end found the subscription paused, and the retry waited for the sweep: 0.5–1.8 s late), a
//   rate-capped lane too (its slots start at the pause's end);
// - a failure's schedule delay counts from the attempt's end, not from its result's write (held here 800 ms).
// Times at the receiver are asserted from below only (never early; a shared 2-core machine may be late): what tells the
// fixed behaviour from the old is a retry arriving at all with the sweep off, and the delay the database computed.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, afterEach, describe, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription } from '../helpers/server.ts';
import { changesHeard, startWorker } from '../helpers/worker.ts';
import { emitEvents, type NewEvent } from '../../src/events/emit.ts';
import { NO_MORE_RETRIES, RETRY_AFTER_DEFERRALS, RETRY_AFTER_MIN_MS, retryAfterDefers, retryAfterPause } from '../../src/webhooks/schedule.ts';
import { hookedDb } from '../helpers/db.ts';
import { parseRetryAfter, RETRY_AFTER_CAP_MS } from '../../src/webhooks/sender.ts';
import { sleep, startReceiver, status, waitFor, type Behaviour, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '3000' };
/** The fallback sweep, as good as off: what brings a retry on time is the lane's own due time. */
const NO_SWEEP = { pollMs: 60_000 };

/** A receiver answering 429 with this Retry-After to the first `times` requests (Infinity: all), then 200. */
const limited = (retryAfter: string, times = Infinity): Behaviour => {
  let n = 0;
  return (_q, res) => (n++ < times ? res.writeHead(429, { 'retry-after': retryAfter }).end('slow down') : res.writeHead(200).end());
};

const ev = (): NewEvent => ({ eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: `c-${crypto.randomUUID()}` }, source: 'TULIP_API' });

describe('Retry-After rules', () => {
  it('a pause is at least RETRY_AFTER_MIN_MS; a delivery is deferred RETRY_AFTER_DEFERRALS times, a one-attempt delivery never', () => {
    assert.equal(retryAfterPause(0), RETRY_AFTER_MIN_MS);
    assert.equal(retryAfterPause(250), RETRY_AFTER_MIN_MS);
    assert.equal(retryAfterPause(7000), 7000);
    assert.equal(RETRY_AFTER_DEFERRALS, 5);
    assert.ok(retryAfterDefers(0, 0), 'the first attempt');
    assert.ok(retryAfterDefers(4, 0), 'after four deferrals');
    assert.ok(!retryAfterDefers(5, 0), 'after five');
    assert.ok(retryAfterDefers(6, 2), 'two steps used, four deferrals');
    assert.ok(!retryAfterDefers(7, 2), 'two steps used, five deferrals');
    assert.ok(!retryAfterDefers(3, NO_MORE_RETRIES), 'a manual retry or recover of a failed delivery');
  });

  it('Retry-After is read as docs/delivery.md says: integer seconds, a date with a time (ISO 8601 too), capped at 1 h; the rest ignored', () => {
    const now = Date.parse('2026-11-30T06:00:00Z');
    assert.equal(parseRetryAfter('0', now), 0);
    assert.equal(parseRetryAfter(' 7 ', now), 7_000);
    assert.equal(parseRetryAfter('99999', now), RETRY_AFTER_CAP_MS);
    assert.equal(parseRetryAfter('Mon, 30 Nov 2026 06:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('2026-11-30T06:00:30Z', now), 30_000);
    assert.equal(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now), 0, 'a date past: now (the floor makes it 1 s)');
    for (const v of ['1.5', '0.5', '-5', '+5', '1e3', '5, 10', 'soon', '2026-12-01', '', undefined]) assert.equal(parseRetryAfter(v, now), null, String(v));
    assert.equal(parseRetryAfter(['7', '20'], now), 7_000, 'given several values, the first (the sender passes the first header it meets)');
  });
});

await describeEachDb('webhook Retry-After and retry timing', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const receivers: Receiver[] = [];
  const subs: string[] = [];
  after(async () => {
    for (const r of receivers) await r.close();
  });
  /** A 2026-11 subscription to customerCreate, deleted once its test is over (the events of the next reach no other). */
  const subscribe = async (body: Record<string, unknown>) => {
    const s = await createSubscription(api(), { eventTypes: ['customerCreate'], ...body });
    subs.push(s.uuid);
    return s;
  };
  afterEach(async () => {
    for (const uuid of subs.splice(0)) await api().delete(`/integrations/webhooks/subscriptions/${uuid}`);
  });
  const receiver = async (b: Behaviour) => {
    const rx = await startReceiver(b);
    receivers.push(rx);
    return rx;
  };
  const logs = async (uuid: string) => ((await api().get(`/integrations/webhooks/logs?limit=250&subscription=${uuid}`)).body.data as any[]).reverse(); // oldest first
  const deliveries = async (uuid: string) => (await ctx.tdb.db.query(
    `SELECT d.uuid, d.status, d.attempt_count, d.schedule_pos FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
     WHERE s.uuid = $1 ORDER BY d.id`, [uuid])).rows;
  const gapsMs = (rx: Receiver) => rx.received.slice(1).map((r, i) => Math.round(r.at - rx.received[i].at));

  it('Retry-After: 0 pauses 1 s, not a hot loop; always answered, it defers a delivery 5 times, then its schedule runs out and it fails', async () => {
    const w = await startWorker(ctx.tdb.db, ENV);
    try {
      const rx = await receiver(limited('0'));
      const sub = await subscribe({ url: rx.url, retrySchedule: [1] });
      await ctx.tdb.db.transaction((tx) => emitEvents(tx, [ev()]));
      const attempts = 1 + RETRY_AFTER_DEFERRALS + 1; // the first, the deferred ones, the schedule's one retry
      const [d] = await waitFor(async () => {
        const ds = await deliveries(sub.uuid);
        return ds[0]?.status === 'failed' ? ds : null;
      }, `the delivery failed after ${attempts} attempts`, 20_000);
      await sleep(300); // nothing more comes
      assert.equal(rx.received.length, attempts, `attempts: ${rx.received.length}, gaps ${gapsMs(rx).join(', ')} ms`);
      assert.deepEqual([d.attempt_count, d.schedule_pos], [attempts, 1], 'five deferrals kept the position; the sixth answer used the step');
      for (const g of gapsMs(rx)) assert.ok(g >= RETRY_AFTER_MIN_MS - 50, `attempts at least ${RETRY_AFTER_MIN_MS} ms apart: ${gapsMs(rx).join(', ')} ms`);
      const rows = await logs(sub.uuid);
      assert.equal(rows.length, attempts);
      assert.ok(rows.every((r) => r.statusCode === 429));
      assert.equal(rows[attempts - 1].nextAttemptAt, null, 'the last attempt has no next one');
      // A failure out of Retry-After deferrals is announced like any exhausted delivery.
      const announced = await ctx.tdb.db.query(`SELECT 1 FROM events WHERE event_type = 'webhookDeliveryFailed' AND resource_uuid = $1`, [d.uuid]);
      assert.equal(announced.rows.length, 1, 'webhookDeliveryFailed');
    } finally {
      await w.stop();
    }
  });

  for (const capped of [false, true]) {
    it(`a Retry-After pause ends on time with the fallback sweep off: the lane is claimed at the database's pause end${capped ? ' (rate-capped: slots from the pause end)' : ''}`, async () => {
      const w = await startWorker(ctx.tdb.db, ENV, NO_SWEEP);
      try {
        const rx = await receiver(limited('1', 1));
        const sub = await subscribe({ url: rx.url, maxInFlight: 1, ...(capped ? { maxPerSecond: 5 } : {}) });
        await ctx.tdb.db.transaction((tx) => emitEvents(tx, [ev(), ev(), ev()]));
        // Without the lane's own wake-up at the pause's end these would wait for the sweep, a minute away.
        await waitFor(async () => (await deliveries(sub.uuid)).every((d) => d.status === 'delivered'), 'all three delivered', 10_000);
        assert.equal(rx.received.length, 4, 'the 429, then the three');
        const [first, ...rest] = rx.received;
        const after429 = rest.map((r) => Math.round(r.at - first.at));
        // Not before the pause's end (1 s). That they came at all within the waitFor above, with the sweep a minute away,
        // is the lane waking at the pause's end by itself (no upper bound on the time: a loaded machine is slow).
        for (const t of after429) assert.ok(t >= 950, `nothing during the pause: ${after429.join(', ')} ms after the 429`);
        const rows = await logs(sub.uuid);
        const deferred = rows.find((r) => r.statusCode === 429);
        const retry = rows.find((r) => r.statusCode === 200 && r.attemptNumber === 2);
        const late = Date.parse(retry.startedAt) - Date.parse(deferred.nextAttemptAt);
        assert.ok(late >= -5, `the deferred delivery's retry ${late} ms after its due time, never before it`);
      } finally {
        await w.stop();
      }
    });
  }

  for (const rate of [1, 10]) {
    it(`a scheduled retry of a lane capped at ${rate}/s goes at its due time with the fallback sweep off`, async () => {
      // The lane is claimed CLAIM_AHEAD_MS before the retry is due; a capped lane's claim took only deliveries due by its
      // first slot, which was the claim's own instant when the cap had room: it found nothing, and the retry waited
      // for the sweep (0.3–2 s late with the sweep's 2 s; here a minute away).
      const w = await startWorker(ctx.tdb.db, ENV, NO_SWEEP);
      try {
        let n = 0;
        const rx = await receiver((_q, res) => res.writeHead(n++ < 2 ? 500 : 200).end());
        const sub = await subscribe({ url: rx.url, maxInFlight: 1, maxPerSecond: rate, retrySchedule: [1, 2] });
        await ctx.tdb.db.transaction((tx) => emitEvents(tx, [ev()]));
        await waitFor(async () => (await deliveries(sub.uuid)).every((d) => d.status === 'delivered'), 'delivered on its second retry', 15_000);
        const rows = await logs(sub.uuid);
        assert.deepEqual(rows.map((r) => r.statusCode), [500, 500, 200]);
        for (let i = 1; i < rows.length; i++) {
          const late = Date.parse(rows[i].startedAt) - Date.parse(rows[i - 1].nextAttemptAt);
          assert.ok(late >= -5, `retry ${i} ${late} ms after its due time, never before it`);
        }
      } finally {
        await w.stop();
      }
    });
  }

  it('a Retry-After pause reaches every worker: what another worker holds of the subscription is given back, none of it started during the pause', async () => {
    // Probe (2026-11-29): only the worker that got the 429 held back; the other sent the deliveries it held (claimed with
    // their rate slots up to a second ahead) through the pause.
    const workers = [await startWorker(ctx.tdb.db, ENV), await startWorker(ctx.tdb.db, ENV)];
    try {
      const rx = await receiver(limited('3', 1));
      const sub = await subscribe({ url: rx.url, maxPerSecond: 2 });
      const id = String((await ctx.tdb.db.query(`SELECT id FROM webhook_subscriptions WHERE uuid = $1`, [sub.uuid])).rows[0].id);
      // When each worker heard of a change of the subscription (its creation's included).
      const heard = workers.map((w) => changesHeard(w, id));
      await ctx.tdb.db.transaction((tx) => emitEvents(tx, Array.from({ length: 8 }, ev)));
      await waitFor(async () => (await deliveries(sub.uuid)).every((d) => d.status === 'delivered') || null, 'all eight delivered', 30_000);
      const rows = await logs(sub.uuid);
      const paused = rows.find((r) => r.statusCode === 429);
      const answered = Date.parse(paused.startedAt) + paused.durationMs;
      const pausedUntil = Date.parse(paused.nextAttemptAt);
      const told = heard.map((times) => times.find((t) => t >= answered - 50));
      assert.ok(told.every((t) => t !== undefined), `both workers heard of the pause (${JSON.stringify(heard)}, the 429 answered at ${answered})`);
      const since = Math.max(...(told as number[]));
      const during = rows.filter((r) => r !== paused && Date.parse(r.startedAt) > since && Date.parse(r.startedAt) < pausedUntil);
      assert.deepEqual(during.map((r) => r.startedAt), [], `nothing started between ${new Date(since).toISOString()} and the pause's end ${paused.nextAttemptAt}`);
      assert.equal(rx.received.length, 9, 'the 429, then each of the eight once');
    } finally {
      for (const w of workers) await w.stop();
    }
  });

  it('an operator\'s act is now, not after a receiver\'s Retry-After pause: a manual retry, a test, a re-activation', async () => {
    // Probe (2026-11-29): after a 429 with Retry-After: 7200 (paused 1 h), the retry answered 202 "now", the test 202,
    // re-activation reset the health, and nothing was sent for the hour.
    const w = await startWorker(ctx.tdb.db, ENV);
    try {
      let limit = true;
      const rx = await receiver((_q, res) => (limit ? res.writeHead(429, { 'retry-after': '7200' }).end('later') : res.writeHead(200).end()));
      const sub = await subscribe({ url: rx.url, eventTypes: ['customerCreate', 'webhookTest'] });
      const path = `/integrations/webhooks/subscriptions/${sub.uuid}`;
      const pausedAgain = async (n: number) => {
        await waitFor(async () => rx.received.length >= n || null, `429 number ${n}`, 20_000);
        await waitFor(async () => (await ctx.tdb.db.query(`SELECT 1 FROM webhook_subscriptions WHERE uuid = $1 AND paused_until > now() + interval '30 minutes'`, [sub.uuid])).rows.length > 0 || null, 'paused');
      };
      // 1. A manual retry of the delivery the receiver paused.
      await ctx.tdb.db.transaction((tx) => emitEvents(tx, [ev()]));
      await pausedAgain(1);
      limit = false;
      const [d] = await deliveries(sub.uuid);
      const retried = await api().post(`/integrations/webhooks/deliveries/${d.uuid}/retry`);
      assert.equal(retried.status, 202, retried.text);
      await waitFor(async () => (await deliveries(sub.uuid))[0].status === 'delivered' || null, 'the retried delivery sent now', 20_000);
      // 2. A test event, sent while paused again.
      limit = true;
      await ctx.tdb.db.transaction((tx) => emitEvents(tx, [ev()]));
      await pausedAgain(3);
      limit = false;
      assert.equal((await api().post(`${path}/test`)).status, 202);
      await waitFor(async () => rx.received.some((r) => r.body?.eventType === 'webhookTest') || null, 'the test sent now', 20_000);
      // The delivery the 429 deferred is due now as well: it stayed due at the pause's old end, an hour on (a probe).
      await waitFor(async () => (await deliveries(sub.uuid)).every((x) => x.status === 'delivered') || null, 'the deferred delivery sent once the test lifted the pause', 20_000);
      // 3. Re-activated, its waiting deliveries go out at once (the one the 429 deferred too).
      limit = true;
      const sent = rx.received.length; // before the event: its 429 may come before the emit returns
      await ctx.tdb.db.transaction((tx) => emitEvents(tx, [ev()]));
      await pausedAgain(sent + 1);
      limit = false;
      assert.equal((await api().patch(path, { isActive: false })).status, 200);
      assert.equal((await api().patch(path, { isActive: true })).status, 200);
      await waitFor(async () => (await deliveries(sub.uuid)).every((x) => x.status === 'delivered') || null, 'every delivery sent after re-activation', 20_000);
    } finally {
      await w.stop();
    }
  });

  it('lifting a pause makes due only the deliveries it deferred, not a retry waiting on its own schedule', async () => {
    // The review (2026-11-29): a test sent while paused pulled a delivery due in 30 min on its schedule forward, a step used.
    const w = await startWorker(ctx.tdb.db, ENV);
    try {
      let tests = 0;
      const rx = await receiver((_q, res, r) => {
        if (r.body?.eventType !== 'webhookTest') return void res.writeHead(500).end('down');
        return void (tests++ === 0 ? res.writeHead(429, { 'retry-after': '3600' }).end('later') : res.writeHead(200).end());
      });
      const sub = await subscribe({ url: rx.url, eventTypes: ['customerCreate', 'webhookTest'], retrySchedule: [1800, 1800] });
      const path = `/integrations/webhooks/subscriptions/${sub.uuid}`;
      await ctx.tdb.db.transaction((tx) => emitEvents(tx, [ev()]));
      await waitFor(async () => (await deliveries(sub.uuid))[0]?.schedule_pos === 1 || null, 'the first failure, its retry 30 min away');
      assert.equal((await api().post(`${path}/test`)).status, 202);
      await waitFor(async () => (await ctx.tdb.db.query(`SELECT 1 FROM webhook_subscriptions WHERE uuid = $1 AND paused_until > now() + interval '30 minutes'`, [sub.uuid])).rows.length > 0 || null, 'paused an hour');
      assert.equal((await api().post(`${path}/test`)).status, 202, 'a test lifts the pause');
      const [d1] = (await ctx.tdb.db.query(
        `SELECT d.attempt_count, d.next_attempt_at > now() + interval '20 minutes' AS later FROM webhook_deliveries d
         JOIN webhook_subscriptions s ON s.id = d.subscription_id JOIN events e ON e.id = d.event_id AND e.event_type = 'customerCreate' WHERE s.uuid = $1`,
        [sub.uuid],
      )).rows;
      assert.deepEqual([d1.attempt_count, d1.later], [1, true], 'the retry stays on its schedule');
      await waitFor(async () => tests >= 3 || null, 'the deferred test and the new one sent');
    } finally {
      await w.stop();
    }
  });

  it('a failure waits its schedule step from the attempt\'s end, however late its result is written', async () => {
    // The worker's failure writes (a transaction: a failure may be a delivery's last) held 800 ms before they start.
    const HOLD_MS = 800;
    const db = ctx.tdb.db;
    const held = hookedDb(db, { transaction: () => sleep(HOLD_MS) });
    const w = await startWorker(held, ENV);
    try {
      const rx = await receiver(status(500, 'down'));
      const sub = await subscribe({ url: rx.url, retrySchedule: [1] });
      await db.transaction((tx) => emitEvents(tx, [ev()]));
      await waitFor(async () => (await deliveries(sub.uuid))[0]?.status === 'failed', 'the retry, then failed', 15_000);
      const [first] = await logs(sub.uuid);
      const delay = Date.parse(first.nextAttemptAt) - (Date.parse(first.startedAt) + first.durationMs);
      // Counted from the write it was 1,000 + 800 ms and more.
      assert.ok(delay >= 950 && delay < 1_000 + (3 * HOLD_MS) / 4, `next attempt ${delay} ms after the attempt's end, for a step of 1,000 ms`);
      const [gap] = gapsMs(rx);
      assert.ok(gap >= 950, `the retry came ${gap} ms after the first attempt, not before its step`);
    } finally {
      await w.stop();
    }
  });
}, ENV);
