// The events API's since/until through time marks (migration 026, src/events/time-marks.ts): the same events as a
// plain filter on created_at, page by page, whatever the marks; a transaction that began before a mark and wrote
// its event after `since` is still listed; and a page reads what it lists, not every older event.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { costOf } from '../helpers/buffers.ts';
import { listEvents, type EventFilter } from '../../src/events/store.ts';
import { MARK_XIDS, markTime, purgeTimeMarks } from '../../src/events/time-marks.ts';
import type { Queryable } from '../../src/db/db.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const MIN = 60_000;
const TYPES = ['customerCreate', 'customerUpdate', 'orderCreate'];

/** n events in one transaction, created at `at` + i ms, types in turn. */
async function writeEvents(q: Queryable, at: number, n: number): Promise<void> {
  await q.query(
    `INSERT INTO events (event_type, resource_type, resource_uuid, source, created_at)
     SELECT ($3::text[])[1 + i % 3], 'Customer', gen_random_uuid(), 'TULIP_API', $1::timestamptz + i * interval '1 millisecond'
     FROM generate_series(0, $2 - 1) AS i`,
    [new Date(at).toISOString(), n, TYPES],
  );
}

/** A mark as markTime writes it, dated `at` (the tests write history with the dates it would have had). */
async function markAt(q: Queryable, at: number): Promise<void> {
  await q.query(`INSERT INTO event_time_marks (at, oldest_xid, mark_xid) SELECT $1, ${MARK_XIDS}`, [new Date(at).toISOString()]);
}

/** Every page of listEvents for the filter, as uuids. */
async function walk(db: Queryable, f: Omit<EventFilter, 'limit' | 'after'>, limit = 7): Promise<string[]> {
  const out: string[] = [];
  let afterPos: EventFilter['after'];
  for (let i = 0; i < 10_000; i++) {
    const rows = await listEvents(db, { ...f, limit, after: afterPos });
    out.push(...rows.slice(0, limit).map((r) => r.uuid));
    if (rows.length <= limit) return out;
    afterPos = { xid: rows[limit - 1].xid, id: String(rows[limit - 1].id) };
  }
  throw new Error('the walk did not end');
}

/** The same filter written plainly: created_at in range, (xid, id) order. */
async function plain(db: Queryable, f: Omit<EventFilter, 'limit' | 'after'>): Promise<string[]> {
  const r = await db.query<{ uuid: string }>(
    `SELECT uuid FROM events WHERE ($1::timestamptz IS NULL OR created_at >= $1) AND ($2::timestamptz IS NULL OR created_at < $2)
       AND ($3::text[] IS NULL OR event_type = ANY($3)) AND event_type NOT LIKE 'webhook%' ORDER BY xid, id`,
    [f.since ?? null, f.until ?? null, f.eventTypes ?? null],
  );
  return r.rows.map((x) => x.uuid);
}

for (const backend of await backends()) {
  describe(`events since/until through time marks (${backend})`, () => {
    let t: TestDb;
    before(async () => {
      t = await freshDb(backend);
      // 40 minutes of history: each minute a transaction of 30 events, and a mark every 5 minutes between them.
      for (let m = 0; m < 40; m++) {
        if (m % 5 === 0) await markAt(t.db, T0 + m * MIN - 1);
        await t.db.transaction((tx) => writeEvents(tx, T0 + m * MIN, 30));
      }
    });
    after(() => t.close());

    it('lists, page by page, exactly the events a plain created_at filter finds, for any since/until/types', async () => {
      const at = (m: number, s = 0) => new Date(T0 + m * MIN + s * 1000).toISOString();
      const cases: Omit<EventFilter, 'limit' | 'after'>[] = [
        { since: at(0) }, { since: at(12, 7) }, { since: at(37) }, { since: at(45) }, { since: at(-10) },
        { until: at(3) }, { until: at(21, 30) }, { until: at(60) }, { until: at(0) },
        { since: at(6), until: at(9) }, { since: at(17, 1), until: at(17, 2) }, { since: at(30), until: at(30) },
        { since: at(11), eventTypes: ['customerUpdate'] }, { since: at(2), until: at(33), eventTypes: ['orderCreate', 'customerCreate'] },
        { until: at(26), eventTypes: ['customerUpdate'] },
      ];
      for (const f of cases) {
        const want = await plain(t.db, f);
        assert.deepEqual(await walk(t.db, f), want, JSON.stringify(f));
      }
      // The walks did rest on marks: a since well after the first mark starts past the first events.
      const marks = (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM event_time_marks')).rows[0].n;
      assert.ok(marks >= 8, `${marks} marks`);
    });

    it('markTime writes now, the oldest running transaction and its own id; purgeTimeMarks keeps the recent ones', async () => {
      await markTime(t.db);
      const r = (await t.db.query<{ age: number; ordered: boolean }>(
        `SELECT extract(epoch FROM clock_timestamp() - at) AS age, oldest_xid <= mark_xid AS ordered FROM event_time_marks ORDER BY at DESC LIMIT 1`,
      )).rows[0];
      assert.ok(Number(r.age) >= 0 && Number(r.age) < 60, `${r.age} s old`);
      assert.equal(r.ordered, true);
      const before = (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM event_time_marks')).rows[0].n;
      // The history above is dated 2026-01-01: with 1 day kept, the marks from then go and today's stays.
      assert.equal(await purgeTimeMarks(t.db, 1), before - 1);
    });
  });
}

for (const backend of await backends()) {
  describe(`events since through time marks, at size (${backend})`, () => {
    it('a page for a recent since reads what it lists, not every older event', async () => {
      const t = await freshDb(backend);
      try {
        // 40 minutes, 1,000 events a minute (each minute one transaction), a mark every 5 minutes.
        for (let m = 0; m < 40; m++) {
          if (m % 5 === 0) await markAt(t.db, T0 + m * MIN - 1);
          await t.db.transaction((tx) => writeEvents(tx, T0 + m * MIN, 1000));
        }
        await t.db.exec('ANALYZE events');
        const f = { eventTypes: ['customerUpdate'], limit: 10 };
        const recent = await costOf(t.db, (q) => listEvents(q, { ...f, since: new Date(T0 + 36 * MIN).toISOString() }));
        const first = await costOf(t.db, (q) => listEvents(q, { ...f, since: new Date(T0 - MIN).toISOString() }));
        // The walk starts at the last mark a minute or more before since (35 min in): it reads that minute's 333
        // customerUpdate entries before the page (~20 buffers). Without the marks it walked the older ones first (~700).
        assert.ok(recent.buffers <= first.buffers + 50, `since 36 min in: ${recent.buffers} buffers; since the start: ${first.buffers}\n${recent.plans}`);
      } finally {
        await t.close();
      }
    });
  });
}

for (const backend of (await backends()).filter((b) => b === 'pg')) {
  describe('events since/until through time marks, with a transaction open across a mark (pg)', () => {
    it('an event written after since by a transaction that began before the mark is listed', async () => {
      const t = await freshDb(backend);
      const early = new pg.Client({ connectionString: t.url });
      await early.connect();
      try {
        await t.db.transaction((tx) => writeEvents(tx, T0, 5));
        // A transaction takes its id, and is still open when the mark is written…
        await early.query('BEGIN');
        const xid = (await early.query<{ x: string }>('SELECT pg_current_xact_id()::text AS x')).rows[0].x;
        await markAt(t.db, T0 + MIN);
        await t.db.transaction((tx) => writeEvents(tx, T0 + 3 * MIN, 5));
        // …then writes an event dated after since, and commits.
        await writeEvents({ query: async (sql, params) => ({ rows: [], rowCount: (await early.query(sql, params)).rowCount ?? 0 }), exec: async () => {} }, T0 + 4 * MIN, 1);
        await early.query('COMMIT');
        const f = { since: new Date(T0 + 2 * MIN + 30_000).toISOString() };
        const want = await plain(t.db, f);
        assert.equal(want.length, 6);
        assert.deepEqual(await walk(t.db, f, 2), want);
        // The mark held the walk's start at that transaction's id (the five written after the mark have larger ones).
        assert.equal((await t.db.query<{ x: string }>('SELECT oldest_xid::text AS x FROM event_time_marks')).rows[0].x, xid);
      } finally {
        await early.end();
        await t.close();
      }
    });

    it('an event written before until by a transaction still open when the mark after until was written is listed', async () => {
      const t = await freshDb(backend);
      const late = new pg.Client({ connectionString: t.url });
      await late.connect();
      try {
        await t.db.transaction((tx) => writeEvents(tx, T0, 3));
        // A transaction writes an event dated before until and is still open (no transaction after it has ended)
        // when the mark after until is written: its id is at least the snapshot's xmax then.
        await late.query('BEGIN');
        await late.query(`INSERT INTO events (event_type, resource_type, resource_uuid, source, created_at)
          VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'TULIP_API', $1)`, [new Date(T0 + MIN).toISOString()]);
        await markAt(t.db, T0 + 5 * MIN);
        await late.query('COMMIT');
        await t.db.transaction((tx) => writeEvents(tx, T0 + 6 * MIN, 3));
        const f = { until: new Date(T0 + 3 * MIN).toISOString() };
        const want = await plain(t.db, f);
        assert.equal(want.length, 4);
        assert.deepEqual(await walk(t.db, f, 2), want);
      } finally {
        await late.end();
        await t.close();
      }
    });
  });
}
