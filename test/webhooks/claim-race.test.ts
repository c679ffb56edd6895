// A worker's claim runs beside its result writer and the subscription-change notifications: its statement can read a
// subscription as it was before a change the worker then acts on (a PATCH of the URL, a 410's disable written by the
// result writer). What such a claim gave of that subscription is given back and claimed again as the subscription now
// is (dispatcher.ts claim, `changes`). Found by the suite (2026-11-28): on PostgreSQL a second request went out after a
// 410 Gone, from a claim whose statement ran before the disable was written. Here the claim's answer is held (its
// statement has run) until the worker has heard of a change of the URL.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { hookedDb } from '../helpers/db.ts';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription } from '../helpers/server.ts';
import { heardChange, startWorker, type TestWorker } from '../helpers/worker.ts';
import { startReceiver, waitFor, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' };
const SUBS = '/integrations/webhooks/subscriptions';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The database with the next claim that takes rows answered only when `release` resolves (its statement has run). */
function gatedClaims(db: Db) {
  const gate = { armed: false, held: deferred(), release: deferred() };
  const gated = hookedDb(db, {
    answered: async (_sql, name, r) => {
      if (name === 'webhook_claim' && gate.armed && r.rows.length > 0) {
        gate.armed = false;
        gate.held.resolve();
        await gate.release.promise;
      }
    },
  });
  return { db: gated, gate };
}

await describeEachDb('a claim that read a subscription before it changed', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let worker: TestWorker;
  let rx: Receiver;
  let other: Receiver;
  let gate: ReturnType<typeof gatedClaims>['gate'];
  before(async () => {
    const gated = gatedClaims(ctx.tdb.db);
    gate = gated.gate;
    worker = await startWorker(gated.db, ENV);
    rx = await startReceiver();
    other = await startReceiver();
  });
  after(async () => {
    gate?.release.resolve();
    await worker?.stop();
    await rx?.close();
    await other?.close();
  });
  const from = (r: Receiver, uuid: string) => r.received.filter((q) => q.body?.subscription === uuid).length;

  it('a URL changed while the claim ran: the delivery goes to the new URL, never the old', async () => {
    const sub = await createSubscription(api(), { url: rx.url, eventTypes: ['webhookTest'] });
    const id = (await ctx.tdb.db.query<{ id: string }>(`SELECT id FROM webhook_subscriptions WHERE uuid = $1`, [sub.uuid])).rows[0].id;
    gate.armed = true;
    assert.equal((await api().post(`${SUBS}/${sub.uuid}/test`)).status, 202);
    await gate.held.promise; // the claim's statement read the subscription with its old URL
    // The worker hears of the change (the notification the PATCH sends) while the claim's answer is still on its way.
    const heard = heardChange(worker, id);
    const moved = await api().patch(`${SUBS}/${sub.uuid}`, { url: other.url });
    assert.equal(moved.status, 200, moved.text);
    await heard;
    gate.release.resolve();
    await waitFor(() => from(other, sub.uuid) === 1, 'the delivery at the new URL');
    assert.equal(from(rx, sub.uuid), 0, 'nothing went to the old URL');
  });
}, ENV);
