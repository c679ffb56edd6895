// A claim's lease and the deliveries it holds in memory (issue found by a probe, 2026-11-28): a claim holds up to
// HELD_CEILINGS ceilings of a lane, started one ceiling after another. The lease covered one attempt: behind a receiver
// answering in 11 s the last quarter of a claim started after its lease had run out, was claimed again meanwhile, sent
// again every ~33 s, never recorded (its token had changed), and starved the lane. The lease now covers the held
// ceilings, and a held delivery that could not finish within its lease is given back instead of sent.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { emitEvents, type NewEvent } from '../../src/events/emit.ts';
import { HELD_CEILINGS } from '../../src/webhooks/lanes.ts';
import { startReceiver, waitFor, sleep, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '600' };
const ev = (): NewEvent => ({ eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: `c-${crypto.randomUUID()}` }, source: 'TULIP_API' });

await describeEachDb('webhook leases', (ctx) => {
  const workers: TestWorker[] = [];
  const receivers: Receiver[] = [];
  after(async () => {
    for (const w of workers) await w.stop();
    for (const r of receivers) await r.close();
  });
  const slowReceiver = async (ms: number) => {
    const rx = await startReceiver((_q, res) => setTimeout(() => res.writeHead(200).end(), ms));
    receivers.push(rx);
    return rx;
  };
  const subscribe = async (url: string) => {
    const r = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url, eventType: 'customerCreate', maxInFlight: 1 });
    assert.equal(r.status, 201, r.text);
    return r.body.uuid as string;
  };
  const emit = (n: number) => ctx.tdb.db.transaction((tx) => emitEvents(tx, Array.from({ length: n }, ev)));
  const deliveries = (sub: string) => ctx.tdb.db.query<{ status: string; attempts: number; lease_ms: number | null }>(
    `SELECT d.status, d.attempt_count AS attempts, (extract(epoch FROM d.locked_until - clock_timestamp()) * 1000)::int AS lease_ms
     FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.uuid = $1`, [sub]);

  it('the lease of a claim covers every ceiling it holds: HELD_CEILINGS × (two deadlines + 5 s)', async () => {
    const w = await startWorker(ctx.tdb.db, { ...ENV, BULB_WEBHOOK_TIMEOUT_MS: '20000' });
    workers.push(w);
    const rx = await slowReceiver(1500);
    const sub = await subscribe(rx.url);
    await emit(4);
    const leased = await waitFor(async () => {
      const rows = (await deliveries(sub)).rows.filter((r) => r.lease_ms !== null && r.lease_ms > 0);
      return rows.length === 4 ? rows : undefined;
    }, 'four deliveries leased by one claim');
    // 45 s before (one attempt's budget): the fourth held delivery starts after three 1.5 s attempts here, but after
    // three 20 s timeouts behind a receiver that hangs.
    for (const r of leased) assert.ok(r.lease_ms! > HELD_CEILINGS * 45_000 - 5_000, `lease ${r.lease_ms} ms`);
    await waitFor(async () => (await deliveries(sub)).rows.every((r) => r.status === 'delivered') || undefined, 'delivered', 30_000);
    await w.stop();
  });

  it('a held delivery whose lease would run out before its attempt ends is given back, not sent: each event once, each recorded', async () => {
    // A lease of 1.5 s and attempts of 0.4 s (budget 0.7 s): of a claim of four, the third would end after its lease.
    const w = await startWorker(ctx.tdb.db, { ...ENV, BULB_WEBHOOK_TIMEOUT_MS: '5000' }, { leaseMs: 1500, attemptBudgetMs: 700, pollMs: 100 });
    workers.push(w);
    const rx = await slowReceiver(400);
    const sub = await subscribe(rx.url);
    await emit(8);
    await waitFor(async () => (await deliveries(sub)).rows.every((r) => r.status === 'delivered') || undefined, 'all delivered', 30_000);
    await sleep(1_000); // a second send, if any, would arrive meanwhile
    const ids = rx.received.map((r) => r.body.uuid);
    assert.equal(ids.length, 8, `requests: ${ids.length} for 8 events`);
    assert.equal(new Set(ids).size, 8);
    assert.deepEqual((await deliveries(sub)).rows.map((r) => r.attempts), Array(8).fill(1), 'each delivery recorded with its one attempt');
    await w.stop();
  });
}, ENV);
