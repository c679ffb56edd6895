// Time partitions of events and deliveries (docs/partitioning.md): retention drops whole partitions (the catalog
// shows them gone, and no row was deleted: n_tup_del stays 0), keeps an events partition while a pending delivery
// needs one of its events, and an insert at a day with no partition yet still lands (DEFAULT partition), moved
// into its day's partition when the job creates it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { backends, freshDb, hookedDb, untilWaitingForLock, type TestDb } from '../helpers/db.ts';
import { ATTEMPTS, DELIVERIES, EVENTS } from '../../src/partitions/tables.ts';
import { addDays, createPartition, dayOf, partitionName, partitions, requeueGuard, RETIRED_PREFIX } from '../../src/partitions/store.ts';
import { ensurePartitions, maintainPartitions, runRetention } from '../../src/partitions/maintain.ts';
import { recover, retryNow } from '../../src/webhooks/service.ts';
import { claimReplay, lockForChunk, queueChunk } from '../../src/webhooks/replay-store.ts';

const config = { eventRetentionDays: 30, webhookRetentionDays: 30 };

for (const backend of await backends()) {
  describe(`time partitions [${backend}]`, () => {
    let tdb: TestDb;
    before(async () => {
      tdb = await freshDb(backend);
    });
    after(() => tdb?.close());
    const q = (sql: string, p: unknown[] = []) => tdb.db.query<any>(sql, p);
    const names = async (t = EVENTS) => (await partitions(tdb.db, t)).map((p) => p.name);
    const event = async (at: Date, name: string) =>
      (await q(
        `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
         VALUES ('customerCreate', 'Customer', gen_random_uuid(), $2, 'TULIP_API', $1) RETURNING id`,
        [at, name],
      )).rows[0].id as string;
    const delivery = async (eventId: string, sub: string, at: Date, status: string) =>
      q(`INSERT INTO webhook_deliveries (event_id, subscription_id, status, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, CASE WHEN $3 = 'pending' THEN $4::timestamptz END)`, [eventId, sub, status, at]);

    it('an insert at a day with no partition yet lands in DEFAULT; the job moves it into its day; retention drops whole days, keeping one a pending delivery needs', async () => {
      const legacy = (await partitions(tdb.db, EVENTS)).find((p) => p.name === 'events_legacy')!;
      assert.ok(legacy.to, 'the legacy partition ends at the cutover');
      const day1 = addDays(legacy.to!, 3); // after the cutover: a day with no partition yet
      const sub = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`)).rows[0].id;
      const early = await event(new Date(day1.getTime() + 3_600_000), 'early');
      assert.equal((await q(`SELECT count(*)::int AS n FROM events_default`)).rows[0].n, 1, 'the row waits in DEFAULT');

      // The job, run on day1 + 1: creates that day and the days ahead, and day1 (the DEFAULT partition held one).
      const created = await ensurePartitions(tdb.db, addDays(day1, 1));
      assert.ok(created.includes('events_p' + day1.toISOString().slice(0, 10).replaceAll('-', '')), created.join());
      assert.equal((await q(`SELECT count(*)::int AS n FROM events_default`)).rows[0].n, 0, 'DEFAULT emptied');
      assert.equal((await q(`SELECT tableoid::regclass::text AS p FROM events WHERE id = $1`, [early])).rows[0].p, `events_p${day1.toISOString().slice(0, 10).replaceAll('-', '')}`);
      assert.deepEqual(await ensurePartitions(tdb.db, addDays(day1, 1)), [], 'a second pass creates nothing');
      // Two processes starting at once: each creates what the other did not, and neither fails (one logged 42P07).
      const far = addDays(day1, 400);
      const both = await Promise.all([ensurePartitions(tdb.db, far), ensurePartitions(tdb.db, far)]);
      const made = [...both[0], ...both[1]];
      assert.equal(new Set(made).size, made.length, `nothing created twice: ${made.join()}`);
      assert.ok(made.includes(partitionName(EVENTS, dayOf(far))), made.join());
      assert.deepEqual(await ensurePartitions(tdb.db, far), [], 'and nothing left to create');

      // Day 2: an event whose delivery is pending; day 3: delivered ones.
      const day2 = addDays(day1, 1);
      const day3 = addDays(day1, 2);
      const needed = await event(new Date(day2.getTime() + 60_000), 'needed');
      await delivery(needed, sub, new Date(day2.getTime() + 60_000), 'delivered');
      for (let i = 0; i < 50; i++) await delivery(await event(new Date(day3.getTime() + i * 1000), `done-${i}`), sub, new Date(day3.getTime() + i * 1000), 'delivered');
      // A replay, days later, queued a new delivery of day 2's event: it is pending (its own partition is recent).
      const later = addDays(day1, 6);
      await delivery(needed, sub, later, 'pending');

      // 30 days after day 3 ended: days 1–3 of both tables are past retention.
      const now = addDays(day3, 31.5);
      await ensurePartitions(tdb.db, now);
      const deletesBefore = await deletes();
      const r = await runRetention(tdb.db, config, now);
      const dropped = r.dropped.map((d) => d.partition);
      for (const day of [day1, day3]) assert.ok(dropped.includes(`events_p${ymd(day)}`), `events of ${ymd(day)} dropped: ${dropped}`);
      assert.ok(['events_legacy', 'webhook_deliveries_legacy', 'webhook_attempts_legacy'].every((p) => dropped.includes(p)), 'the legacy partitions, wholly past the window, went too');
      assert.ok(dropped.includes(`webhook_deliveries_p${ymd(day3)}`));
      assert.deepEqual(r.deferred.map((d) => d.partition), [`events_p${ymd(day2)}`], 'day 2 is kept: a pending delivery needs its event');
      const left = await names();
      assert.ok(!left.includes(`events_p${ymd(day1)}`) && !left.includes('events_legacy'), 'gone from the catalog (pg_inherits)');
      assert.equal((await q(`SELECT count(*)::int AS n FROM pg_class WHERE relname = $1`, [`events_p${ymd(day1)}`])).rows[0].n, 0, 'and dropped, not only detached');
      assert.ok(left.includes(`events_p${ymd(day2)}`));
      assert.equal((await q(`SELECT count(*)::int AS n FROM events WHERE id = $1`, [needed])).rows[0].n, 1, 'the pending delivery still has its event');
      assert.equal((await q(`SELECT count(*)::int AS n FROM events WHERE id = $1`, [early])).rows[0].n, 0);
      assert.equal(await deletes(), deletesBefore, 'no row deleted: n_tup_del unchanged');

      // Once delivered, the next pass drops day 2 as well.
      await q(`UPDATE webhook_deliveries SET status = 'delivered', next_attempt_at = NULL WHERE event_id = $1`, [needed]);
      const again = await runRetention(tdb.db, config, now);
      assert.deepEqual(again.dropped.map((d) => d.partition), [`events_p${ymd(day2)}`]);
      assert.deepEqual(again.deferred, []);
    });

    it('a deliveries partition past retention goes with its pending deliveries (expired, counted)', async () => {
      const parts = await partitions(tdb.db, DELIVERIES);
      const day = parts.filter((p) => p.from !== null).at(-1)!.from!;
      const sub = (await q(`SELECT id FROM webhook_subscriptions LIMIT 1`)).rows[0].id;
      await delivery(await event(day, 'stuck'), sub, day, 'pending');
      const r = await runRetention(tdb.db, { eventRetentionDays: 60, webhookRetentionDays: 30 }, addDays(day, 31.5));
      const d = r.dropped.find((x) => x.partition === `webhook_deliveries_p${ymd(day)}`);
      assert.equal(d?.pendingExpired, 1);
      assert.ok(!r.dropped.some((x) => x.partition === `events_p${ymd(day)}`), 'its events are kept longer (BULB_EVENT_RETENTION_DAYS=60)');
      assert.equal((await q(`SELECT count(*)::int AS n FROM events WHERE resource_external_id = 'stuck'`)).rows[0].n, 1);
    });

    it('a table busy past lock_timeout is left for the next pass, not waited for', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      const day = (await partitions(tdb.db, EVENTS)).find((p) => p.from !== null && !p.isDefault)!;
      const now = addDays(day.to!, 61);
      const r = await tdb.db.transaction(async (tx) => {
        await tx.query('LOCK TABLE events IN ACCESS SHARE MODE'); // a long read of the events
        return runRetention(tdb.db, config, now);
      });
      assert.ok(r.busy.includes(day.name), JSON.stringify(r.busy));
      assert.ok(!r.dropped.some((d) => d.table === 'events'));
      assert.ok(r.busy.every((n) => n.startsWith('events_')), 'only the busy table waits');
      const again = await runRetention(tdb.db, config, now);
      assert.ok(again.dropped.some((d) => d.partition === day.name), 'the next pass drops it');
    });

    it('rows written to the DEFAULT partition while its rows are moved wait for the partition, and land in it (the ATTACH failed on every pass)', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      const base = (await partitions(tdb.db, EVENTS)).filter((p) => p.to !== null && !p.isDefault).at(-1)?.to ?? addDays(new Date(), 400);
      const day = addDays(dayOf(base), 9);
      await event(new Date(day.getTime() + 1_000), 'backlog-1');
      const writer = new pg.Client({ connectionString: tdb.url });
      await writer.connect();
      let written: Promise<unknown> | undefined;
      try {
        // Between the move and the ATTACH, another process writes an event of that day (an API answering a create).
        const hooked = hookedDb(tdb.db, {
          statement: async (sql) => {
            if (!/^ALTER TABLE events ATTACH PARTITION/.test(sql) || written) return;
            written = writer.query(
              `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
               VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'during-move', 'TULIP_API', $1)`, [new Date(day.getTime() + 2_000)]);
            written.catch(() => {});
            await new Promise((r) => setTimeout(r, 300)); // it would have landed by now, were it not held
          },
        });
        await createPartition(hooked, EVENTS, { from: day, to: addDays(day, 1) });
        await written;
      } finally {
        await writer.end();
      }
      const where = (await q(`SELECT resource_external_id AS x, tableoid::regclass::text AS p FROM events WHERE resource_external_id IN ('backlog-1', 'during-move') ORDER BY 1`)).rows;
      assert.deepEqual(where, [{ x: 'backlog-1', p: partitionName(EVENTS, day) }, { x: 'during-move', p: partitionName(EVENTS, day) }]);
    });

    it('an events partition is kept for a delivery requeued while retention decides (recover, retry, replay hold requeueGuard)', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      // A day of events of its own, after every partition there, with a failed delivery; retention runs 60 days later.
      const last = (await partitions(tdb.db, EVENTS)).filter((p) => p.to !== null && !p.isDefault).map((p) => p.to!.getTime());
      const day = addDays(dayOf(new Date(Math.max(Date.now(), ...last))), 30);
      await createPartition(tdb.db, EVENTS, { from: day, to: addDays(day, 1) });
      const sub = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`)).rows[0].id;
      const ev = await event(new Date(day.getTime() + 5_000), 'requeued-late');
      await delivery(ev, sub, addDays(day, 59), 'failed'); // a replay's, recent when retention runs
      const recoverer = new pg.Client({ connectionString: tdb.url });
      await recoverer.connect();
      let retention: Promise<Awaited<ReturnType<typeof runRetention>>> | undefined;
      try {
        // A recover: under the guard, the failed delivery queued again; retention starts meanwhile and must wait.
        await recoverer.query('BEGIN');
        await requeueGuard({ query: (sql: string, p?: unknown[]) => recoverer.query(sql, p as any[]) as any, exec: async () => {} });
        await recoverer.query(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() WHERE event_id = $1`, [ev]);
        retention = runRetention(tdb.db, { eventRetentionDays: 30, webhookRetentionDays: 30 }, addDays(day, 60));
        retention.catch(() => {});
        await untilWaitingForLock(tdb.db, 'retention never waited for the requeue', { and: `wait_event = 'advisory'` });
        await recoverer.query('COMMIT');
      } finally {
        await recoverer.query('ROLLBACK').catch(() => {});
        await recoverer.end();
      }
      const r = await retention!;
      const name = partitionName(EVENTS, day);
      assert.ok(r.deferred.some((d) => d.partition === name && d.pending === 1), JSON.stringify(r));
      assert.equal((await q(`SELECT count(*)::int AS n FROM events WHERE id = $1`, [ev])).rows[0].n, 1, 'its event is still there');
      await q(`UPDATE webhook_deliveries SET status = 'delivered', next_attempt_at = NULL WHERE event_id = $1`, [ev]);
    });

    it('an events partition is kept while an unfinished replay has yet to walk it, and the replay then queues its events', async () => {
      // A replay accepted while its window was kept, waiting (behind others) until the window's day passed retention.
      const last = (await partitions(tdb.db, EVENTS)).filter((p) => p.to !== null && !p.isDefault).map((p) => p.to!.getTime());
      const day = addDays(dayOf(new Date(Math.max(Date.now(), ...last))), 30);
      await createPartition(tdb.db, EVENTS, { from: day, to: addDays(day, 1) });
      const sub = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`)).rows[0].id;
      const evs = [await event(new Date(day.getTime() + 1_000), 'replayed-1'), await event(new Date(day.getTime() + 2_000), 'replayed-2')];
      const replay = (await q(
        `INSERT INTO webhook_replays (subscription_id, event_types, since_at, until_at, last_event_id, end_event_id)
         VALUES ($1, ARRAY['customerCreate'], $2, $3, $4::bigint - 1, $5) RETURNING id`,
        [sub, day, addDays(day, 1), evs[0], evs[1]],
      )).rows[0].id;
      const name = partitionName(EVENTS, day);
      const r = await runRetention(tdb.db, config, addDays(day, 32));
      assert.ok(r.deferred.some((d) => d.partition === name && d.replays === 1 && d.pending === 0), JSON.stringify(r));
      assert.ok(!r.dropped.some((d) => d.partition === name));

      // The replay runs: both events are queued; the next pass drops the day.
      const claimed = await claimReplay(tdb.db, crypto.randomUUID(), 60_000);
      assert.equal(claimed?.id, replay);
      const out = await tdb.db.transaction(async (tx) => queueChunk(tx, (await lockForChunk(tx, replay))!, 10_000, 60_000));
      assert.deepEqual(out, { queued: 2, done: true });
      await q(`UPDATE webhook_deliveries SET status = 'delivered', next_attempt_at = NULL WHERE event_id = ANY($1::bigint[])`, [evs]);
      const again = await runRetention(tdb.db, config, addDays(day, 32));
      assert.ok(again.dropped.some((d) => d.partition === name), JSON.stringify(again));
    });

    it('recover and retry leave a failed delivery whose event is past retention as it is (queued, it stayed pending for ever)', async () => {
      const subRow = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id, uuid`)).rows[0];
      const gone = await event(new Date(), 'gone-event');
      const kept = await event(new Date(), 'kept-event');
      for (const ev of [gone, kept]) await delivery(ev, subRow.id, new Date(), 'failed');
      const goneUuid = (await q(`SELECT uuid FROM webhook_deliveries WHERE event_id = $1`, [gone])).rows[0].uuid;
      await q(`DELETE FROM events WHERE id = $1`, [gone]); // as if its partition had been retired
      const out = await recover(tdb.db, subRow.uuid, addDays(new Date(), -1).toISOString());
      assert.deepEqual(out, { requeued: 1 }, 'only the one whose event is stored');
      const states = (await q(`SELECT event_id, status FROM webhook_deliveries WHERE event_id = ANY($1::bigint[]) ORDER BY event_id`, [[gone, kept]])).rows;
      assert.deepEqual(states.map((r: any) => r.status), ['failed', 'pending']);
      await assert.rejects(retryNow(tdb.db, goneUuid), (e: any) => e.status === 404);
      await q(`UPDATE webhook_deliveries SET status = 'delivered', next_attempt_at = NULL WHERE event_id = $1`, [kept]);
    });

    it('a pass whose partition creation fails still runs retention, then reports the failure', async () => {
      const seen: string[] = [];
      const failing = hookedDb(tdb.db, {
        statement: (sql) => {
          if (/^CREATE TABLE /.test(sql)) throw Object.assign(new Error('creation refused (test)'), { code: '23514' });
          if (/starts_with\(relname/.test(sql)) seen.push('retention');
        },
      });
      await assert.rejects(maintainPartitions(failing, { ...config, partitionDays: 1 }, () => {}, addDays(new Date(), 900)), /creation refused/);
      assert.deepEqual(seen, ['retention'], 'retention ran');
    });

    it('creating a deliveries partition takes the subscriptions\' lock before the DEFAULT partition\'s, in the order a claim does: no deadlock', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      // A claim holds webhook_subscriptions (its UPDATE of rate_tat: ROW EXCLUSIVE from its start) and then reads
      // webhook_deliveries_default. ATTACH PARTITION locked the DEFAULT partition, then wanted webhook_subscriptions
      // (SHARE ROW EXCLUSIVE, for the foreign key): a deadlock, which killed the claim or the whole maintenance pass.
      // A day after every partition there (the tests before may have retired them all).
      const base = (await partitions(tdb.db, DELIVERIES)).filter((p) => p.to !== null && !p.isDefault).at(-1)?.to ?? addDays(new Date(), 400);
      const range = { from: addDays(dayOf(base), 5), to: addDays(dayOf(base), 6) };
      let made: Promise<unknown> | undefined;
      await tdb.db.transaction(async (claim) => {
        await claim.query('LOCK TABLE webhook_subscriptions IN ROW EXCLUSIVE MODE');
        made = createPartition(tdb.db, DELIVERIES, range);
        made.catch(() => {}); // awaited below
        // Until the maintenance is waiting for a lock.
        for (let i = 0; i < 200; i++) {
          const waiting = await q(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
          if (waiting.rows[0].n > 0) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        await claim.query('SELECT 1 FROM webhook_deliveries_default LIMIT 1 FOR UPDATE'); // the claim's read of the queue
      });
      await made;
      assert.ok((await names(DELIVERIES)).includes(partitionName(DELIVERIES, range.from)), 'the partition was made once the claim ended');
    });

    it('the drop holds no lock on the parent (only the detach does), and a table a pass detached but did not drop goes on the next pass', { skip: backend === 'pg' ? false : 'PostgreSQL only: an event trigger' }, async () => {
      // An event trigger runs inside each DROP TABLE's transaction and notes whether that transaction holds a lock
      // on the parent: the API's reads and writes of the table would wait for it while the files are removed.
      await q(`CREATE TABLE drop_seen (dropped text, parent_locked boolean)`);
      await q(`CREATE FUNCTION note_drop() RETURNS event_trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO drop_seen SELECT o.object_identity, EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = pg_backend_pid()
            AND l.relation IN ('events'::regclass, 'webhook_deliveries'::regclass, 'webhook_attempts'::regclass))
          FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table';
        END $$`);
      await q(`CREATE EVENT TRIGGER note_drop ON sql_drop EXECUTE FUNCTION note_drop()`);
      try {
        await ensurePartitions(tdb.db, addDays(new Date(), 200)); // days of their own (the tests before dropped theirs)
        const day = (await partitions(tdb.db, DELIVERIES)).find((p) => p.from !== null && !p.isDefault)!;
        // A pass that stopped after its detach: the table renamed, not dropped.
        await q(`CREATE TABLE ${RETIRED_PREFIX}webhook_attempts_p19990101 (id bigint)`);
        const r = await runRetention(tdb.db, config, addDays(day.to!, 62));
        assert.ok(r.dropped.some((d) => d.partition === day.name), JSON.stringify(r.dropped));
        const seen = (await q(`SELECT dropped, parent_locked FROM drop_seen ORDER BY 1`)).rows as { dropped: string; parent_locked: boolean }[];
        assert.ok(seen.some((x) => x.dropped === `public.${RETIRED_PREFIX}${day.name}`), JSON.stringify(seen));
        assert.ok(seen.some((x) => x.dropped === `public.${RETIRED_PREFIX}webhook_attempts_p19990101`), 'the leftover of a stopped pass is dropped');
        assert.deepEqual(seen.filter((x) => x.parent_locked), [], 'no drop held a lock on a partitioned parent');
        assert.equal((await q(`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE '${RETIRED_PREFIX}%'`)).rows[0].n, 0);
      } finally {
        await q(`DROP EVENT TRIGGER note_drop`);
      }
    });

    it('a pass detaches every partition due before it drops any: a day leaves the three tables together, not a drop apart', { skip: backend === 'pg' ? false : 'PostgreSQL only: an event trigger' }, async () => {
      // An event trigger inside each DROP TABLE notes how many of the day's partitions are still attached to their
      // parent at that moment. Before, each partition was dropped right after its own detach, so the attempts' and the
      // events' partitions of the day stayed in their tables while the deliveries' files were removed.
      await ensurePartitions(tdb.db, addDays(new Date(), 400));
      const day = (await partitions(tdb.db, ATTEMPTS)).find((p) => p.from !== null && !p.isDefault)!;
      const names = [DELIVERIES, ATTEMPTS, EVENTS].map((t) => `${t.table}_p${ymd(day.from!)}`);
      for (const n of names) assert.equal((await q(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhrelid = to_regclass($1)`, [n])).rows[0].n, 1, `${n} exists`);
      await q(`CREATE TABLE drop_order (dropped text, attached int)`);
      await q(`CREATE FUNCTION note_drop_order() RETURNS event_trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO drop_order SELECT o.object_identity, (SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE c.relname = ANY(ARRAY['${names.join("','")}']))
          FROM pg_event_trigger_dropped_objects() o WHERE o.object_type = 'table';
        END $$`);
      await q(`CREATE EVENT TRIGGER note_drop_order ON sql_drop EXECUTE FUNCTION note_drop_order()`);
      try {
        const r = await runRetention(tdb.db, config, addDays(day.to!, 31));
        for (const n of names) assert.ok(r.dropped.some((d) => d.partition === n), `${n} dropped: ${JSON.stringify(r.dropped)}`);
        const seen = (await q(`SELECT dropped, attached FROM drop_order`)).rows as { dropped: string; attached: number }[];
        for (const n of names) assert.ok(seen.some((x) => x.dropped === `public.${RETIRED_PREFIX}${n}`), JSON.stringify(seen));
        assert.deepEqual(seen.filter((x) => x.attached > 0), [], 'no drop ran while a partition of the day was still attached');
      } finally {
        await q(`DROP EVENT TRIGGER note_drop_order`);
      }
    });

    // Last: these make partitions years ahead, after which the tests above would place their own days.
    it('two workers\' passes at once: each partition is retired by one, the other finds it gone, and neither fails', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      // The second pass failed with 42P01 halfway (it had listed a partition the first then detached; found by a probe).
      const last = dayOf(addDays(new Date(), 1000)); // days no other test here touches
      const sub = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`)).rows[0].id;
      for (let i = 1; i <= 6; i++) {
        const day = addDays(last, i);
        await ensurePartitions(tdb.db, day);
        await delivery(await event(new Date(day.getTime() + 60_000), `both-${i}`), sub, new Date(day.getTime() + 60_000), 'delivered');
      }
      const now = addDays(last, 45);
      await ensurePartitions(tdb.db, now);
      for (let round = 0; round < 3; round++) {
        const [a, b] = await Promise.all([runRetention(tdb.db, config, now), runRetention(tdb.db, config, now)]);
        const dropped = [...a.dropped, ...b.dropped].map((d) => d.partition);
        assert.equal(new Set(dropped).size, dropped.length, `none retired twice: ${dropped.join()}`);
        if (round === 0) for (let i = 1; i <= 6; i++) assert.ok(dropped.includes(`events_p${ymd(addDays(last, i))}`), `day ${i} retired by one of them: ${dropped.join()}`);
      }
      assert.equal((await q(`SELECT count(*)::int AS n FROM events WHERE resource_external_id LIKE 'both-%'`)).rows[0].n, 0);
      assert.equal((await q(`SELECT count(*)::int AS n FROM pg_class WHERE starts_with(relname, $1)`, [RETIRED_PREFIX])).rows[0].n, 0, 'every retired table dropped');
    });

    it('a day made ahead while a reader holds the DEFAULT partition gives up at once: what queues behind it waits 100 ms, not 2 s', { skip: backend === 'pg' ? false : 'PostgreSQL only: two sessions' }, async () => {
      // ATTACH waits for the DEFAULT partition holding webhook_subscriptions' lock: a report reading the table stalled
      // claims and subscription updates for the whole 2 s, every pass (found by a probe).
      const reader = new pg.Client({ connectionString: tdb.url });
      const writer = new pg.Client({ connectionString: tdb.url });
      await Promise.all([reader.connect(), writer.connect()]);
      try {
        const sub = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`)).rows[0].id;
        await reader.query('BEGIN');
        await reader.query('SELECT count(*) FROM webhook_deliveries_default');
        const ahead = dayOf(addDays(new Date(), 2000));
        const busy: string[] = [];
        const creating = ensurePartitions(tdb.db, ahead, busy);
        await untilWaitingForLock(writer, 'the creation never waited for the DEFAULT partition', { and: `query ILIKE '%ATTACH PARTITION%'` });
        // An update a claim makes (rate_tat), queued behind the creation's lock on webhook_subscriptions.
        await writer.query(`SET lock_timeout = '1s'`);
        await writer.query(`UPDATE webhook_subscriptions SET consecutive_failures = consecutive_failures WHERE id = $1`, [sub]);
        await creating;
        assert.ok(busy.includes(partitionName(DELIVERIES, ahead)), `left for the next pass: ${busy.join()}`);
        await reader.query('COMMIT');
        const made = await ensurePartitions(tdb.db, ahead);
        assert.ok(made.includes(partitionName(DELIVERIES, ahead)), `made on the next pass: ${made.join()}`);
      } finally {
        await reader.query('ROLLBACK').catch(() => {});
        await Promise.all([reader.end(), writer.end()]);
      }
    });

    it('a creation tells a live range from one made ahead on the database\'s clock, not the worker\'s', async () => {
      // The database's clock read as years ahead: its "today" is live (writers held while it is attached, 2 s), though the
      // process's clock puts it years ahead (made ahead: no writers held, 100 ms). It was the process's clock until 2026-11-29.
      const today = dayOf(addDays(new Date(), 4000));
      const said: string[] = [];
      const skewed = hookedDb(tdb.db, {
        statement: (sql) => void said.push(sql),
        answered: async (sql, _name, result) => {
          if (/clock_timestamp\(\) AS now/.test(sql)) (result as { rows: { now: Date }[] }).rows[0].now = new Date(today.getTime() + 3_600_000);
        },
      });
      await createPartition(skewed, EVENTS, { from: today, to: addDays(today, 1) });
      assert.ok(said.some((x) => /lock_timeout = '2s'/.test(x)), said.join('\n'));
      assert.ok(said.some((x) => /^LOCK TABLE ONLY events /.test(x)), 'the live range holds the writers');
    });

    it('a pass measures days and windows on the database\'s clock, which wrote the rows, not the worker\'s', async () => {
      // A worker whose clock ran hours fast dropped a day that many hours before its window ended (found by a probe).
      // Here the database's clock is read as years ahead: the pass makes that "today", whatever the process's clock says.
      const ahead = dayOf(addDays(new Date(), 3000));
      const skewed = hookedDb(tdb.db, {
        answered: async (sql, _name, result) => {
          if (/clock_timestamp\(\) AS now/.test(sql)) (result as { rows: { now: Date }[] }).rows[0].now = new Date(ahead.getTime() + 3_600_000);
        },
      });
      const said: string[] = [];
      const r = await maintainPartitions(skewed, config, (m) => said.push(m));
      assert.ok(r.created.includes(partitionName(EVENTS, ahead)), `the database's today made: ${r.created.join()}`);
      // The pass says what it made and dropped (it said nothing of them until 2026-11-29).
      assert.ok(said.includes(`partitions: created ${r.created.join(', ')}`), said.join('\n'));
      if (r.dropped.length) assert.ok(said.includes(`retention: dropped ${r.dropped.map((d) => d.partition).join(', ')}`), said.join('\n'));
    });

    it('the detach of a day due waits 100 ms for its table\'s lock, not 2 s: what queues behind it (every write) waits no longer', async () => {
      // A dump or a report reading the table made every write and claim wait 2 s behind the detach, every pass (a probe).
      const day = dayOf(addDays(new Date(), 4500));
      await ensurePartitions(tdb.db, day);
      const said: string[] = [];
      const watched = hookedDb(tdb.db, { statement: (sql) => void said.push(sql) });
      const r = await runRetention(watched, config, addDays(day, 31.5));
      assert.ok(r.dropped.some((d) => d.partition === partitionName(EVENTS, day)), JSON.stringify(r.dropped));
      const detaches = said.flatMap((sql, i) => (/ DETACH PARTITION /.test(sql) ? [said.slice(0, i).reverse().find((x) => /lock_timeout/.test(x))] : []));
      assert.ok(detaches.length >= 3, said.join('\n'));
      for (const set of detaches) assert.match(set ?? 'none', /lock_timeout = '100ms'/);
    });

    it('a pass that stops partway says what it did: the days detached, the pending deliveries expired; the next pass drops what it left', async () => {
      const day = dayOf(addDays(new Date(), 5000));
      await ensurePartitions(tdb.db, day);
      const sub = (await q(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`)).rows[0].id;
      await delivery(await event(new Date(day.getTime() + 60_000), 'stopped-pass'), sub, new Date(day.getTime() + 60_000), 'pending');
      // The connection lost at the attempts' detach, after the deliveries' (a restart of the database, say).
      const failing = hookedDb(tdb.db, {
        statement: (sql) => {
          if (/^ALTER TABLE webhook_attempts DETACH PARTITION /.test(sql)) throw Object.assign(new Error('connection lost (test)'), { code: '57P01' });
        },
      });
      const said: string[] = [];
      const now = addDays(day, 31.5);
      await assert.rejects(maintainPartitions(failing, config, (m) => said.push(m), now), /connection lost/);
      const deliveries = partitionName(DELIVERIES, day);
      assert.ok(said.some((m) => m.startsWith('retention: detached') && m.includes(deliveries)), said.join('\n'));
      assert.ok(said.includes(`retention: 1 pending deliveries past BULB_WEBHOOK_RETENTION_DAYS expired with ${deliveries}`), said.join('\n'));
      const next: string[] = [];
      await maintainPartitions(tdb.db, config, (m) => next.push(m), now);
      assert.ok(next.some((m) => m.includes(`${RETIRED_PREFIX}${deliveries}`) && /detached by an earlier pass/.test(m)), next.join('\n'));
      assert.equal((await q(`SELECT count(*)::int AS n FROM pg_class WHERE starts_with(relname, $1)`, [RETIRED_PREFIX])).rows[0].n, 0);
    });

    async function deletes(): Promise<number> {
      if (backend === 'pglite') return 0; // no statistics collector in PGlite's single-user mode
      await q(`SELECT pg_stat_force_next_flush()`).catch(() => {});
      const r = await q(`SELECT coalesce(sum(n_tup_del), 0)::int AS n FROM pg_stat_user_tables WHERE relname LIKE 'events%' OR relname LIKE 'webhook_deliveries%'`);
      return r.rows[0].n;
    }
  });
}

function ymd(d: Date): string {
  return d.toISOString().slice(0, 10).replaceAll('-', '');
}
