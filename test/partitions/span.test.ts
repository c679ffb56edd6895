// Partitions spanning several days (BULB_PARTITION_DAYS, docs/partitioning.md): the job makes aligned ranges of that
// many days (cut at the legacy partition's cutover and at partitions made under another span, never overlapping),
// moves a DEFAULT row into its range, a row lands in the range holding its day, and retention drops a range once
// all of it is past the window. Fewer partitions than days: what each statement opens (the drain's cost). A database's
// cutover is today's, so the test on the engines sees one alignment of the spans a day: the range logic is also
// checked without a database over 60 consecutive dates (every alignment of each span), at the end of this file.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { DAYS_AHEAD, EVENTS, PARTITIONED } from '../../src/partitions/tables.ts';
import { addDays, createPartition, dayOf, partitions, type Partition } from '../../src/partitions/store.ts';
import { ensurePartitions, rangesToCreate, runRetention } from '../../src/partitions/maintain.ts';
import { loadConfig } from '../../src/config.ts';

const DAY = 86_400_000;
const config = { eventRetentionDays: 30, webhookRetentionDays: 30 };

/** The partitions after the legacy one and before DEFAULT, in order: each begins where the previous ended. */
function contiguous(parts: Partition[]): Partition[] {
  const ranges = parts.filter((p) => p.from !== null && !p.isDefault).sort((a, b) => a.from!.getTime() - b.from!.getTime());
  const legacy = parts.find((p) => p.from === null && !p.isDefault)!;
  let end = legacy.to!.getTime();
  for (const p of ranges) {
    assert.equal(p.from!.getTime(), end, `${p.name} begins where the previous partition ends`);
    end = p.to!.getTime();
  }
  return ranges;
}

const ORIGIN = Date.UTC(2000, 0, 1);
const iso = (t: Date | number) => new Date(t).toISOString().slice(0, 10);

/** A table as migration 054 leaves it: the legacy partition up to `cutover`, and DEFAULT. */
function fresh(cutover: Date): Partition[] {
  return [{ name: 'legacy', from: null, to: cutover, isDefault: false }, { name: 'default', from: null, to: null, isDefault: true }];
}

/**
 * One pass of the job on a table held in memory (ensurePartitions without the database). Each range it makes lies
 * within one aligned span, and begins (ends) on the span's boundary or where a partition already there ends (begins).
 */
function pass(parts: Partition[], now: Date, span: number, inDefault: Date[], what: string) {
  const aligned = (t: Date) => (t.getTime() - ORIGIN) % (span * DAY) === 0;
  for (const r of rangesToCreate(parts, now, inDefault, span)) {
    const name = `[${iso(r.from)}, ${iso(r.to)}) of span ${span}`;
    assert.equal(Math.floor((r.to.getTime() - DAY - ORIGIN) / (span * DAY)), Math.floor((r.from.getTime() - ORIGIN) / (span * DAY)), `${what}: ${name} within one aligned span`);
    assert.ok(aligned(r.from) || parts.some((p) => !p.isDefault && p.to?.getTime() === r.from.getTime()), `${what}: ${name} begins on a boundary or where a partition ends`);
    assert.ok(aligned(r.to) || parts.some((p) => !p.isDefault && p.from?.getTime() === r.to.getTime()), `${what}: ${name} ends on a boundary or where a partition begins`);
    parts.push({ name: iso(r.from), ...r, isDefault: false });
  }
}

/** The ranges after the legacy one in order; their gaps (none allowed unless `gaps` is given); throws on an overlap. */
function tiling(parts: Partition[], what: string, gaps?: [number, number][]): Partition[] {
  const ranges = parts.filter((p) => p.from !== null && !p.isDefault).sort((a, b) => a.from!.getTime() - b.from!.getTime());
  let end = parts.find((p) => p.from === null && !p.isDefault)!.to!.getTime();
  for (const p of ranges) {
    assert.ok(p.to! > p.from!, `${what}: ${p.name} is empty`);
    assert.ok(p.from!.getTime() >= end, `${what}: ${p.name} [${iso(p.from!)}, ${iso(p.to!)}) overlaps the partition ending ${iso(end)}`);
    if (gaps) { if (p.from!.getTime() > end) gaps.push([end, p.from!.getTime()]); }
    else assert.equal(iso(p.from!), iso(end), `${what}: ${p.name} begins where the previous partition ends`);
    end = p.to!.getTime();
  }
  return ranges;
}

function covers(parts: Partition[], day: Date): boolean {
  return parts.some((p) => !p.isDefault && (p.from === null || p.from <= day) && p.to !== null && p.to > day);
}

for (const backend of await backends()) {
  describe(`partitions of several days [${backend}]`, () => {
    let tdb: TestDb;
    before(async () => {
      tdb = await freshDb(backend);
    });
    after(() => tdb?.close());
    const q = (sql: string, p: unknown[] = []) => tdb.db.query<any>(sql, p);

    it('are aligned ranges of BULB_PARTITION_DAYS days, cut at the partitions already there, dropped whole', async () => {
      assert.equal(loadConfig({ BULB_PARTITION_DAYS: '7' }).partitionDays, 7);
      assert.equal(loadConfig({}).partitionDays, 1);
      const cutover = (await partitions(tdb.db, EVENTS)).find((p) => p.name === 'events_legacy')!.to!;
      // Daily partitions first (the default span), for the days ahead of the cutover.
      await ensurePartitions(tdb.db, cutover);
      const daily = contiguous(await partitions(tdb.db, EVENTS));
      assert.equal(daily.length, DAYS_AHEAD + 1);
      // A row written 20 days on, before any partition covers its day, waits in DEFAULT.
      const far = addDays(cutover, 20);
      const id = (await q(
        `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
         VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'far', 'TULIP_API', $1) RETURNING id`,
        [new Date(far.getTime() + 3_600_000)],
      )).rows[0].id;

      // Then 7 days a partition, the job run daily for 14 days (every hour in production): weeks from where the days
      // end, and the one holding the row. (A single pass 14 days on would leave the days between uncovered unless
      // the week holding that day began where the days end: the job never reached them; see the test above.)
      for (let d = 1; d <= 14; d++) await ensurePartitions(tdb.db, addDays(cutover, d), [], 7);
      for (const t of PARTITIONED) {
        const ranges = contiguous(await partitions(tdb.db, t)); // no overlap, no gap up to the last one
        const weeks = ranges.filter((p) => p.to!.getTime() - p.from!.getTime() > DAY);
        assert.ok(weeks.length >= 2, `${t.table}: ${ranges.map((p) => p.name).join()}`);
        for (const w of weeks) {
          assert.ok(w.to!.getTime() - w.from!.getTime() <= 7 * DAY, w.name);
          assert.equal((w.to!.getTime() - Date.UTC(2000, 0, 1)) % (7 * DAY), 0, `${w.name} ends on a 7-day boundary`);
        }
        assert.ok(ranges.at(-1)!.to! > addDays(cutover, 21), 'the days ahead of the run are covered');
        assert.ok(ranges.length < 8 + 21 / 7 + 1, `fewer partitions than days: ${ranges.length}`);
      }
      assert.equal((await q(`SELECT count(*)::int AS n FROM events_default`)).rows[0].n, 0, 'DEFAULT emptied');
      const holder = (await q(`SELECT tableoid::regclass::text AS p FROM events WHERE id = $1`, [id])).rows[0].p;
      const range = (await partitions(tdb.db, EVENTS)).find((p) => p.name === holder)!;
      assert.ok(range.from! <= far && range.to! > far && range.to!.getTime() - range.from!.getTime() === 7 * DAY, `${holder} is the week holding the row`);

      // Retention: the week holding the row goes once its last day is 30 days past, not before.
      const before = await runRetention(tdb.db, config, addDays(range.to!, 29));
      assert.ok(!before.dropped.some((d) => d.partition === holder), 'kept while part of it is within the window');
      const after = await runRetention(tdb.db, config, addDays(range.to!, 30));
      assert.ok(after.dropped.some((d) => d.partition === holder), after.dropped.map((d) => d.partition).join());
      assert.equal((await q(`SELECT count(*)::int AS n FROM events WHERE id = $1`, [id])).rows[0].n, 0);
    });

    it('two workers of different spans at once (a rolling restart changing it): both passes finish, the ranges never overlap', async () => {
      // Keyed by the partition's name, a week's range and a day inside it were made by two passes at once and the
      // second ATTACH failed with 42P17 "would overlap", ending that pass (a probe, 2026-11-29).
      // Past every partition the test above made (it went 14 days and the days ahead on), on a 7-day boundary.
      const week = new Date(Date.UTC(2000, 0, 1) + Math.ceil((Date.now() + 200 * DAY - Date.UTC(2000, 0, 1)) / (7 * DAY)) * 7 * DAY);
      // A day inside a week made first: skipped, not an error.
      assert.notEqual(await createPartition(tdb.db, EVENTS, { from: week, to: addDays(week, 7) }), null);
      assert.equal(await createPartition(tdb.db, EVENTS, { from: addDays(week, 2), to: addDays(week, 3) }), null);
      // And racing: two passes far enough on that each has ranges to make, one daily and one weekly.
      const on = addDays(week, 40);
      await Promise.all([ensurePartitions(tdb.db, on, [], 1), ensurePartitions(tdb.db, on, [], 7)]);
      for (const t of PARTITIONED) {
        const ranges = (await partitions(tdb.db, t)).filter((p) => p.from !== null && !p.isDefault).sort((a, b) => a.from!.getTime() - b.from!.getTime());
        for (let i = 1; i < ranges.length; i++) assert.ok(ranges[i].from! >= ranges[i - 1].to!, `${t.table}: ${ranges[i - 1].name} and ${ranges[i].name} overlap`);
        assert.ok(covers(await partitions(tdb.db, t), addDays(on, DAYS_AHEAD - 1)), `${t.table}: the days ahead of the passes are covered`);
      }
    });
  });
}

// After the database tests are registered: a synchronous loop before would starve their connection attempt.
describe('the ranges of several days, on any date (no database)', () => {
  const first = Date.UTC(2026, 10, 1); // 60 cutovers from here: every alignment of every span up to 31 days
  const spans: [number, number][] = [[1, 1], [7, 7], [1, 7], [7, 1], [1, 3], [3, 7], [7, 3], [2, 5], [1, 31], [31, 7], [31, 1]];

  it('tile time from the cutover with no gap and no overlap while the job runs at least every DAYS_AHEAD + 1 days, the span changed or not', () => {
    for (let c = 0; c < 60; c++) {
      for (const [before, after] of spans) {
        for (const everyHours of [24 + 1, (DAYS_AHEAD + 1) * 24 - 1]) {
          const cutover = new Date(first + c * DAY);
          const parts = fresh(cutover);
          for (let h = -47; h < 60 * 24; h += everyHours) {
            const now = new Date(cutover.getTime() + h * 3_600_000);
            const span = h < 25 * 24 ? before : after;
            const what = `cutover ${iso(cutover)}, span ${before} then ${after}, a pass every ${everyHours} h, now ${now.toISOString()}`;
            pass(parts, now, span, [], what);
            tiling(parts, what);
            for (let i = 0; i <= DAYS_AHEAD; i++) assert.ok(covers(parts, addDays(dayOf(now), i)), `${what}: day ${i} ahead covered`);
          }
        }
      }
    }
  });

  it('after the job stopped past the days ahead: no overlap, every day DEFAULT holds rows of and the days ahead covered; the days left out are behind the restart and hold no row', () => {
    for (let c = 0; c < 60; c++) {
      for (const span of [1, 3, 7, 31]) {
        for (const stopped of [DAYS_AHEAD + 2, 14, 40]) {
          const cutover = new Date(first + c * DAY);
          const parts = fresh(cutover);
          const restart = addDays(cutover, stopped);
          const what = `cutover ${iso(cutover)}, span ${span}, restarted ${stopped} days on`;
          pass(parts, cutover, 1, [], what); // daily partitions, as the test on a database
          // Rows written meanwhile waited in DEFAULT: a day in the stretch no pass reached, and one ahead.
          const inDefault = [addDays(cutover, DAYS_AHEAD + 1 + (c % (stopped - DAYS_AHEAD - 1))), addDays(restart, 20)];
          pass(parts, restart, span, inDefault, what);
          const gaps: [number, number][] = [];
          tiling(parts, what, gaps);
          for (const d of inDefault) assert.ok(covers(parts, d), `${what}: ${iso(d)} (rows in DEFAULT) covered`);
          for (let i = 0; i <= DAYS_AHEAD; i++) assert.ok(covers(parts, addDays(restart, i)), `${what}: day ${i} ahead covered`);
          for (const [from, to] of gaps.filter(([from]) => from < restart.getTime())) {
            assert.ok(to <= restart.getTime(), `${what}: gap [${iso(from)}, ${iso(to)}) behind the restart`);
          }
          // A row written later into such a gap waits in DEFAULT; the next pass gives it a range between its neighbours
          // (the setting changed meanwhile: a span whose range would cross into the partition after the gap).
          const later = span === 31 ? 7 : 31;
          for (const [from] of gaps) {
            pass(parts, restart, later, [new Date(from)], `${what}, then span ${later}`);
            assert.ok(covers(parts, new Date(from)), `${what}: ${iso(from)} covered once a row is there`);
            tiling(parts, what, []);
          }
        }
      }
    }
  });
});
