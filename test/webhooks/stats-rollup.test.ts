// GET …/webhooks/stats reads the hourly rollup (webhook_attempt_hours, migration 078; src/webhooks/stats-rollup.ts)
// for the hours it holds and counts the attempts of the others: the answer is the live count's, whatever the job's
// progress (none, some hours, all; a late row; a deleted subscription); what it reads does not grow with the attempts
// of the hours rolled up; passes are idempotent, and one skips while another holds the rollup. Both engines.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { costOf } from '../helpers/buffers.ts';
import type { Db } from '../../src/db/db.ts';
import { loadConfig } from '../../src/config.ts';
import { backgroundJobs } from '../../src/scheduler.ts';
import { stats } from '../../src/webhooks/service.ts';
import { rollUpStats, KEEP_HOURS, SETTLE_MS } from '../../src/webhooks/stats-rollup.ts';
import { waitFor } from './receiver.ts';

const HOUR = 3_600_000;

/** `n` attempts started evenly from `fromH` hours ago to `toH` hours ago (in time order), round-robin over `subs`. */
async function seed(db: Db, subs: string[], n: number, fromH: number, toH: number): Promise<void> {
  await db.query(
    `INSERT INTO webhook_attempts (delivery_id, delivery_created_at, subscription_id, attempt_number, started_at, duration_ms, status_code, outcome, url, request_headers, request_body)
     SELECT g, clock_timestamp(), ($1::bigint[])[g % array_length($1::bigint[], 1) + 1], 1,
       clock_timestamp() - $3::float8 * interval '1 hour' + g * (($3::float8 - $4::float8) / $2::int) * interval '1 hour', 10, 200,
       CASE WHEN g % 3 = 0 THEN 'failure' ELSE 'success' END, 'https://hooks.example/a', '{}', '{}'
     FROM generate_series(0, $2::int - 1) g ORDER BY g`,
    [subs, n, fromH, toH],
  );
}

/** The answer counted from the attempts alone (the rollup set aside for this call). */
async function liveAnswer(db: Db, hours: number) {
  const saved = (await db.query(`SELECT rolled_from, rolled_until FROM webhook_attempt_hours_rolled`)).rows[0];
  await db.query(`UPDATE webhook_attempt_hours_rolled SET rolled_from = NULL, rolled_until = NULL`);
  try {
    return await stats(db, hours);
  } finally {
    await db.query(`UPDATE webhook_attempt_hours_rolled SET rolled_from = $1, rolled_until = $2`, [saved.rolled_from, saved.rolled_until]);
  }
}

/** The answer with the rollup equals the live one (asked again if an hour turned between the two). */
async function assertSameAsLive(db: Db, hours: number, what: string): Promise<void> {
  for (;;) {
    const got = await stats(db, hours);
    const want = await liveAnswer(db, hours);
    if (got.since !== want.since) continue;
    assert.deepEqual(got, want, what);
    assert.ok(want.overall.some((b) => b.attempts > 0), `${what}: the window has attempts`);
    return;
  }
}

const rollup = async (db: Db) => (await db.query<{ hour: Date; subscription_id: string; attempts: number; successes: number }>(
  `SELECT hour, subscription_id, attempts, successes FROM webhook_attempt_hours ORDER BY 1, 2`)).rows;

/** The rollup emptied, as before any pass. */
async function fromScratch(db: Db): Promise<void> {
  await db.query(`UPDATE webhook_attempt_hours_rolled SET rolled_from = NULL, rolled_until = NULL`);
  await db.query(`DELETE FROM webhook_attempt_hours`);
}

const rolledUntil = async (db: Db) => {
  const u = (await db.query<{ u: Date | string | null }>(`SELECT rolled_until AS u FROM webhook_attempt_hours_rolled`)).rows[0].u;
  return u === null ? null : new Date(u);
};

for (const backend of await backends()) {
  describe(`webhook stats rollup [${backend}]`, () => {
    let tdb: TestDb;
    let subs: string[] = [];
    let deleted = '';
    before(async () => {
      tdb = await freshDb(backend);
      const db = tdb.db;
      subs = (await db.query<{ id: string }>(
        `INSERT INTO webhook_subscriptions (url, event_types, signing_secret)
         SELECT 'https://hooks.example/' || g, ARRAY['customerCreate'], 'not-a-secret' FROM generate_series(1, 4) g RETURNING id`,
      )).rows.map((r) => r.id);
      deleted = subs[3];
      // A week of attempts, the current hour included; one subscription deleted (its attempts stay, unlisted).
      await seed(db, subs, 6000, 170, 0);
      await db.query(`UPDATE webhook_subscriptions SET deleted_at = now() WHERE id = $1`, [deleted]);
    });
    after(() => tdb?.close());

    it('the answer is the live count\'s before any pass, partway and after the job (168 h and 24 h)', async () => {
      const db = tdb.db;
      await assertSameAsLive(db, 168, 'no pass yet');
      const live = await liveAnswer(db, 168);
      assert.equal(live.subscriptions.length, 3, 'the deleted subscription is not listed');
      assert.ok(!live.subscriptions.some((s) => s.subscriptionUuid === deleted));
      // Partway: a pass as if it were 60 hours ago rolls up to then; the 60 hours since are counted.
      const r = await rollUpStats(db, { now: new Date(Date.now() - 60 * HOUR) });
      assert.ok(r.hours >= KEEP_HOURS - 62, `hours counted: ${r.hours}`);
      assert.ok((await rollup(db)).length > 0);
      await assertSameAsLive(db, 168, 'rolled up to 60 h ago');
      await assertSameAsLive(db, 24, 'rolled up to 60 h ago (24 h)');
      // Then up to now (the last 3 hours before the rollup's end counted again, then the hours since).
      const r2 = await rollUpStats(db);
      assert.equal(r2.until!.getTime(), Math.floor((Date.now() - SETTLE_MS) / HOUR) * HOUR, 'up to the last hour closed for SETTLE_MS');
      assert.ok(r2.hours >= 3 + 59, `hours counted: ${r2.hours}`);
      await assertSameAsLive(db, 168, 'rolled up to now');
      await assertSameAsLive(db, 24, 'rolled up to now (24 h)');
      await assertSameAsLive(db, 1, 'rolled up to now (1 h)');
      // The rollup's rows of the deleted subscription are there, and left out as its attempts are.
      assert.ok((await rollup(db)).some((x) => String(x.subscription_id) === String(deleted)));
    });

    it('an attempt written late, for an hour rolled up, is counted when the next pass moves on (the hours before counted again)', async () => {
      const db = tdb.db;
      const until = (await rolledUntil(db))!;
      const late = new Date(until.getTime() - 2 * HOUR + 60_000); // two hours before the rollup's end
      await db.query(
        `INSERT INTO webhook_attempts (delivery_id, delivery_created_at, subscription_id, attempt_number, started_at, duration_ms, status_code, outcome, url, request_headers, request_body)
         VALUES (1, now(), $1, 1, $2, 10, 200, 'success', 'https://hooks.example/a', '{}', '{}')`, [subs[0], late.toISOString()]);
      // The rollup moves on an hour: it counts the 3 hours before its end again.
      const r = await rollUpStats(db, { now: new Date(until.getTime() + HOUR + SETTLE_MS + 5 * 60_000) });
      assert.equal(r.hours, 4);
      const row = (await rollup(db)).find((x) => new Date(x.hour).getTime() === Math.floor(late.getTime() / HOUR) * HOUR && String(x.subscription_id) === String(subs[0]));
      const counted = (await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_attempts WHERE subscription_id = $1 AND started_at >= $2 AND started_at < $3`,
        [subs[0], new Date(Math.floor(late.getTime() / HOUR) * HOUR).toISOString(), new Date(Math.floor(late.getTime() / HOUR) * HOUR + HOUR).toISOString()])).rows[0].n;
      assert.equal(row?.attempts, counted);
      await assertSameAsLive(db, 168, 'after the late attempt');
    });

    it('passes are idempotent; rolled up again from scratch the rows are the same; rows past 169 hours are deleted', async () => {
      const db = tdb.db;
      const now = new Date(Math.floor(Date.now() / HOUR) * HOUR + 30 * 60_000);
      await fromScratch(db); // the test before moved the rollup an hour ahead
      await rollUpStats(db, { now });
      const once = await rollup(db);
      const again = await rollUpStats(db, { now });
      assert.deepEqual({ hours: again.hours, deleted: again.deleted }, { hours: 0, deleted: 0 }, 'a second pass in the same hour does nothing');
      assert.deepEqual(await rollup(db), once);
      await fromScratch(db);
      await rollUpStats(db, { now });
      assert.deepEqual(await rollup(db), once);
      // Exactly the attempts' counts per hour and subscription, within the hours kept.
      const want = (await db.query(
        `SELECT date_trunc('hour', started_at) AS hour, subscription_id, count(*)::int AS attempts, (count(*) FILTER (WHERE outcome = 'success'))::int AS successes
         FROM webhook_attempts WHERE started_at >= $1 AND started_at < $2 GROUP BY 1, 2 ORDER BY 1, 2`,
        [new Date(now.getTime() - 30 * 60_000 - (KEEP_HOURS - 1) * HOUR).toISOString(), new Date(now.getTime() - 30 * 60_000).toISOString()])).rows;
      assert.deepEqual(once, want);
      assert.ok(once.length > 0);
      // A day later: the first day's rows go.
      const r = await rollUpStats(db, { now: new Date(now.getTime() + 24 * HOUR) });
      assert.ok(r.deleted > 0);
      const oldest = (await rollup(db))[0].hour;
      assert.equal(new Date(oldest).getTime(), now.getTime() - 30 * 60_000 + 24 * HOUR - (KEEP_HOURS - 1) * HOUR);
      await assertSameAsLive(db, 168, 'after a pass a day ahead');
    });

    it('a pass skips while another holds the rollup (two workers), and does the work once it is free', async (t) => {
      if (backend === 'pglite') return t.skip('one session: passes never overlap');
      const db = tdb.db;
      await fromScratch(db);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = db.transaction(async (tx) => {
        await tx.query(`SELECT 1 FROM webhook_attempt_hours_rolled FOR UPDATE`);
        locked();
        await held;
      });
      await isLocked;
      const skipped = await rollUpStats(db);
      assert.deepEqual(skipped, { hours: 0, until: null, deleted: 0 });
      assert.equal((await rollup(db)).length, 0);
      release();
      await holder;
      // Two passes at once: each hour counted by one or the other, the rows as one pass makes them.
      const [a, b] = await Promise.all([rollUpStats(db), rollUpStats(db)]);
      assert.ok(a.hours + b.hours >= KEEP_HOURS - 2, `${a.hours} + ${b.hours}`);
      const both = await rollup(db);
      await fromScratch(db);
      await rollUpStats(db);
      assert.deepEqual(both, await rollup(db));
      await assertSameAsLive(db, 168, 'after two passes at once');
    });

    it('what the stats read does not grow with the attempts of the hours rolled up', async () => {
      const db = tdb.db;
      // The attempts of a week, appended in time order as the workers write them, rolled up; the stats' buffers with
      // the rollup and counted live.
      const measure = async (old: number) => {
        await db.exec('TRUNCATE webhook_attempts');
        await seed(db, subs, old, 167, 2);
        await seed(db, subs, 300, 2, 0);
        await fromScratch(db);
        await rollUpStats(db);
        await db.exec('VACUUM ANALYZE webhook_attempts, webhook_attempt_hours, webhook_subscriptions');
        const c = await costOf(db, (q) => stats(q, 168));
        await assertSameAsLive(db, 168, `${old} attempts`);
        const saved = await rolledUntil(db);
        await db.query(`UPDATE webhook_attempt_hours_rolled SET rolled_until = NULL`);
        const live = (await costOf(db, (q) => stats(q, 168))).buffers;
        await db.query(`UPDATE webhook_attempt_hours_rolled SET rolled_until = $1`, [saved]);
        return { withRollup: c.buffers, live };
      };
      const before = await measure(20_000);
      const after = await measure(60_000);
      console.log(`# [${backend}] stats (168 h) buffers: with the rollup ${before.withRollup} → ${after.withRollup}, counted live ${before.live} → ${after.live}`);
      assert.ok(after.live - before.live > 500, 'the live count reads every attempt of the week');
      // The live part reads the BRIN block ranges (128 pages each) whose times reach the rollup's end: the last one or
      // two, however many attempts are before them.
      assert.ok(after.withRollup - before.withRollup < 128, `with the rollup: ${before.withRollup} → ${after.withRollup}`);
      assert.ok(after.withRollup < 400, `with the rollup: ${after.withRollup}`);
    });

    it('is a worker job of the scheduler, which rolls up at start and says so', async () => {
      const db = tdb.db;
      await db.query(`UPDATE webhook_attempt_hours_rolled SET rolled_from = NULL, rolled_until = NULL`);
      const said: string[] = [];
      const job = backgroundJobs(db, loadConfig({}), (m, err) => void (err === undefined && said.push(m))).find((j) => j.name === 'webhook stats rollup')!;
      assert.equal(job.runs, 'worker');
      const stop = await job.start();
      try {
        await waitFor(async () => said.some((m) => /^webhook stats: rolled up to \S+ \(\d+ hours counted\), \d+ rows past 169 hours deleted$/.test(m)) || null, `the pass logged: ${said}`);
      } finally {
        await stop();
      }
      assert.ok((await rolledUntil(db)) !== null);
    });
  });
}
