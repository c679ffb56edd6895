// Events API (SPEC §12): list with filters and cursor (no event skipped when one commits late), get by
// uuid, bad input, versions, and retention by the workers' housekeeping.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { emitEvent, emitEvents, type NewEvent } from '../../src/events/emit.ts';
import { loadConfig, ConfigError } from '../../src/config.ts';

const KEYS = ['uuid', 'createdAt', 'eventType', 'resourceType', 'resource', 'source'];

await describeEachDb(
  'events API',
  (ctx) => {
    const api = () => ctx.srv.api.withVersion('2026-11');
    /** Walks every page with the given query; returns the events and the last non-null cursor. */
    const walk = async (query: string, limit = 3, from: string | null = null, between?: () => Promise<void>) => {
      const seen: any[] = [];
      let cursor = from;
      let last = from;
      for (let i = 0; i < 1000; i++) {
        const r = await api().get(`/events?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(r.status, 200, r.text);
        assert.ok(r.body.data.length <= limit);
        seen.push(...r.body.data);
        if (r.body.nextCursor === null) return { seen, last };
        cursor = last = r.body.nextCursor;
        await between?.();
      }
      throw new Error('the walk did not end');
    };
    const dbUuids = async (where = 'TRUE') =>
      (await ctx.tdb.db.query<{ uuid: string }>(`SELECT uuid FROM events WHERE event_type NOT LIKE 'webhook%' AND ${where} ORDER BY id`)).rows.map((r) => r.uuid);

    it('lists events in the webhook body shape without subscription, oldest first, and gets one by uuid', async () => {
      const c = await api().post('/crm/customers', { externalId: 'ev-1', firstName: 'A' });
      await api().patch('/crm/customers/ev-1', { firstName: 'B' });
      const { seen } = await walk('');
      assert.deepEqual(seen.map((e) => e.uuid), await dbUuids());
      const mine = seen.filter((e) => e.resource.uuid === c.body.uuid);
      assert.deepEqual(mine.map((e) => e.eventType), ['customerCreate', 'customerUpdate']);
      for (const e of mine) {
        assert.deepEqual(Object.keys(e), KEYS);
        assert.deepEqual(e.resource, { uuid: c.body.uuid, externalId: 'ev-1' });
        assert.equal(e.resourceType, 'Customer');
        assert.equal(e.source, 'TULIP_API');
        assert.match(e.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      }
      const one = await api().get(`/events/${mine[1].uuid}`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, mine[1]);
      // Unknown: a random (version 4) uuid, and version 7 ones whose time is past year 9999 or near its end (a 400
      // until 2026-11-29: the partition bound was written with an extended year PostgreSQL refuses).
      for (const uuid of [crypto.randomUUID(), 'ffffffff-ffff-7fff-bfff-ffffffffffff', 'e677d21f-0000-7000-8000-000000000000', 'e6000000-0000-7000-8000-000000000000']) {
        const nf = await api().get(`/events/${uuid}`);
        assert.equal(nf.status, 404, `${uuid}: ${nf.text}`);
        assert.deepEqual(errorCodes(nf), ['NotFound']);
      }
      const logs = await api().get('/integrations/webhooks/logs?delivery=ffffffff-ffff-7fff-bfff-ffffffffffff');
      assert.deepEqual([logs.status, logs.body.data], [200, []]);
      const retry = await api().post('/integrations/webhooks/deliveries/ffffffff-ffff-7fff-bfff-ffffffffffff/retry');
      assert.deepEqual(errorCodes(retry), ['NotFound']);
    });

    it('filters by eventType (one or several), resourceUuid, since and until', async () => {
      const a = await api().post('/crm/customers', { externalId: 'ev-f1' });
      const b = await api().post('/crm/customers', { externalId: 'ev-f2' });
      await api().patch('/crm/customers/ev-f1', { lastName: 'X' });
      const byRes = await walk(`&resourceUuid=${a.body.uuid}`);
      assert.deepEqual(byRes.seen.map((e) => e.eventType), ['customerCreate', 'customerUpdate']);
      const updates = await walk('&eventType=customerUpdate');
      assert.deepEqual(updates.seen.map((e) => e.uuid), await dbUuids(`event_type = 'customerUpdate'`));
      const two = await walk('&eventType=customerUpdate,customerCreate', 2);
      assert.deepEqual(two.seen.map((e) => e.uuid), await dbUuids(`event_type IN ('customerCreate', 'customerUpdate')`), 'two types merged in order');
      const both = await walk(`&eventType=customerCreate,customerUpdate&resourceUuid=${b.body.uuid}`);
      assert.deepEqual(both.seen.map((e) => e.eventType), ['customerCreate']);
      const all = (await walk('')).seen;
      const pivot = all.findIndex((e) => e.resource.uuid === b.body.uuid);
      const t = all[pivot].createdAt;
      const since = (await walk(`&since=${encodeURIComponent(t)}`)).seen.map((e) => e.uuid);
      const until = (await walk(`&until=${encodeURIComponent(t)}`)).seen.map((e) => e.uuid);
      assert.deepEqual(since, await dbUuids(`created_at >= '${t}'`));
      assert.deepEqual(until, await dbUuids(`created_at < '${t}'`));
      assert.ok(since.includes(all[pivot].uuid) && !until.includes(all[pivot].uuid), 'since is inclusive, until exclusive');
      assert.equal(since.length + until.length, all.length);
      const window = (await walk(`&since=${encodeURIComponent(t)}&until=${encodeURIComponent('2999-01-01T00:00:00Z')}`)).seen;
      assert.deepEqual(window.map((e) => e.uuid), since);
    });

    it('a cursor walk visits each event exactly once while events are added, and the last cursor resumes later', async () => {
      // A walk ends at an empty page, and a page is empty while an older transaction of the database (a background
      // job's) could still commit events before the next (docs/events.md): so the walk is resumed from its last cursor,
      // as a client polls, until it has every event (it expected one walk to see all five, and flaked when held back).
      let added = 0;
      const between = async () => {
        if (added < 5) await api().post('/crm/customers', { externalId: `ev-add-${added++}` });
      };
      const seen: any[] = [];
      let last: string | null = null;
      const resume = async (done: () => Promise<boolean>) => {
        for (let i = 0; i < 600 && !(await done()); i++) {
          if (i > 0) await new Promise((res) => setTimeout(res, 50));
          if (i > 0) await between(); // a walk held back from its first page added nothing yet
          const w = await walk('', 4, last, between);
          seen.push(...w.seen);
          last = w.last;
        }
      };
      await resume(async () => added === 5 && seen.length === (await dbUuids()).length);
      assert.equal(added, 5);
      const uuids = seen.map((e) => e.uuid);
      assert.equal(new Set(uuids).size, uuids.length, 'no event twice');
      assert.deepEqual(uuids, await dbUuids(), 'every event once, in order');
      const before = seen.length;
      await api().post('/crm/customers', { externalId: 'ev-after' });
      await resume(async () => seen.length > before);
      assert.deepEqual(seen.slice(before).map((e) => e.resource.externalId), ['ev-after'], 'resuming from the last cursor gives only the new event');
    });

    it('orders by writing transaction numerically (xid 99 before xid 100), each event once', async () => {
      // Two events as if written by old transactions 100 and then 99 (ids in the other order).
      const made = [];
      for (const xid of ['100', '99']) {
        const r = await ctx.tdb.db.query<{ uuid: string }>(
          `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, xid)
           VALUES ('customerUpdate', 'Customer', gen_random_uuid(), $1, 'TEST', $2::xid8) RETURNING uuid`,
          [`xid-${xid}`, xid],
        );
        made.push(r.rows[0].uuid);
      }
      const { seen } = await walk('', 1);
      const uuids = seen.map((e) => e.uuid);
      assert.deepEqual(uuids.slice(0, 2), [made[1], made[0]], 'xid 99 first');
      const expected = (await ctx.tdb.db.query<{ uuid: string }>(`SELECT uuid FROM events WHERE event_type NOT LIKE 'webhook%' ORDER BY xid, id`)).rows.map((r) => r.uuid);
      assert.deepEqual(uuids, expected);
    });

    it('the events of one transaction (one xid) are paged one by one under every filter, each once, in id order', async () => {
      const res = crypto.randomUUID();
      const batch: NewEvent[] = Array.from({ length: 30 }, (_, i) => ({
        eventType: i % 3 === 0 ? 'customerUpdate' : 'customerCreate', resourceType: 'Customer',
        resource: { uuid: i % 2 === 0 ? res : crypto.randomUUID(), externalId: `one-xid-${i}` }, source: 'TEST',
      }));
      await ctx.tdb.db.transaction((tx) => emitEvents(tx, batch));
      const ours = `resource_external_id LIKE 'one-xid-%'`;
      const xids = await ctx.tdb.db.query<{ n: string }>(`SELECT count(DISTINCT xid)::text AS n FROM events WHERE ${ours}`);
      assert.equal(xids.rows[0].n, '1', 'one writing transaction');
      // Their shared transaction's time (or just before it: since is inclusive).
      const pivot = (await ctx.tdb.db.query<{ t: string }>(`SELECT min(created_at) AS t FROM events WHERE ${ours}`)).rows[0].t;
      const since = new Date(pivot).toISOString();
      const cases: [string, string][] = [
        ['', 'TRUE'],
        [`&resourceUuid=${res}`, `resource_uuid = '${res}'`],
        ['&eventType=customerUpdate', `event_type = 'customerUpdate'`],
        ['&eventType=customerUpdate,customerCreate', `event_type IN ('customerUpdate', 'customerCreate')`],
        [`&eventType=customerUpdate&resourceUuid=${res}`, `event_type = 'customerUpdate' AND resource_uuid = '${res}'`],
        [`&resourceUuid=${res}&since=${encodeURIComponent(since)}`, `resource_uuid = '${res}' AND created_at >= '${since}'`],
        [`&eventType=customerCreate&until=2999-01-01T00:00:00Z`, `event_type = 'customerCreate'`],
      ];
      for (const [query, where] of cases) {
        for (const limit of [1, 4]) {
          const { seen } = await walk(query, limit);
          const uuids = seen.map((e) => e.uuid);
          assert.equal(new Set(uuids).size, uuids.length, `no event twice: ${query} limit ${limit}`);
          const expected = (await ctx.tdb.db.query<{ uuid: string }>(
            `SELECT uuid FROM events WHERE event_type NOT LIKE 'webhook%' AND ${where} ORDER BY xid, id`)).rows.map((r) => r.uuid);
          assert.deepEqual(uuids, expected, `${query} limit ${limit}`);
          assert.ok(seen.some((e) => e.resource.externalId?.startsWith('one-xid-')), `the batch is in: ${query}`);
        }
      }
    });

    it('answers 400 for bad filters and cursors, and is not in versions before 2026-11', async () => {
      for (const bad of ['eventType=nope', 'eventType=customerCreate,nope', 'eventType=webhookTest', 'eventType=webhookDeliveryFailed', 'since=yesterday', 'until=2026-13-01T00:00:00Z',
        'resourceUuid=abc', 'limit=0', 'limit=251', 'cursor=%%%', `cursor=${Buffer.from('c1:5').toString('base64url')}`,
        `cursor=${Buffer.from('e1:99999999999999999999:1').toString('base64url')}`, 'since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z', 'other=1']) {
        const r = await api().get(`/events?${bad}`);
        assert.equal(r.status, 400, bad);
        assert.deepEqual(errorCodes(r), ['InvalidParameterError'], bad);
      }
      const badUuid = await api().get('/events/not-a-uuid');
      assert.equal(badUuid.status, 400);
      const old = await ctx.srv.api.withVersion('2025-04').get('/events');
      assert.equal(old.status, 404);
      assert.deepEqual(errorCodes(old), ['EndpointNotInVersion']);
    });

    it('read scope is enough', async () => {
      const k = await ctx.srv.api.post('/integrations/apiKeys', { name: 'reader', scopes: ['read'] });
      const reader = api().withToken(k.body.key);
      const r = await reader.get('/events?limit=1');
      assert.equal(r.status, 200);
      assert.equal((await reader.get(`/events/${r.body.data[0].uuid}`)).status, 200);
    });

    if (ctx.backend === 'pg') {
      // PGlite runs one transaction at a time: nothing can commit out of order there.
      it('an event whose transaction commits late is not skipped by a cursor walk (PostgreSQL)', async () => {
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        let emitted!: () => void;
        const inTx = new Promise<void>((r) => (emitted = r));
        const held = ctx.tdb.db.transaction(async (tx) => {
          await emitEvent(tx, { eventType: 'customerUpdate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'late' }, source: 'TEST' });
          emitted();
          await gate;
        });
        await inTx;
        try {
          // Unfiltered, and by type (one scan per type, merged): the late event is an update, the others creates.
          const typed = '&eventType=customerCreate,customerUpdate';
          const before = await walk('', 5);
          const beforeTyped = await walk(typed, 5);
          // Committed after the late event took its id: listed only once the late one is visible too.
          for (let i = 0; i < 3; i++) await api().post('/crm/customers', { externalId: `ev-late-${i}` });
          assert.deepEqual((await walk('', 5, before.last)).seen, [], 'events newer than a running transaction wait for it');
          assert.deepEqual((await walk(typed, 5, beforeTyped.last)).seen, [], 'also by type');
          release();
          await held;
          for (const [query, from] of [['', before.last], [typed, beforeTyped.last]] as const) {
            const after = await walk(query, 2, from);
            assert.deepEqual(after.seen.map((e) => e.resource.externalId), ['late', 'ev-late-0', 'ev-late-1', 'ev-late-2'], query);
          }
          const everything = (await walk('', 7)).seen.map((e) => e.uuid);
          assert.deepEqual([...everything].sort(), [...(await dbUuids())].sort(), 'every committed event once');
        } finally {
          release();
          await held;
        }
      });
    }
  },
  { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' },
);

it('BULB_EVENT_RETENTION_DAYS: default 30, bad values refused', () => {
  assert.equal(loadConfig({}).eventRetentionDays, 30);
  assert.equal(loadConfig({ BULB_EVENT_RETENTION_DAYS: '90' }).eventRetentionDays, 90);
  for (const bad of ['0', '-1', 'abc', '1.5', '100000']) assert.throws(() => loadConfig({ BULB_EVENT_RETENTION_DAYS: bad }), ConfigError, bad);
});
