// Per-subscription lanes through a real worker and receivers: the in-flight ceiling follows the endpoint's
// health (AIMD) within the subscription's maxInFlight, Retry-After on 429/503 holds the subscription without
// consuming its schedule; plus the pure pieces (Retry-After parsing, the AIMD rule).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { emitEvents, type NewEvent } from '../../src/events/emit.ts';
import { parseRetryAfter, RETRY_AFTER_CAP_MS } from '../../src/webhooks/sender.ts';
import { Lane, signalOf } from '../../src/webhooks/lanes.ts';
import { discoverLanes } from '../../src/webhooks/queue-store.ts';
import { startReceiver, waitFor, type Receiver } from './receiver.ts';
import { hookedDb } from '../helpers/db.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '600', BULB_WEBHOOK_TIMEOUT_MS: '5000' };

describe('lane rules', () => {
  it('parses Retry-After as seconds or an HTTP date, capped at one hour; anything else is ignored', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    assert.equal(parseRetryAfter('7', now), 7000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter('86400', now), RETRY_AFTER_CAP_MS);
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now), 0, 'a date in the past: no wait');
    assert.equal(parseRetryAfter('Mon, 23 Nov 2026 10:00:00 GMT', now), RETRY_AFTER_CAP_MS);
    for (const bad of [undefined, '', '-5', '1.5', 'soon', '12 May']) assert.equal(parseRetryAfter(bad, now), null, String(bad));
  });

  it('AIMD from 1: +1 per success up to max, halved by timeouts, connection failures, 5xx and 429, never below 1', () => {
    const l = new Lane('1', 16, () => { throw new Error('no pool needed'); });
    const fail = (errorCode: any, statusCode: number | null = null) => signalOf({ ok: false, statusCode, errorCode });
    assert.equal(l.cap, 1, 'slow start');
    for (let i = 0; i < 40; i++) l.feedback(signalOf({ ok: true, statusCode: 200, errorCode: null }));
    assert.equal(l.cap, 16);
    l.feedback(fail('TIMEOUT'));
    assert.equal(l.cap, 8);
    l.feedback(fail('HTTP_STATUS', 503));
    l.feedback(fail('HTTP_STATUS', 429));
    l.feedback(fail('CONNECTION'));
    assert.equal(l.cap, 1);
    l.feedback(fail('TIMEOUT'));
    assert.equal(l.cap, 1, 'floor 1');
    l.feedback(fail('HTTP_STATUS', 404));
    assert.equal(l.cap, 1, 'a 4xx answer is not overload');
    for (let i = 0; i < 40; i++) l.feedback(signalOf({ ok: true, statusCode: 200, errorCode: null }));
    assert.equal(l.cap, 16, 'back up to max, not beyond');
    l.inflight = 10;
    assert.equal(l.startRoom(Date.now()), 6, 'attempts that may start');
    assert.equal(l.room(Date.now()), 54, 'a claim may also fill three ceilings of waiting deliveries');
    l.pause(Date.now() + 60_000);
    assert.equal(l.startRoom(Date.now()), 0, 'paused by Retry-After');
    assert.equal(l.room(Date.now()), 0);
  });
});

// A customer always has an externalId (the event catalog's Customer bodies say so; the receiver checks it).
const ev = (): NewEvent => ({ eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: `c-${crypto.randomUUID()}` }, source: 'TULIP_API' });

/** A receiver that counts requests being answered at once, and notes that count at each arrival. */
async function gauge() {
  const st: { now: number; seen: number[]; answer: (res: http.ServerResponse) => unknown } = { now: 0, seen: [], answer: (res) => res.writeHead(200).end() };
  const rx = await startReceiver((_q, res) => {
    st.now++;
    st.seen.push(st.now);
    res.on('close', () => st.now--);
    st.answer(res);
  });
  return { rx, st };
}

await describeEachDb('webhook lanes', (ctx) => {
  let worker: TestWorker;
  const receivers: Receiver[] = [];
  before(async () => {
    worker = await startWorker(ctx.tdb.db, ENV);
  });
  after(async () => {
    await worker?.stop();
    for (const r of receivers) await r.close();
  });
  const subscribe = async (url: string, extra: Record<string, unknown> = {}) => {
    const r = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url, eventType: 'customerCreate', ...extra });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };
  const emit = (n: number) => ctx.tdb.db.transaction((tx) => emitEvents(tx, Array.from({ length: n }, ev)));

  it('maxInFlight is settable 1–64 and returned; out of range is a 400 that changes nothing', async () => {
    const rx = await startReceiver();
    receivers.push(rx);
    const s = await subscribe(rx.url, { maxInFlight: 3, isActive: false });
    assert.equal(s.maxInFlight, 3);
    assert.equal((await subscribe(rx.url, { isActive: false })).maxInFlight, 16, 'default 16');
    for (const bad of [0, 65, 2.5, '8']) {
      const r = await ctx.srv.api.patch(`/integrations/webhooks/subscriptions/${s.uuid}`, { maxInFlight: bad });
      assert.equal(r.status, 400, String(bad));
    }
    const p = await ctx.srv.api.patch(`/integrations/webhooks/subscriptions/${s.uuid}`, { maxInFlight: 64 });
    assert.equal(p.body.maxInFlight, 64);
    assert.equal((await ctx.srv.api.get(`/integrations/webhooks/subscriptions/${s.uuid}`)).body.maxInFlight, 64);
    const same = await ctx.srv.api.patch(`/integrations/webhooks/subscriptions/${s.uuid}`, { isActive: false });
    assert.equal(same.body.maxInFlight, 64, 'a patch without it keeps it');
  });

  it('adaptive concurrency: at most maxInFlight at once, down to one while the endpoint fails, back up on success', async () => {
    const { rx, st } = await gauge();
    receivers.push(rx);
    const sub = await subscribe(rx.url, { maxInFlight: 6 });
    // Healthy but slow: the endpoint sees its ceiling, never more.
    st.answer = (res) => setTimeout(() => res.writeHead(200).end(), 150);
    await emit(30);
    await waitFor(() => st.seen.length >= 30, 'healthy wave');
    assert.equal(Math.max(...st.seen), 6, `concurrency seen: ${st.seen.join(',')}`);
    // Failing slowly with 500: after the first failures only one attempt at a time.
    st.answer = (res) => setTimeout(() => res.writeHead(500).end(), 150);
    const mark = st.seen.length;
    await emit(24);
    await waitFor(() => st.seen.length >= mark + 24, 'failing wave', 30_000);
    const failing = st.seen.slice(mark);
    assert.deepEqual(failing.slice(-12), Array(12).fill(1), `one at a time once failing: ${failing.join(',')}`);
    // Healthy again: successes raise the ceiling step by step back to maxInFlight.
    st.answer = (res) => setTimeout(() => res.writeHead(200).end(), 100);
    const mark2 = st.seen.length;
    await emit(80);
    await waitFor(() => st.seen.length >= mark2 + 80, 'recovery wave', 30_000);
    const rec = st.seen.slice(mark2);
    assert.equal(rec[0], 1, 'starts from the lowered ceiling');
    assert.equal(Math.max(...rec), 6, `climbs back to maxInFlight and no further: ${rec.join(',')}`);
    await ctx.srv.api.delete(`/integrations/webhooks/subscriptions/${sub.uuid}`);
  });

  it('Retry-After on 429 holds the whole subscription until then, without consuming the retry schedule', async () => {
    let first = true;
    const rx = await startReceiver((_q, res) => {
      if (first) {
        first = false;
        res.writeHead(429, { 'retry-after': '2' }).end('slow down');
      } else res.writeHead(200).end();
    });
    receivers.push(rx);
    const sub = await subscribe(rx.url, { maxInFlight: 1 });
    await emit(3);
    const statuses = async () => (await ctx.tdb.db.query(
      `SELECT d.status, d.attempt_count, d.schedule_pos FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.uuid = $1 ORDER BY d.id`,
      [sub.uuid])).rows;
    const rows = await waitFor(async () => ((await statuses()).every((r) => r.status === 'delivered') ? statuses() : null), 'the 429, then all three delivered', 20_000);
    assert.equal(rx.received.length, 4);
    const [limited, ...rest] = rx.received;
    for (const r of rest) assert.ok(r.at - limited.at >= 1900, `no attempt before the Retry-After passed (${(r.at - limited.at).toFixed(0)} ms)`);
    // The retry came after ~2 s, not after the 600 s schedule, and the schedule position is untouched.
    assert.deepEqual(rows.map((r) => r.status), ['delivered', 'delivered', 'delivered']);
    assert.equal(rows.reduce((n, r) => n + r.attempt_count, 0), 4, 'the 429 is logged as an attempt');
    assert.ok(rows.every((r) => r.schedule_pos === 0), `schedule not consumed: ${JSON.stringify(rows)}`);
    const logs = (await ctx.srv.api.get(`/integrations/webhooks/logs?subscription=${sub.uuid}&outcome=failure`)).body.data;
    assert.equal(logs.length, 1);
    assert.equal(logs[0].statusCode, 429);
    const wait = Date.parse(logs[0].nextAttemptAt) - Date.parse(logs[0].startedAt);
    assert.ok(wait >= 1500 && wait < 60_000, `next attempt set by Retry-After (${wait} ms), not by the 600 s schedule`);
    const paused = (await ctx.tdb.db.query(`SELECT paused_until FROM webhook_subscriptions WHERE uuid = $1`, [sub.uuid])).rows[0].paused_until;
    assert.ok(paused, 'the pause is stored for every worker');
  });
}, ENV);

await describeEachDb('webhook sweep', (ctx) => {
  it('a notified delivery is claimed and sent while the fallback sweep is still running (it never waits for it)', async () => {
    const rx = await startReceiver();
    after(() => rx.close());
    const r = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate' });
    assert.equal(r.status, 201, r.text);
    // The worker's database, with the sweep's statement held until the test lets it go (with 1,000 subscriptions
    // holding work it takes tens of ms; here as long as the test needs).
    let sweepSeen!: () => void;
    const seen = new Promise<void>((res) => (sweepSeen = res));
    let release!: () => void;
    const released = new Promise<void>((res) => (release = res));
    const db = ctx.tdb.db;
    const held = hookedDb(db, {
      async statement(sql) {
        if (sql.includes('WITH RECURSIVE subs(id)')) {
          sweepSeen();
          await released;
        }
      },
    });
    const w = await startWorker(held, ENV);
    try {
      await seen; // the first sweep is under way, and held
      await db.transaction((tx) => emitEvents(tx, [ev()]));
      await waitFor(() => rx.received.length >= 1, 'the delivery, while the sweep is held', 8_000);
    } finally {
      release();
      await w.stop();
    }
  });

  it('finds a subscription due when any of its deliveries is claimable, however many leases are ahead of it', async () => {
    const rx = await startReceiver();
    after(() => rx.close());
    const r = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerUpdate' });
    assert.equal(r.status, 201, r.text);
    const db = ctx.tdb.db;
    const sub = (await db.query<{ id: string }>('SELECT id FROM webhook_subscriptions WHERE uuid = $1', [r.body.uuid])).rows[0].id;
    await db.transaction((tx) => emitEvents(tx, Array.from({ length: 260 }, () => ({ ...ev(), eventType: 'customerUpdate' }))));
    // Leases of live workers on the oldest `n` deliveries (more than one worker can hold: 4 × 64 each).
    const lease = (n: number, until: string) => db.query(
      `UPDATE webhook_deliveries SET locked_until = ${until}, lock_token = gen_random_uuid()
       WHERE id IN (SELECT id FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY next_attempt_at, id LIMIT $2)`,
      [sub, n],
    );
    const due = async () => (await discoverLanes(db)).find((l) => l.subscription_id === String(sub))?.due_in_ms;
    await lease(250, "now() + interval '1 hour'");
    assert.ok((await due())! <= 0, 'ten deliveries behind 250 leases are due now');
    await lease(260, "now() + interval '1 hour'");
    const all = (await due())!;
    assert.ok(all > 3_500_000 && all <= 3_600_000, `all leased: due when the first lease expires (${all} ms)`);
    await db.query(`UPDATE webhook_deliveries SET locked_until = now() + interval '10 minutes'
      WHERE id = (SELECT max(id) FROM webhook_deliveries WHERE subscription_id = $1)`, [sub]);
    const sooner = (await due())!;
    assert.ok(sooner > 500_000 && sooner <= 600_000, `the earliest expiry counts, wherever it is (${sooner} ms)`);
    await db.query(`UPDATE webhook_deliveries SET locked_until = now() - interval '1 second'
      WHERE id = (SELECT max(id) FROM webhook_deliveries WHERE subscription_id = $1)`, [sub]);
    assert.ok((await due())! <= 0, 'an expired lease (a dead worker) is claimable now');
  });
}, ENV);
