// Customer merge benchmark: a primary and 10 secondaries holding N attached rows in all (every kind,
// associations half-overlapping so the dedupe has work), merged by the real core (mergeCustomers in a
// withRetry transaction), next to a floor measured in the same run: the same set-based statements typed
// by hand in one transaction over an identical twin data set. PostgreSQL and PGlite; N = 10k/100k/1M.
// Run: node --import tsx bench/merge.ts [--quick]   (writes the "Customer merge" section of BENCHMARKS.md)
import type { Db, Queryable } from '../src/db/db.ts';
import { withRetry } from '../src/db/db.ts';
import { PgDb } from '../src/db/pg.ts';
import { PgliteDb } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import { mergeCustomers } from '../src/crm/merge/service.ts';
import { undoMerge } from '../src/crm/merge/undo.ts';
import { createPgDatabase, median, pgAvailable, replaceSection, rowsTable, type Row } from './lib.ts';

const SECONDARIES = 10;
const MOVED = ['orders', 'follow_ups', 'notes', 'messages', 'preferences', 'product_shares'];
const COMMAND = 'node --import tsx bench/merge.ts';
/** PGlite is single-threaded WebAssembly: 1M rows there takes minutes of seeding, so it stops at 100k. */
const PGLITE_MAX = 100_000;

interface Group {
  primary: string;
  secondaries: string[];
}

/** One primary + 10 secondaries; n rows spread over the 7 attached tables and the secondaries. */
async function seedGroup(db: Db, tag: string, n: number): Promise<Group> {
  const perTable = Math.max(1, Math.floor(n / 7 / SECONDARIES));
  const ids = (
    await db.query<{ id: string }>(
      `INSERT INTO customers (external_id) SELECT $1 || '-' || g FROM generate_series(0, $2) g ORDER BY g RETURNING id`,
      [tag, SECONDARIES],
    )
  ).rows.map((r) => r.id);
  const [primary, ...secondaries] = ids;
  // Associates: secondary j uses [j*perTable/2, j*perTable/2 + perTable): neighbours overlap by half.
  const assocCount = Math.ceil(((SECONDARIES + 1) * perTable) / 2) + perTable;
  const firstAssoc = (
    await db.query<{ id: string }>(`INSERT INTO associates (external_id) SELECT $1 || '-a' || g FROM generate_series(1, $2) g RETURNING id`, [tag, assocCount])
  ).rows.map((r) => Number(r.id)).sort((a, b) => a - b)[0];
  const sec = `unnest($1::bigint[]) WITH ORDINALITY AS s(cid, j), generate_series(1, $2) g`;
  await db.query(`INSERT INTO orders (customer_id, external_id, ordered_at, currency, total) SELECT cid, 'o' || g, now(), 'EUR', 10 FROM ${sec}`, [secondaries, perTable]);
  await db.query(`INSERT INTO follow_ups (customer_id, due_at, subject) SELECT cid, now(), 'call' FROM ${sec}`, [secondaries, perTable]);
  await db.query(`INSERT INTO notes (customer_id, type, comments) SELECT cid, 'CUSTOMER_NOTE', 'comments' FROM ${sec}`, [secondaries, perTable]);
  await db.query(`INSERT INTO messages (customer_id, channel, direction, body, sent_at) SELECT cid, 'sms', 'inbound', 'hi', now() FROM ${sec}`, [secondaries, perTable]);
  await db.query(`INSERT INTO preferences (customer_id, category, value) SELECT cid, 'size', 'M' FROM ${sec}`, [secondaries, perTable]);
  await db.query(`INSERT INTO product_shares (customer_id, sku, shared_at) SELECT cid, 'sku', now() FROM ${sec}`, [secondaries, perTable]);
  await db.query(
    `INSERT INTO customer_associates (customer_id, associate_id) SELECT cid, $3::bigint + (j - 1) * ($2 / 2) + g - 1 FROM ${sec}`,
    [secondaries, perTable, firstAssoc],
  );
  return { primary, secondaries };
}

/** The floor: the merge's statements typed by hand, in one transaction. */
async function floor(tx: Queryable, g: Group): Promise<void> {
  const p = g.primary;
  const s = g.secondaries;
  await tx.query('SELECT id FROM customers WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE', [[p, ...s]]);
  for (const t of MOVED) await tx.query(`UPDATE ${t} SET customer_id = $1 WHERE customer_id = ANY($2::bigint[])`, [p, s]);
  await tx.query(
    `DELETE FROM customer_associates WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY associate_id
       ORDER BY (customer_id = $1) DESC, id) AS rn FROM customer_associates WHERE customer_id = $1 OR customer_id = ANY($2::bigint[])) r WHERE rn > 1)`,
    [p, s],
  );
  await tx.query('UPDATE customer_associates SET customer_id = $1 WHERE customer_id = ANY($2::bigint[])', [p, s]);
  await tx.query(`UPDATE customers SET status = 'disabled', merged_into = $1, updated_at = now() WHERE id = ANY($2::bigint[])`, [p, s]);
  await tx.query('UPDATE customers SET updated_at = now() WHERE id = $1', [p]);
}

/** Untimed: what the twin's rows look like before its floor merge (the floor undo gets this journal for free). */
async function snapshotTwin(db: Db, tag: string, g: Group): Promise<string> {
  const snap = `bench_snap_${tag.replace(/[^a-z0-9]/gi, '_')}`;
  await db.exec(`DROP TABLE IF EXISTS ${snap}`);
  await db.query(
    `CREATE TABLE ${snap} AS ${[...MOVED, 'customer_associates'].map((t) => `SELECT '${t}'::text AS t, id, customer_id FROM ${t} WHERE customer_id = ANY('{${g.secondaries.join(',')}}'::bigint[])`).join(' UNION ALL ')}`,
  );
  await db.exec(`CREATE INDEX ON ${snap} (t, id); CREATE TABLE ${snap}_a AS SELECT * FROM customer_associates WHERE customer_id = ANY('{${g.secondaries.join(',')}}'::bigint[])`);
  return snap;
}

/** The undo floor: the same rows moved back by hand from that snapshot, removed associations re-inserted, secondaries re-enabled. */
async function floorUndo(tx: Queryable, g: Group, snap: string): Promise<void> {
  for (const t of [...MOVED, 'customer_associates']) {
    await tx.query(`UPDATE ${t} x SET customer_id = s.customer_id FROM ${snap} s WHERE s.t = $1 AND x.id = s.id AND x.customer_id = $2`, [t, g.primary]);
  }
  await tx.query(`INSERT INTO customer_associates (id, uuid, customer_id, associate_id, role, created_at) OVERRIDING SYSTEM VALUE
    SELECT id, uuid, customer_id, associate_id, role, created_at FROM ${snap}_a ON CONFLICT DO NOTHING`);
  await tx.query(`UPDATE customers SET status = 'active', merged_into = NULL, updated_at = now() WHERE id = ANY($1::bigint[])`, [g.secondaries]);
  await tx.query('UPDATE customers SET updated_at = now() WHERE id = $1', [g.primary]);
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const label = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

/** Merge vs floor for one database and one N (the median of `reps` pairs, each on fresh twin groups). */
async function measure(db: Db, backend: string, n: number, reps: number): Promise<{ merge: number; floor: number; moved: number; undo: number; undoFloor: number }> {
  const merges: number[] = [];
  const floors: number[] = [];
  const undos: number[] = [];
  const undoFloors: number[] = [];
  let moved = 0;
  for (let r = 0; r < reps; r++) {
    const tag = `b${n}-${r}`;
    const a = await seedGroup(db, `${tag}-m`, n);
    const b = await seedGroup(db, `${tag}-f`, n);
    const snap = await snapshotTwin(db, tag, b);
    let mergeUuid = '';
    await db.exec('ANALYZE');
    // Alternate which goes first so neither always gets the warmer cache.
    const runMerge = async () =>
      merges.push(
        await time(async () => {
          const out = await withRetry(db, (tx) =>
            mergeCustomers(tx, { by: 'externalId', primary: `${tag}-m-0`, secondaries: a.secondaries.map((_, i) => `${tag}-m-${i + 1}`), dryRun: false, field: 'ids', principalUuid: null, source: 'BENCH' }),
          );
          moved = Object.values(out.moved).reduce((x, y) => x + y, 0) + out.duplicatesRemoved;
          mergeUuid = out.mergeUuid!;
        }),
      );
    const runFloor = async () => floors.push(await time(() => db.transaction((tx) => floor(tx, b))));
    if (r % 2 === 0) {
      await runFloor();
      await runMerge();
    } else {
      await runMerge();
      await runFloor();
    }
    const runUndo = async () => undos.push(await time(() => withRetry(db, (tx) => undoMerge(tx, { mergeUuid, dryRun: false, windowDays: 30, source: 'BENCH' }))));
    const runUndoFloor = async () => undoFloors.push(await time(() => db.transaction((tx) => floorUndo(tx, b, snap))));
    if (r % 2 === 0) {
      await runUndoFloor();
      await runUndo();
    } else {
      await runUndo();
      await runUndoFloor();
    }
    await db.exec(`DROP TABLE ${snap}; DROP TABLE ${snap}_a`);
    console.error(`  ${backend} N=${label(n)} rep ${r + 1}/${reps}: merge ${merges[r].toFixed(0)} ms, floor ${floors[r].toFixed(0)} ms; undo ${undos[r].toFixed(0)} ms, floor ${undoFloors[r].toFixed(0)} ms`);
  }
  return { merge: median(merges), floor: median(floors), moved, undo: median(undos), undoFloor: median(undoFloors) };
}

export async function runMergeBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  const sizes = opts.quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000];
  const rows: Row[] = [];
  const backends: ('pg' | 'pglite')[] = (await pgAvailable()) ? ['pg', 'pglite'] : ['pglite'];
  for (const backend of backends) {
    const name = backend === 'pg' ? 'PostgreSQL' : 'PGlite';
    let drop: (() => Promise<void>) | undefined;
    let db: Db;
    if (backend === 'pg') {
      const created = await createPgDatabase('merge');
      drop = created.drop;
      db = new PgDb(created.url, 4);
    } else {
      db = await PgliteDb.open('memory://');
    }
    try {
      await migrate(db);
      for (const n of sizes) {
        if (backend === 'pglite' && n > PGLITE_MAX) {
          rows.push({ what: `merge, N=${label(n)} rows (${name})`, value: 'skipped', unit: '', baseline: null, ratio: null, goal: '≤ 1.5 × floor', command: COMMAND, note: `PGlite stops at ${label(PGLITE_MAX)} rows: seeding and merging 1M rows in single-threaded WebAssembly takes minutes; PostgreSQL shows the 1M point.` });
          continue;
        }
        const reps = n >= 1_000_000 ? 1 : 3;
        const m = await measure(db, name, n, reps);
        const row = (kind: string, value: number, floor: number, note: string) => {
          const ratio = value / floor;
          rows.push({
            what: `${kind}, N=${label(n)} rows (${name})`,
            value: Math.round(value),
            unit: 'ms',
            baseline: Math.round(floor),
            ratio: Math.round(ratio * 100) / 100,
            goal: `≤ 1.5 × floor: ${ratio <= 1.5 ? 'met' : 'missed'}`,
            command: COMMAND,
            note: `${name}, N=${label(n)}: ${note}`,
          });
        };
        row('merge', m.merge, m.floor, `${m.moved.toLocaleString('en-US')} rows moved or removed (journaled in the same statements), ${((m.merge * 1000) / m.moved).toFixed(2)} µs per row (median of ${reps}); the floor writes no journal.`);
        row('undo', m.undo, m.undoFloor, `the undo of that merge (locks, journal read, rows moved back, removed associations restored, secondaries re-enabled, events) vs the floor: the same rows moved back by hand from a snapshot taken before the twin's merge (median of ${reps}).`);
      }
    } finally {
      await db.close();
      await drop?.();
    }
  }
  return rows;
}

/** Replaces (or appends) the "## Customer merge" section of BENCHMARKS.md. */
function writeSection(rows: Row[]) {
  replaceSection('Customer merge', [
    `Written by \`${COMMAND}\` on ${new Date().toISOString()}. A primary and ${SECONDARIES} secondaries holding N attached rows in all`,
    '(orders, follow-ups, notes, messages, preferences, product shares, associations half-overlapping). "value" is the merge core',
    '(validation, ordered locks, set-based moves, association dedupe, merge record, events) in one transaction; the baseline',
    '"floor" is the same set-based statements typed by hand in one transaction over an identical twin data set, same run',
    '(without the journal). The undo rows time undoing that merge against moving the twin\'s rows back by hand.',
    '',
    ...rowsTable(rows, 'floor (same run)'),
  ]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runMergeBench({ quick: process.argv.includes('--quick') });
  console.table(rows.map((r) => ({ what: r.what, value: `${r.value} ${r.unit}`, floor: r.baseline === null ? '—' : `${r.baseline} ${r.unit}`, ratio: r.ratio, goal: r.goal })));
  writeSection(rows);
  process.exit(0);
}
