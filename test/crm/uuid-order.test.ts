// New rows of the tables that grow get time-ordered uuids (migration 057, version 7): their unique uuid indexes
// take each insert at their right edge instead of a random leaf (docs/scaling.md "Time-ordered uuids").
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('time-ordered uuids', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');

  it('gives a new customer, its event and its delivery a version-7 uuid whose first 48 bits are the time in ms', async () => {
    const uuids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const r = await api().post('/crm/customers', { externalId: `u7-${i}` });
      assert.equal(r.status, 201, r.text);
      const u: string = r.body.uuid;
      assert.equal(u[14], '7', u);
      assert.match(u[19], /[89ab]/, u);
      const ms = parseInt(u.replaceAll('-', '').slice(0, 12), 16);
      assert.ok(ms >= t0 - 1000 && ms <= Date.now() + 1000, `${u}: ${new Date(ms).toISOString()}`);
      uuids.push(u);
      await new Promise((res) => setTimeout(res, 3));
    }
    assert.deepEqual([...uuids].sort(), uuids, 'in the order they were made');
    const db = ctx.tdb.db;
    const ev = await db.query<{ uuid: string }>(`SELECT uuid::text FROM events WHERE resource_external_id = 'u7-0'`);
    assert.ok(ev.rows.length > 0 && ev.rows.every((r) => r.uuid[14] === '7'), JSON.stringify(ev.rows));
    const sub = await db.query<{ id: string }>(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`);
    const d = await db.query<{ uuid: string }>(`INSERT INTO webhook_deliveries (event_id, subscription_id) SELECT id, $1 FROM events LIMIT 1 RETURNING uuid::text`, [sub.rows[0].id]);
    assert.equal(d.rows[0].uuid[14], '7');
  });
});
