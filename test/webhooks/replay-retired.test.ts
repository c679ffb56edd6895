// A replay's window against the events actually kept: days retired under a shorter BULB_EVENT_RETENTION_DAYS (a
// restart with it lowered, then raised) are gone, and a window reaching into them was accepted and replayed without
// them, silently (a probe, 2026-11-29). Here the oldest attached range of events starts two days ago.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('a replay over retired days', (ctx) => {
  it('a since before the oldest kept range is refused naming the oldest time available; one inside it is accepted', async () => {
    const api = ctx.srv.api.withVersion('2026-11');
    const sub = await api.post('/integrations/webhooks/subscriptions', { url: 'https://93.184.215.14/replay', eventTypes: ['customerCreate'], isActive: false });
    assert.equal(sub.status, 201, sub.text);
    const path = `/integrations/webhooks/subscriptions/${sub.body.uuid}/replay`;
    // While the legacy partition (MINVALUE…) is attached, only the setting bounds the window.
    assert.equal((await api.post(path, { since: new Date(Date.now() - 5 * 86_400_000).toISOString() })).status, 202);

    // The older days retired: the legacy partition goes, a range from two days ago holds what is kept.
    const db = ctx.tdb.db;
    const cutover = (await db.query<{ to: string }>(
      `SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1] AS to FROM pg_class c WHERE c.relname = 'events_legacy'`)).rows[0].to;
    const from = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 - 2 * 86_400_000);
    // To the cutover (a database's is today's or later), or past today if a reused template's cutover is older.
    const to = new Date(Math.max(Date.parse(cutover), from.getTime() + 3 * 86_400_000)).toISOString();
    await db.exec(`ALTER TABLE events DETACH PARTITION events_legacy; CREATE TABLE events_kept PARTITION OF events FOR VALUES FROM ('${from.toISOString()}') TO ('${to}')`);
    const before = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_replays`)).rows[0].n;
    const old = await api.post(path, { since: new Date(from.getTime() - 86_400_000).toISOString() });
    assert.equal(old.status, 400, old.text);
    assert.equal(old.body.errors[0].moreInfo, 'since');
    assert.match(old.body.errors[0].message, new RegExp(`the oldest time available is ${from.toISOString().replace(/[.]/g, '\\.')} \\(earlier days were retired\\)`));
    assert.equal((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_replays`)).rows[0].n, before, 'nothing was stored');
    assert.equal((await api.post(path, { since: new Date(from.getTime() + 3_600_000).toISOString() })).status, 202);
  });
});
