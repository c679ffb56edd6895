// A claim's horizon on the database's side reaches past the worker's own by CLAIM_SLACK_MS. The worker keeps each
// lane's due times on its clock, converted from the database's with an offset that can be up to about a millisecond
// early (Date.now() is whole milliseconds; the statement's clock is not); it forgets a due time once its claim's
// horizon (now + CLAIM_AHEAD_MS) reaches it. A retry due just past the database's horizon (now() + CLAIM_AHEAD_MS) was
// then neither claimed nor remembered, and waited for the next sweep or notification: 1–2 % of retries about 1 s late
// across 47 subscriptions (found by a probe, 2026-11-29).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { emitEvents, type NewEvent } from '../../src/events/emit.ts';
import { CLAIM_AHEAD_MS, CLAIM_SLACK_MS, claimLanes } from '../../src/webhooks/queue-store.ts';

await describeEachDb('the claim horizon', (ctx) => {
  it('a delivery due within CLAIM_SLACK_MS past now() + CLAIM_AHEAD_MS is claimed; one due past that is not', async () => {
    const s = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url: 'http://127.0.0.1:9/x', eventType: 'customerCreate' });
    assert.equal(s.status, 201, s.text);
    const id = (await ctx.tdb.db.query<{ id: string }>(`SELECT id FROM webhook_subscriptions WHERE uuid = $1`, [s.body.uuid])).rows[0].id;
    // In one transaction, so the claim's now() is the one the due times were set from.
    const claimed = await ctx.tdb.db.transaction(async (tx) => {
      const ev = (x: string): NewEvent => ({ eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: x }, source: 'TULIP_API' });
      await emitEvents(tx, [ev('inside'), ev('beyond')]);
      await tx.query(
        `UPDATE webhook_deliveries d SET next_attempt_at = now() + (CASE e.resource_external_id WHEN 'inside' THEN $2::int - 1 ELSE $2::int + 20 END) * interval '1 millisecond'
         FROM events e WHERE e.id = d.event_id AND d.subscription_id = $1`,
        [id, CLAIM_AHEAD_MS + CLAIM_SLACK_MS],
      );
      const r = await claimLanes(tx, [{ subscriptionId: id, room: 16, held: 0 }], 60_000, crypto.randomUUID());
      return r.claimed.map((c) => c.resource_external_id);
    });
    assert.deepEqual(claimed, ['inside']);
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
