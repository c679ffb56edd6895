// Partitions spanning several days (BULB_PARTITION_DAYS, docs/partitioning.md): the job makes aligned ranges of that
// many days (cut at the legacy partition's cutover and at partitions made under another span, never overlapping),
// moves a DEFAULT row into its range, a row lands in the range holding its day, and retention drops a range once
// all of it is past the window. Fewer partitions than days: what each statement opens (the drain's cost).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { backends, freshDb, type TestDb } from '../helpers/db.ts';
import { DAYS_AHEAD, EVENTS, PARTITIONED } from '../../src/partitions/tables.ts';
import { addDays, partitions, type Partition } from '../../src/partitions/store.ts';
import { ensurePartitions, runRetention } from '../../src/partitions/maintain.ts';
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

      // Then 7 days a partition, the job run 14 days on: weeks from where the days end, and the one holding the row.
      await ensurePartitions(tdb.db, addDays(cutover, 14), [], 7);
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
  });
}
