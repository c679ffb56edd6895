// The partition keys' backfill after an upgrade (docs/partitioning.md, migration 060): a database written before
// time partitioning (migration 052) with N deliveries (200,000; --quick 50,000), each with its event, and an attempt
// for every other one, is migrated, then the backfill job's batches (2,000 rows, no pause here) fill every key.
// Figures: rows filled per second, and the longest batch (what a batch holds its rows' locks for: a claim skips such
// a row, an outcome waits). Baseline: the one UPDATE of the same rows a migration would have run (timed on a copy,
// one transaction holding every row). PostgreSQL. `node --import tsx bench/partition-backfill.ts [--quick]`
import { PgDb } from '../src/db/pg.ts';
import { migrate } from '../src/db/migrate.ts';
import { BACKFILLS, backfillBatch } from '../src/partitions/backfill-store.ts';
import { createPgDatabase, log, pgAvailable, round, type Row } from './lib.ts';

const BATCH = 2000;

async function seeded(n: number): Promise<{ db: PgDb; drop: () => Promise<void> }> {
  const pgdb = await createPgDatabase('pbackfill');
  const db = new PgDb(pgdb.url, 2);
  await migrate(db, 52);
  const sub = (await db.query<{ id: string }>(
    `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://hooks.example/a', ARRAY['customerCreate'], 'not-a-secret') RETURNING id`,
  )).rows[0].id;
  await db.query(
    `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
     SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'c-' || g, 'TULIP_API', now() - interval '5 days' + g * interval '1 second'
     FROM generate_series(1, $1::int) g`,
    [n],
  );
  await db.query(`INSERT INTO webhook_deliveries (event_id, subscription_id, status, created_at) SELECT id, $1, 'delivered', created_at + interval '1 second' FROM events ORDER BY id`, [sub]);
  await db.query(
    `INSERT INTO webhook_attempts (delivery_id, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code, outcome, request_headers, request_body)
     SELECT id, subscription_id, event_id, 1, 'https://hooks.example/a', created_at + interval '1 second', 5, 200, 'success', '{}', '{}' FROM webhook_deliveries WHERE id % 2 = 0`,
  );
  await migrate(db);
  await db.exec('VACUUM ANALYZE');
  return { db, drop: async () => { await db.close(); await pgdb.drop(); } };
}

export async function runPartitionBackfillBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed');
  const n = opts.quick ? 50_000 : 200_000;
  const command = `node --import tsx bench/partition-backfill.ts${opts.quick ? ' --quick' : ''}`;
  // Baseline: one UPDATE per table, as a migration would.
  const a = await seeded(n);
  let oneMs = 0;
  try {
    const t0 = performance.now();
    await a.db.query(`UPDATE webhook_deliveries_legacy d SET event_created_at = e.created_at FROM events e WHERE e.id = d.event_id AND d.event_created_at IS NULL`);
    await a.db.query(`UPDATE webhook_attempts_legacy a SET delivery_created_at = d.created_at FROM webhook_deliveries d WHERE d.id = a.delivery_id AND a.delivery_created_at IS NULL`);
    oneMs = performance.now() - t0;
  } finally {
    await a.drop();
  }
  const b = await seeded(n);
  try {
    const batches: number[] = [];
    let filled = 0;
    const t0 = performance.now();
    for (const bf of BACKFILLS) {
      for (;;) {
        const s = performance.now();
        const r = await backfillBatch(b.db, bf, BATCH);
        batches.push(performance.now() - s);
        filled += r.filled;
        if (r.done) break;
      }
    }
    const ms = performance.now() - t0;
    const left = (await b.db.query<{ n: number }>(`SELECT (SELECT count(*) FROM webhook_deliveries WHERE event_created_at IS NULL) + (SELECT count(*) FROM webhook_attempts WHERE delivery_created_at IS NULL) AS n`)).rows[0].n;
    if (Number(left) !== 0 || filled !== n * 1.5) throw new Error(`backfill left ${left}, filled ${filled}`);
    batches.sort((x, y) => x - y);
    log(`partition backfill: ${filled} rows in ${round(ms)} ms, ${batches.length} batches; one UPDATE: ${round(oneMs)} ms`);
    return [
      {
        what: `backfill of the partition keys, ${n.toLocaleString('en')} deliveries + ${(n / 2).toLocaleString('en')} attempts written before migration 054, batches of ${BATCH.toLocaleString('en')}`,
        value: round(filled / (ms / 1000)), unit: 'rows/s', baseline: round(filled / (oneMs / 1000)), ratio: round(oneMs / ms),
        goal: 'none (online: see the longest batch)', command,
        note: `baseline: one UPDATE per table (${round(oneMs)} ms, every row locked until it ends); batches ${round(ms)} ms in all, no pause (the job pauses 50 ms between batches)`,
      },
      {
        what: 'the longest batch of that backfill (its rows locked meanwhile)', value: round(batches.at(-1)!), unit: 'ms', baseline: round(oneMs), ratio: round(batches.at(-1)! / oneMs),
        goal: '< 1 s: ' + (batches.at(-1)! < 1000 ? 'met' : 'not met'), command,
        note: `median batch ${round(batches[batches.length >> 1])} ms of ${batches.length}; baseline: the one UPDATE's whole time`,
      },
    ];
  } finally {
    await b.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runPartitionBackfillBench({ quick: process.argv.includes('--quick') }), null, 2));
  process.exit(0);
}
