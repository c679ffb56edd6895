// Events API bench (issue 13): GET /events page of 50 (from a cursor in the middle, with an eventType filter, and
// since a day ago with and without time marks) over 1,000,000 events on PostgreSQL, against bench/events-floor.ts (Fastify + pg, one
// plain id-ordered SELECT, no auth), measured in alternating slices. `npm run bench -- --only events`.
import { createPgDatabase, load, log, pgAvailable, ratioGoal, round, spawnNode, startBulb, withPg, type Child, type Row } from './lib.ts';
import { MARK_XIDS } from '../src/events/time-marks.ts';

/**
 * n events over the last 30 days, oldest first, in transactions of 100 (each its own xid, as writes come), each
 * followed by a time mark (at 1,000,000 events every ~4 minutes of history; a running Bulb marks every minute).
 */
async function seed(url: string, n: number) {
  return withPg(url, async (c) => {
    await c.query(`CREATE PROCEDURE bench_seed_events(n int) LANGUAGE plpgsql AS $$
      DECLARE step interval := interval '30 days' / n; t0 timestamptz := clock_timestamp() - interval '30 days';
      BEGIN
        FOR b IN 0 .. (n - 1) / 100 LOOP
          INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
          SELECT CASE WHEN g % 4 = 0 THEN 'customerUpdate' ELSE 'customerCreate' END, 'Customer', gen_random_uuid(), 'ev-' || g, 'TULIP_API', t0 + g * step
            FROM generate_series(b * 100, least(n, b * 100 + 100) - 1) g;
          COMMIT;
          INSERT INTO event_time_marks (at, oldest_xid, mark_xid) SELECT t0 + (b * 100 + 100) * step, ${MARK_XIDS};
          COMMIT;
        END LOOP;
      END $$`);
    await c.query('CALL bench_seed_events($1)', [n]);
    await c.query('DROP PROCEDURE bench_seed_events');
    await c.query('VACUUM ANALYZE events');
  });
}

export async function runEventsBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed for the events bench');
  const n = 1_000_000;
  const seconds = opts.quick ? 3 : 8;
  const cmd = `npm run bench -- --only events${opts.quick ? ' --quick' : ''}`;
  const db = await createPgDatabase('events');
  let bulb: Child | undefined;
  let floor: Child | undefined;
  try {
    bulb = await startBulb({ databaseUrl: db.url, role: 'api' });
    floor = await spawnNode('bench/events-floor.ts', [], { DATABASE_URL: db.url }, /events-floor listening on (\d+)/);
    log(`events: seeding ${n} events`);
    await seed(db.url, n);
    // A cursor in the middle of the table (the cursor format is Bulb's, built here from the row).
    const midRow = await withPg(db.url, async (c) => (await c.query(`SELECT id, xid::text FROM events ORDER BY xid, id OFFSET $1 LIMIT 1`, [n / 2])).rows[0]);
    const cursor = Buffer.from(`e1:${midRow.xid}:${midRow.id}`).toString('base64url');
    const since = new Date(Date.now() - 86_400_000).toISOString();
    const floorNote = 'floor: bench/events-floor.ts (Fastify + pg, one SELECT … WHERE id > $1 ORDER BY id LIMIT 51, no auth, no horizon); best of 2 alternating slices';
    const sinceNote = 'floor: bench/events-floor.ts (Fastify + pg, one SELECT … WHERE created_at >= $1 ORDER BY created_at, id LIMIT 51 on the created_at index, no auth, no horizon); events over 30 days in transactions of 100, each followed by a time mark (migration 026); best of 2 alternating slices';
    const cases = [
      { name: 'page of 50 from a cursor', bulbPath: `/api/2026-11/events?limit=50&cursor=${cursor}`, floorPath: `/events?after=${midRow.id}`, note: floorNote },
      { name: 'page of 50, eventType=customerUpdate, from a cursor', bulbPath: `/api/2026-11/events?limit=50&eventType=customerUpdate&cursor=${cursor}`, floorPath: `/events?after=${midRow.id}`, note: floorNote },
      { name: 'first page of 50 since 1 day ago', bulbPath: `/api/2026-11/events?limit=50&since=${since}`, floorPath: `/events?since=${since}`, note: sinceNote },
      { name: 'first page of 50, eventType=customerUpdate, since 1 day ago', bulbPath: `/api/2026-11/events?limit=50&eventType=customerUpdate&since=${since}`, floorPath: `/events?since=${since}`, note: sinceNote },
      {
        name: 'first page of 50, eventType=customerUpdate, since 1 day ago, without time marks (as before migration 026)',
        bulbPath: `/api/2026-11/events?limit=50&eventType=customerUpdate&since=${since}`, floorPath: `/events?since=${since}`,
        note: `${sinceNote}; here the marks were deleted first, so the walk starts at the type's oldest event`,
        before: () => withPg(db.url, (c) => c.query('DELETE FROM event_time_marks')),
      },
    ];
    const rows: Row[] = [];
    for (const c of cases) {
      await c.before?.();
      const b: number[] = [];
      const f: number[] = [];
      for (let i = 0; i < 2; i++) {
        const rb = await load({ url: bulb.url, path: c.bulbPath, seconds, connections: 10 });
        const rf = await load({ url: floor.url, path: c.floorPath, seconds, connections: 10 });
        if (rb.non2xx || rf.non2xx) throw new Error(`non-2xx answers: bulb ${rb.non2xx}, floor ${rf.non2xx}`);
        b.push(rb.p50, rb.rps);
        f.push(rf.p50, rf.rps);
      }
      const bp50 = Math.min(b[0], b[2]);
      const fp50 = Math.min(f[0], f[2]);
      const brps = Math.max(b[1], b[3]);
      const frps = Math.max(f[1], f[3]);
      log(`events ${c.name}: bulb p50 ${bp50} ms ${Math.round(brps)}/s, floor p50 ${fp50} ms ${Math.round(frps)}/s`);
      rows.push({
        what: `GET /events ${c.name} (${n / 1000}k events), requests/s at 10 connections`, value: Math.round(brps), unit: 'req/s',
        baseline: Math.round(frps), ratio: round(brps / frps), goal: `for scale (p50 ${bp50} ms vs ${fp50} ms); ${ratioGoal(brps / frps, 0.5)}`, command: cmd,
        note: c.note,
      });
    }
    return rows;
  } finally {
    await bulb?.stop();
    await floor?.stop();
    await db.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runEventsBench({ quick: process.argv.includes('--quick') });
  for (const r of rows) console.log(`${r.what}: ${r.value} ${r.unit} (baseline ${r.baseline}, ratio ${r.ratio}) ${r.goal}`);
  process.exit(0);
}
