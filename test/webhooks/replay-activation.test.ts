// "Re-activate first, then replay from when it stopped" (docs/replay.md) covers the events of a write that began
// before the re-activation and commits after it. Such a write (an import's chunk, seconds long) fans its events out as
// of its start, without the subscription; a replay asked right after the re-activation's answer ended at the newest
// event committed then, before them: they were neither live nor replayed (found by a probe: 5,000 of an import's 20,000
// events never sent). The re-activation now answers once the writes that began before it are over. PostgreSQL only:
// PGlite runs one transaction at a time, so no write can be under way across a re-activation.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { describePg } from '../helpers/suite.ts';
import { waitFor } from './receiver.ts';
import { emitEvents } from '../../src/events/emit.ts';
import { ReplayWorker } from '../../src/webhooks/replay-worker.ts';
import { writesBeforeNowEnded } from '../../src/webhooks/store.ts';
import { PG_URL } from '../helpers/db.ts';
import pg from 'pg';

await describePg('re-activation, then replay', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');

  it('a write under way across the re-activation is over when it answers: the replay that follows has its events', async () => {
    const sub = await api().post('/integrations/webhooks/subscriptions', { url: 'http://127.0.0.1:9/off', eventTypes: ['customerCreate'], isActive: false });
    assert.equal(sub.status, 201, sub.text);
    const since = new Date(Date.now() - 60_000).toISOString();
    const active = async () => (await ctx.tdb.db.query(`SELECT is_active FROM webhook_subscriptions WHERE uuid = $1`, [sub.body.uuid])).rows[0].is_active;
    let committed = false;
    // The long write: its snapshot and transaction id taken before the re-activation, its event written after it.
    const write = ctx.tdb.db.transaction(async (tx) => {
      await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
      await tx.query('SELECT pg_current_xact_id()');
      await waitFor(async () => (await active()) || null, 'the re-activation committed');
      const [uuid] = await emitEvents(tx, [{ eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'straggler' }, source: 'TULIP_API' }]);
      await sleep(500);
      committed = true;
      return uuid;
    });
    const on = await api().patch(`/integrations/webhooks/subscriptions/${sub.body.uuid}`, { isActive: true });
    assert.equal(on.status, 200, on.text);
    assert.ok(committed, 'the re-activation answered once the write that began before it was over');
    const replay = await api().post(`/integrations/webhooks/subscriptions/${sub.body.uuid}/replay`, { since });
    assert.equal(replay.status, 202, replay.text);
    const eventUuid = await write;
    const live = await ctx.tdb.db.query(
      `SELECT 1 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.uuid = $1`, [eventUuid]);
    assert.equal(live.rows.length, 0, 'the write fanned out as of its start: no live delivery');
    const replays = new ReplayWorker(ctx.tdb.db, { chunkEvents: 100 });
    await replays.start();
    try {
      await waitFor(async () => (await api().get(`/integrations/webhooks/replays/${replay.body.uuid}`)).body.status === 'completed' || null, 'the replay completed');
    } finally {
      await replays.stop();
    }
    const queued = await ctx.tdb.db.query(
      `SELECT 1 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_subscriptions s ON s.id = d.subscription_id
       WHERE e.uuid = $1 AND s.uuid = $2`, [eventUuid, sub.body.uuid]);
    assert.equal(queued.rows.length, 1, 'the replay queued the event the write made');
  });

  it('it waits for this database\'s writes only: one in another database does not hold it', async () => {
    // A transaction holding an id in another database of the server held every re-activation for the whole wait (found by
    // a probe): the server-wide snapshot was read. One in this database is waited for, up to the bound.
    const other = new pg.Client({ connectionString: PG_URL.replace(/\/[^/?]*(\?|$)/, '/postgres$1') });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      assert.equal(await writesBeforeNowEnded(ctx.tdb.db, 1_000), true);
      await other.query('ROLLBACK');
      const same = await ctx.tdb.db.transaction(async (tx) => {
        await tx.query('SELECT pg_current_xact_id()');
        return writesBeforeNowEnded(ctx.tdb.db, 300);
      });
      assert.equal(same, false, 'a write of this database under way is waited for, up to the bound');
    } finally {
      await other.end();
    }
  });
}, { env: { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' } });
