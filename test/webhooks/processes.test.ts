// Several processes on one PostgreSQL: a server SIGKILLed mid-flood loses no event (its claims expire
// and are retried after restart); two workers share the queue with no double delivery; SIGTERM drains.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { freshDb, postgresAvailable, type TestDb } from '../helpers/db.ts';
import { Client, ADMIN_KEY } from '../helpers/server.ts';
import { emitEvents, type NewEvent } from '../../src/events/emit.ts';
import { insertSubscription } from '../../src/webhooks/store.ts';
import { newSigningSecret } from '../../src/webhooks/signing.ts';
import { startReceiver, status, waitFor, sleep, type Receiver } from './receiver.ts';
import { spawnBulb, type Child } from './child.ts';

const hasPg = await postgresAvailable();
if (!hasPg) console.log('# SKIP multi-process webhook tests: they need PostgreSQL');

// A customer always has an externalId (the event catalog's Customer bodies say so; the receiver checks it).
const ev = (): NewEvent => ({ eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: `c-${crypto.randomUUID()}` }, source: 'TULIP_API' });

async function subscribe(tdb: TestDb, url: string) {
  return insertSubscription(tdb.db, {
    url, eventTypes: ['customerCreate'], isActive: true, authMethod: 'NONE', bearerToken: null, basicUsername: null, basicPassword: null, webhookVersion: '2022-08',
  }, newSigningSecret());
}

describe('webhook processes [pg]', { skip: !hasPg }, () => {
  let tdb: TestDb;
  let rx: Receiver;
  const children: Child[] = [];
  const spawnChild = async (env: Record<string, string>) => {
    const c = await spawnBulb({ DATABASE_URL: tdb.url!, BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '2000', ...env });
    children.push(c);
    return c;
  };
  before(async () => {
    tdb = await freshDb('pg');
  });
  after(async () => {
    await killLeftovers();
    await rx?.close();
    await tdb?.close();
  });
  /** A test that failed half-way may leave a child running: it would claim the next test's deliveries. */
  const killLeftovers = async () => {
    for (const c of children) {
      if (c.proc.exitCode === null && c.proc.signalCode === null) {
        c.proc.kill('SIGKILL');
        await c.exited;
      }
    }
  };
  const delivered = async () =>
    Number((await tdb.db.query(`SELECT count(*) FILTER (WHERE status = 'delivered') AS n FROM webhook_deliveries`)).rows[0].n);

  it('SIGKILL mid-flood, restart: every committed event is delivered', async () => {
    // Each answer takes 1 s, so attempts are always in flight when the server dies.
    rx = await startReceiver((_q, res) => setTimeout(() => res.writeHead(200).end(), 1000));
    const sub = await subscribe(tdb, rx.url);
    let child = await spawnChild({ BULB_ROLE: 'all' });
    let api = new Client(child.url!, ADMIN_KEY);
    let killed = false;
    let leftClaims = 0;
    let next = 0;
    let ready: Promise<void> = Promise.resolve();
    const flood = async () => {
      // At least 160 creates, and on until the kill happened (a fast machine finishes 160 before 30 deliveries
      // have even started); bounded either way.
      while ((next < 160 || !killed) && next < 5000) {
        await ready;
        const i = next++;
        const r = await api.post('/crm/customers', { externalId: `crash-${i}` }).catch(() => undefined);
        if (!r) next = Math.min(next, i); // the server died under this request: it may or may not have committed
        else if (r.status === 429) {
          // Over the token's rate limit nothing was written: wait and write it again (429s answered at once
          // would otherwise use up the 5000 before the lane's slow start has sent 30 attempts of 1 s each).
          next = Math.min(next, i);
          await new Promise((res) => setTimeout(res, 200));
        }
        if (!killed && rx.received.length >= 30) {
          killed = true;
          ready = (async () => {
            child.proc.kill('SIGKILL');
            await child.exited;
            rx.behave((_q, res) => setTimeout(() => res.writeHead(200).end(), 5));
            leftClaims = Number((await tdb.db.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending' AND lock_token IS NOT NULL`)).rows[0].n);
            child = await spawnChild({ BULB_ROLE: 'all' });
            api = new Client(child.url!, ADMIN_KEY);
          })();
        }
      }
    };
    await Promise.all([flood(), flood(), flood(), flood()]);
    await ready; // the floods may end before the kill-and-restart finished
    assert.ok(killed, 'the server was killed mid-flood');
    assert.ok(leftClaims > 0, 'the killed server held claims (attempts in flight)');
    const events = (await tdb.db.query<{ uuid: string }>(`SELECT uuid FROM events WHERE event_type = 'customerCreate'`)).rows.map((r) => r.uuid);
    assert.ok(events.length >= 150, `${events.length} committed events`);
    await waitFor(async () => (await delivered()) === events.length, 'every delivery delivered (after the 36 s leases expire)', 150_000, 200);
    const got = new Set(rx.received.filter((r) => r.body.subscription === sub.uuid).map((r) => r.body.uuid));
    for (const u of events) assert.ok(got.has(u), `event ${u} reached the receiver`);
    console.log(`# crash: ${events.length} events, ${rx.received.length} requests (${rx.received.length - got.size} redelivered after the kill)`);
    child.proc.kill('SIGTERM');
    assert.deepEqual(await child.exited, { code: 0, signal: null });
  });

  it('two worker processes share one queue without double delivery', async () => {
    await killLeftovers();
    await tdb.db.query(`UPDATE webhook_subscriptions SET is_active = false`);
    const rx2 = await startReceiver((_q, res) => setTimeout(() => res.writeHead(200).end(), 2));
    try {
      await subscribe(tdb, rx2.url);
      // A full 20 s deadline: on a loaded machine a 2 s one makes slow answers time out and be retried,
      // which is at-least-once working as designed, not the double claim this test looks for.
      const w1 = await spawnChild({ BULB_ROLE: 'worker', BULB_WEBHOOK_TIMEOUT_MS: '20000' });
      const w2 = await spawnChild({ BULB_ROLE: 'worker', BULB_WEBHOOK_TIMEOUT_MS: '20000' });
      try {
      const uuids: string[] = [];
      for (let i = 0; i < 12; i++) {
        uuids.push(...(await tdb.db.transaction((tx) => emitEvents(tx, Array.from({ length: 50 }, ev)))));
        await sleep(20);
      }
      await waitFor(() => rx2.received.length >= uuids.length, 'all 600 deliveries', 60_000, 100);
      await sleep(1000); // time for any duplicate to show up
      const counts = new Map<string, number>();
      for (const r of rx2.received) counts.set(r.body.uuid, (counts.get(r.body.uuid) ?? 0) + 1);
      assert.equal(counts.size, uuids.length);
      const dups = [...counts.values()].filter((c) => c > 1).length;
      if (dups) {
        const dupIds = [...counts].filter(([, c]) => c > 1).map(([u]) => u);
        const diag = await tdb.db.query(
          `SELECT e.uuid, count(DISTINCT d.id) AS deliveries, count(a.id) AS attempts, array_agg(a.started_at ORDER BY a.id) AS starts
           FROM events e JOIN webhook_deliveries d ON d.event_id = e.id LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
           WHERE e.uuid = ANY($1::uuid[]) GROUP BY e.uuid`, [dupIds]);
        console.log(`# duplicates: ${JSON.stringify(diag.rows)}\n# subscriptions: ${JSON.stringify((await tdb.db.query('SELECT id, url, is_active, event_type FROM webhook_subscriptions')).rows)}`);
      }
      assert.equal(dups, 0, 'no event delivered twice');
      assert.equal(rx2.received.length, uuids.length);
      const attempts = Number((await tdb.db.query(`SELECT count(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id WHERE e.uuid = ANY($1::uuid[])`, [uuids])).rows[0].n);
      assert.equal(attempts, uuids.length, 'one attempt row per delivery');
      } finally {
        for (const w of [w1, w2]) w.proc.kill('SIGTERM');
      }
      for (const w of [w1, w2]) assert.deepEqual(await w.exited, { code: 0, signal: null });
    } finally {
      await rx2.close();
    }
  });

  it('SIGTERM: stops claiming, releases attempts that do not finish, exits 0; another worker delivers them', async () => {
    await killLeftovers();
    await tdb.db.query(`UPDATE webhook_subscriptions SET is_active = false`);
    const rx3 = await startReceiver(() => {}); // never answers
    try {
      await subscribe(tdb, rx3.url);
      const w = await spawnChild({ BULB_ROLE: 'worker', BULB_WEBHOOK_TIMEOUT_MS: '20000' });
      await tdb.db.transaction((tx) => emitEvents(tx, Array.from({ length: 5 }, ev)));
      // A lane starts with one attempt in flight (slow start; the endpoint never answers), three more waiting.
      await waitFor(() => rx3.received.length >= 1, 'an attempt in flight');
      await waitFor(async () => Number((await tdb.db.query(`SELECT count(*) AS n FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.url = $1 AND d.lock_token IS NOT NULL`, [rx3.url])).rows[0].n) >= 2, 'claims held (in flight and waiting)');
      w.proc.kill('SIGTERM');
      assert.deepEqual(await w.exited, { code: 0, signal: null });
      const rows = (await tdb.db.query(`SELECT d.status, d.lock_token, d.attempt_count FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.url = $1`, [rx3.url])).rows;
      assert.equal(rows.length, 5);
      assert.ok(rows.every((r) => r.status === 'pending' && r.lock_token === null && r.attempt_count === 0), `released, not counted as attempts: ${JSON.stringify(rows)}\n${w.output()}`);
      rx3.behave(status(200));
      const w2 = await spawnChild({ BULB_ROLE: 'worker' });
      await waitFor(async () => (await tdb.db.query(`SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.url = $1 AND d.status = 'delivered'`, [rx3.url])).rows[0].n === 5, 'delivered by the next worker');
      w2.proc.kill('SIGTERM');
      assert.equal((await w2.exited).code, 0);
    } finally {
      await rx3.close();
    }
  });
});
