// Replaying a window of events to a subscription (issue 26 item 2): every event of the window and of the
// subscription's types reaches it exactly once, events from before the subscription existed included, while live
// deliveries (to another subscription and to the same one) are served first; cancel stops queueing (what was queued
// stays); a worker that died mid-replay is taken over without queueing an event twice; Idempotency-Key replays the
// first answer; bad input is refused naming the field, with nothing changed.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { startReceiver, waitFor, sleep, type Receiver } from './receiver.ts';
import { ReplayWorker } from '../../src/webhooks/replay-worker.ts';
import * as replayStore from '../../src/webhooks/replay-store.ts';
import { emitEvents } from '../../src/events/emit.ts';
import type { Db } from '../../src/db/db.ts';
import { CLAIM_SQL } from '../../src/webhooks/queue-store.ts';
import { insertSubscription } from '../../src/webhooks/store.ts';
import { newSigningSecret } from '../../src/webhooks/signing.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '5000' };
const SUBS = '/integrations/webhooks/subscriptions';
const REPLAYS = '/integrations/webhooks/replays';

/** Inserts n events of a type, set-based, created over the last hour (oldest first), before any subscription. */
async function insertEvents(db: Db, type: string, n: number, minutesAgo = 60): Promise<void> {
  await db.query(
    `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
     SELECT $1, 'Customer', gen_random_uuid(), 'replay-' || g, 'TULIP_API', now() - $3 * interval '1 minute' + g * interval '1 ms'
     FROM generate_series(1, $2) g`,
    [type, n, minutesAgo],
  );
}

async function startReplays(db: Db, chunkEvents: number): Promise<ReplayWorker> {
  const w = new ReplayWorker(db, { chunkEvents });
  await w.start();
  return w;
}

await describeEachDb('webhook replay', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let worker: TestWorker;
  let rxA: Receiver;
  let rxB: Receiver;
  const since = () => new Date(Date.now() - 2 * 3600_000).toISOString();

  before(async () => {
    worker = await startWorker(ctx.tdb.db, ENV);
    rxA = await startReceiver();
    rxB = await startReceiver();
  });
  after(async () => {
    await worker?.stop();
    await rxA?.close();
    await rxB?.close();
  });

  it('replays 10,000 events from before the subscription existed, each exactly once, live deliveries served first', async () => {
    const db = ctx.tdb.db;
    await insertEvents(db, 'customerCreate', 10_000);
    await insertEvents(db, 'customerNoteCreate', 300); // not a type of the subscription: never replayed
    await insertEvents(db, 'customerCreate', 50, 60 * 24 * 3); // before the window
    const a = await api().post(SUBS, { url: rxA.url, eventTypes: ['customerCreate', 'customerUpdate'] });
    const b = await api().post(SUBS, { url: rxB.url, eventTypes: ['customerUpdate'] });
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    const windowSince = new Date(Date.now() - 2 * 3600_000).toISOString();

    const r = await api().post(`${SUBS}/${a.body.uuid}/replay`, { since: windowSince });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.status, 'queued');
    assert.equal(r.body.eventsQueued, 0);
    assert.equal(r.body.finishedAt, null);
    assert.equal(r.body.since, windowSince);
    assert.deepEqual(r.body.eventTypes, ['customerCreate', 'customerUpdate']);
    const replays = await startReplays(db, 1000);
    try {
      // Live work while the replay runs: 20 events for B (another subscription) and one for A itself.
      await waitFor(() => rxA.received.length > 0, 'the first replayed delivery');
      const live = await db.transaction((tx) => emitEvents(tx, Array.from({ length: 20 }, (_, i) => ({
        eventType: 'customerUpdate' as const, resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: `live-${i}` }, source: 'TULIP_API',
      }))));
      await waitFor(() => rxB.received.length >= 20, 'the live deliveries to B', 60_000);
      const replayedWhenBDone = rxA.received.filter((x) => x.body.eventType === 'customerCreate').length;
      await waitFor(() => live.every((u) => rxA.received.some((x) => x.body.uuid === u)), 'the live deliveries to A', 60_000);
      const replayedWhenADone = rxA.received.filter((x) => x.body.eventType === 'customerCreate').length;
      console.log(`live deliveries arrived after ${replayedWhenBDone} (B) and ${replayedWhenADone} (A) of 10,000 replayed ones`);
      assert.ok(replayedWhenBDone < 10_000, 'the live deliveries to another subscription were not starved by the replay');
      assert.ok(replayedWhenADone < 10_000, "the subscription's own live deliveries went before its replayed backlog");

      await waitFor(async () => (await api().get(`${REPLAYS}/${r.body.uuid}`)).body.status === 'completed', 'the replay to complete', 120_000);
      await waitFor(() => rxA.received.filter((x) => x.body.eventType === 'customerCreate').length >= 10_000, 'every replayed delivery', 300_000, 200);
      await sleep(300); // anything duplicated would arrive now
    } finally {
      await replays.stop();
    }
    const done = await api().get(`${REPLAYS}/${r.body.uuid}`);
    assert.equal(done.body.eventsQueued, 10_000);
    assert.ok(done.body.finishedAt && done.body.startedAt);
    const expected = new Set((await db.query<{ uuid: string }>(
      `SELECT uuid FROM events WHERE event_type = 'customerCreate' AND created_at >= $1 AND resource_external_id LIKE 'replay-%'`, [windowSince],
    )).rows.map((x) => x.uuid));
    assert.equal(expected.size, 10_000);
    const got = rxA.received.filter((x) => x.body.eventType === 'customerCreate').map((x) => x.body.uuid as string);
    assert.equal(got.length, 10_000, 'no event delivered twice');
    assert.deepEqual(new Set(got), expected, 'exactly the events of the window and types');
    assert.ok(rxA.received.every((x) => x.body.subscription === a.body.uuid));
    assert.equal(rxB.received.length, 20, 'the other subscription got only its live deliveries');
    // The replay is listed for its subscription, and audited.
    const list = await api().get(`${SUBS}/${a.body.uuid}/replays`);
    assert.deepEqual(list.body.data.map((x: any) => x.uuid), [r.body.uuid]);
    const audit = await api().get('/integrations/auditLog?action=replay.started');
    assert.ok(audit.body.data.some((e: any) => e.target.id === r.body.uuid && e.details.subscriptionUuid === a.body.uuid));
  });

  it('cancel stops queueing: the chunks queued stay, no more are added', async () => {
    const db = ctx.tdb.db;
    const c = await api().post(SUBS, { url: rxA.url, eventTypes: ['customerCreate'], isActive: false }); // its deliveries wait
    const r = await api().post(`${SUBS}/${c.body.uuid}/replay`, { since: since() });
    assert.equal(r.status, 202, r.text);
    const replays = await startReplays(db, 50); // 10,000 events in the window: ~200 chunks
    try {
      await waitFor(async () => (await api().get(`${REPLAYS}/${r.body.uuid}`)).body.eventsQueued > 0, 'a first chunk');
      // Cancels at once: one cancels it, each other is a 409 saying it is cancelled (not "running": the status read
      // before the race, until 2026-11-29).
      const xs = await Promise.all(Array.from({ length: 4 }, () => api().post(`${REPLAYS}/${r.body.uuid}/cancel`)));
      assert.equal(xs.filter((y) => y.status === 200).length, 1, xs.map((y) => y.text).join('\n'));
      const x = xs.find((y) => y.status === 200)!;
      for (const lost of xs.filter((y) => y !== x)) assert.match(lost.body.errors[0].message, /is cancelled already$/, lost.text);
      assert.equal(x.body.status, 'cancelled');
      assert.ok(x.body.finishedAt);
      assert.ok(x.body.eventsQueued > 0 && x.body.eventsQueued < 10_000, `${x.body.eventsQueued} queued at the cancel`);
      await sleep(500); // a worker that kept going would add chunks now
      const g = await api().get(`${REPLAYS}/${r.body.uuid}`);
      assert.equal(g.body.status, 'cancelled');
      assert.equal(g.body.eventsQueued, x.body.eventsQueued);
      const n = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.uuid = $1`, [c.body.uuid],
      );
      assert.equal(n.rows[0].n, x.body.eventsQueued, 'the queued deliveries stay, nothing added after the cancel');
      const again = await api().post(`${REPLAYS}/${r.body.uuid}/cancel`);
      assert.equal(again.status, 409);
      assert.deepEqual(errorCodes(again), ['Conflict']);
      const audit = await api().get('/integrations/auditLog?action=replay.cancelled');
      assert.ok(audit.body.data.some((e: any) => e.target.id === r.body.uuid));
    } finally {
      await replays.stop();
    }
  });

  it('a worker that died mid-replay is taken over after its lease: no event queued twice', async () => {
    const db = ctx.tdb.db;
    const c = await api().post(SUBS, { url: rxA.url, eventTypes: ['customerCreate'], isActive: false });
    const r = await api().post(`${SUBS}/${c.body.uuid}/replay`, { since: since() });
    // A worker claims it with a short lease, commits two chunks, and dies.
    const dead = crypto.randomUUID();
    const claimed = await replayStore.claimReplay(db, dead, 1);
    assert.ok(claimed);
    for (let i = 0; i < 2; i++) {
      await db.transaction(async (tx) => {
        const row = (await replayStore.lockForChunk(tx, claimed.id))!;
        await replayStore.queueChunk(tx, row, 3000, 1);
      });
    }
    const mid = await api().get(`${REPLAYS}/${r.body.uuid}`);
    assert.equal(mid.body.status, 'running');
    assert.ok(mid.body.eventsQueued > 0);
    const replays = await startReplays(db, 4000);
    try {
      await waitFor(async () => (await api().get(`${REPLAYS}/${r.body.uuid}`)).body.status === 'completed', 'the replay to complete', 60_000);
    } finally {
      await replays.stop();
    }
    const n = await db.query<{ n: number; events: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS events FROM webhook_deliveries d
       JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.uuid = $1`, [c.body.uuid],
    );
    assert.equal(n.rows[0].n, 10_000);
    assert.equal(n.rows[0].events, 10_000);
    assert.equal((await api().get(`${REPLAYS}/${r.body.uuid}`)).body.eventsQueued, 10_000);
  });

  it('Idempotency-Key replays the first answer; the same key with another request is a conflict', async () => {
    const c = await api().post(SUBS, { url: rxA.url, eventTypes: ['customerCreate'], isActive: false });
    const body = { since: since(), eventTypes: ['customerCreate'] };
    const key = { 'idempotency-key': `replay-${crypto.randomUUID()}` };
    const first = await api().post(`${SUBS}/${c.body.uuid}/replay`, body, key);
    assert.equal(first.status, 202, first.text);
    const second = await api().post(`${SUBS}/${c.body.uuid}/replay`, body, key);
    assert.equal(second.status, 202);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.body, first.body);
    // The same request with its members written in another order (a client rebuilding it on retry): the same answer.
    const reordered = await api().post(`${SUBS}/${c.body.uuid}/replay`, { eventTypes: body.eventTypes, since: body.since }, key);
    assert.equal(reordered.status, 202, reordered.text);
    assert.equal(reordered.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(reordered.body, first.body);
    const other = await api().post(`${SUBS}/${c.body.uuid}/replay`, { ...body, since: new Date(Date.now() - 3600_000).toISOString() }, key);
    assert.equal(other.status, 409);
    const list = await api().get(`${SUBS}/${c.body.uuid}/replays`);
    assert.equal(list.body.data.length, 1, 'one replay, however often the key was sent');
    const audit = await api().get('/integrations/auditLog?action=replay.started');
    assert.equal(audit.body.data.filter((e: any) => e.target.id === first.body.uuid).length, 1, 'audited once');
    await api().post(`${REPLAYS}/${first.body.uuid}/cancel`);
  });

  it('bad input is refused naming the field, and changes nothing', async () => {
    const db = ctx.tdb.db;
    const c = await api().post(SUBS, { url: rxA.url, eventTypes: ['customerCreate', 'webhookTest'], isActive: false });
    const path = `${SUBS}/${c.body.uuid}/replay`;
    const count = async () => (await db.query<{ n: number }>(`SELECT (SELECT count(*) FROM webhook_replays) + (SELECT count(*) FROM webhook_deliveries) AS n`)).rows[0].n;
    const before = await count();

    const old = await api().post(path, { since: new Date(Date.now() - 31 * 86400_000).toISOString() });
    assert.equal(old.status, 400, old.text);
    assert.equal(old.body.errors[0].moreInfo, 'since');
    const oldest = /the oldest time available is (\S+) /.exec(old.body.errors[0].message)?.[1];
    assert.ok(oldest && Math.abs(Date.parse(oldest) - (Date.now() - 30 * 86400_000)) < 60_000, old.body.errors[0].message);

    const backwards = await api().post(path, { since: since(), until: new Date(Date.now() - 3 * 3600_000).toISOString() });
    assert.equal(backwards.status, 400);
    assert.equal(backwards.body.errors[0].moreInfo, 'until');
    // With no until the window ends now: a since in the future is the field named, not the until never sent.
    const future = await api().post(path, { since: new Date(Date.now() + 3600_000).toISOString() });
    assert.equal(future.status, 400);
    assert.equal(future.body.errors[0].moreInfo, 'since');
    assert.match(future.body.errors[0].message, /since must be in the past/);

    // A window wholly in the future: since is the field at fault (the until is taken as now).
    const aheadBoth = await api().post(path, { since: new Date(Date.now() + 60_000).toISOString(), until: new Date(Date.now() + 3600_000).toISOString() });
    assert.deepEqual([aheadBoth.status, aheadBoth.body.errors?.[0].moreInfo], [400, 'since'], aheadBoth.text);

    const unknown = await api().post(path, { since: since(), eventTypes: ['customerExplode'] });
    assert.equal(unknown.status, 400);
    assert.deepEqual(errorCodes(unknown), ['InvalidParameterError']);
    assert.match(unknown.text, /eventTypes/);

    const notListened = await api().post(path, { since: since(), eventTypes: ['customerUpdate'] });
    assert.equal(notListened.status, 400);
    assert.equal(notListened.body.errors[0].moreInfo, 'eventTypes');
    assert.match(notListened.body.errors[0].message, /does not listen to customerUpdate/);

    const hidden = await api().post(path, { since: since(), eventTypes: ['webhookTest'] });
    assert.equal(hidden.status, 400);
    assert.equal(hidden.body.errors[0].moreInfo, 'eventTypes');

    // A leap second (RFC 3339 allows :60) is read as the second before it: a 500 "Invalid time value" before.
    const leapSince = await api().post(path, { since: '2999-12-31T23:59:60Z' });
    assert.deepEqual([leapSince.status, leapSince.body.errors?.[0].moreInfo], [400, 'since'], leapSince.text);
    const leapUntil = await api().post(path, { since: since(), until: '2016-12-31T23:59:60Z' });
    assert.deepEqual([leapUntil.status, leapUntil.body.errors?.[0].moreInfo], [400, 'until'], leapUntil.text);

    const badDate = await api().post(path, { since: 'yesterday' });
    assert.equal(badDate.status, 400);
    assert.match(badDate.text, /since/);

    const missing = await api().post(`${SUBS}/${crypto.randomUUID()}/replay`, { since: since() });
    assert.equal(missing.status, 404);
    const olderVersion = await ctx.srv.api.withVersion('2025-04').post(path, { since: since() });
    assert.equal(olderVersion.status, 404, 'a 2026-11 route');
    assert.equal(await count(), before, 'nothing changed');
    assert.equal((await api().get(`${SUBS}/${c.body.uuid}/replays`)).body.data.length, 0);

    // An until in the future is taken as the moment the replay is accepted, and shown so (the replay stops there).
    const sent = Date.now();
    const ahead = await api().post(path, { since: since(), until: new Date(sent + 3600_000).toISOString() });
    assert.equal(ahead.status, 202, ahead.text);
    assert.ok(Date.parse(ahead.body.until) >= sent - 1000 && Date.parse(ahead.body.until) <= Date.now(), ahead.body.until);
    assert.equal((await api().get(`${REPLAYS}/${ahead.body.uuid}`)).body.until, ahead.body.until);
    await api().post(`${REPLAYS}/${ahead.body.uuid}/cancel`);
    // Without eventTypes: the types the subscription listens to that the events API keeps.
    const ok = await api().post(path, { since: since() });
    assert.deepEqual(ok.body.eventTypes, ['customerCreate']);
    await api().post(`${REPLAYS}/${ok.body.uuid}/cancel`);
  });
}, ENV);

// The claim of a lane with no replayed work reads that lane's range of webhook_deliveries_due, not the table: its
// `replayed` part, written ORDER BY id, got a generic plan walking the primary key over every delivery (filtering
// 100,000 rows, 50 ms per claim) once replayed deliveries (next_attempt_at null) were many: every live delivery then
// waited for it (the replay bench's live p99 of seconds). Counted in buffers, with the generic plan the named statement gets.
await describeEachDb('the claim beside many replayed deliveries', (ctx) => {
  it('a live lane\'s claim reads a few pages, not every replayed delivery of another subscription', async () => {
    const db = ctx.tdb.db;
    const sub = async (active: boolean) => (await insertSubscription(db, {
      url: 'http://127.0.0.1:9/x', eventTypes: ['customerCreate'], isActive: active, authMethod: 'NONE', bearerToken: null,
      basicUsername: null, basicPassword: null, webhookVersion: '2022-08',
    }, newSigningSecret())).id;
    const live = await sub(true);
    const replayed = await sub(false);
    await db.query(`INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
      SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'plan-' || g, 'TULIP_API' FROM generate_series(1, 50000) g`);
    await db.query(`INSERT INTO webhook_deliveries (event_id, subscription_id, next_attempt_at) SELECT id, $1, NULL FROM events WHERE resource_external_id LIKE 'plan-%'`, [replayed]);
    await db.query(`INSERT INTO webhook_deliveries (event_id, subscription_id, next_attempt_at) SELECT id, $1, now() FROM events WHERE resource_external_id LIKE 'plan-%' ORDER BY id DESC LIMIT 3`, [live]);
    await db.query('ANALYZE webhook_deliveries');
    const plan = await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
      await tx.query(`PREPARE claim_plan(bigint[], int[], int, uuid, int[], int[]) AS ${CLAIM_SQL}`);
      const r = await tx.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_plan('{${live}}', '{16}', 30000, gen_random_uuid(), '{0}', '{4}')`);
      await tx.query('DEALLOCATE claim_plan');
      return r.rows[0]['QUERY PLAN'][0];
    });
    // The claim's replayed part (its CTE), counted alone, and the whole claim: its lease UPDATE must probe the claimed
    // rows, not read the partition holding the 50,000 whole (a join to the CTEs was planned as a hash join: 1,151 buffers).
    const find = (n: any): any => (n['Subplan Name'] === 'CTE replayed' ? n : (n.Plans ?? []).map(find).find(Boolean));
    const node = find(plan.Plan);
    assert.ok(node, 'the plan has the CTE replayed');
    const buffers = node['Shared Hit Blocks'] + node['Shared Read Blocks'];
    const all = plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks'];
    console.log(`# [${ctx.backend}] claim of a live lane beside 50,000 replayed deliveries: its replayed part ${buffers} buffers (the whole claim ${all}), ${plan['Execution Time'].toFixed(1)} ms`);
    assert.ok(buffers < 100, `the claim's replayed part read ${buffers} buffers (the table's primary key walked?)`);
    assert.ok(all < 200, `the whole claim read ${all} buffers (the lease UPDATE read a partition whole?)`);
  });
});
