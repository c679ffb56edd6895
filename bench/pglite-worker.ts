// PGlite in process vs in its worker thread (src/db/pglite.ts): per-query round trip, throughput with 10
// queries in flight, and how long the main event loop is blocked meanwhile (the p99 of
// gaps between the ticks of a 1 ms timer: what an HTTP request or a webhook timer waits behind the database).
//   node --import tsx bench/pglite-worker.ts [n]
import { PGlite } from '@electric-sql/pglite';
import { PgliteDb } from '../src/db/pglite.ts';

const N = Number(process.argv[2] ?? 3000);
type Q = (sql: string, params?: unknown[]) => Promise<unknown>;
const SETUP = `CREATE TABLE c (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, uuid uuid UNIQUE DEFAULT gen_random_uuid(), doc jsonb);
  INSERT INTO c (doc) SELECT jsonb_build_object('n', i, 'emails', jsonb_build_array('a@b.c', 'd@e.f')) FROM generate_series(1, 2000) i;`;

async function measure(name: string, q: Q) {
  const uuids = ((await q('SELECT uuid FROM c ORDER BY id')) as { rows: { uuid: string }[] }).rows.map((r) => r.uuid);
  const one = (i: number) => q('SELECT id, uuid, doc FROM c WHERE uuid = $1', [uuids[i % uuids.length]]);
  for (let i = 0; i < 200; i++) await one(i); // warm
  let t = performance.now();
  for (let i = 0; i < N; i++) await one(i);
  const serialUs = ((performance.now() - t) * 1000) / N;
  // A 1 ms timer: the gaps between its ticks are how long the main loop was blocked.
  const gaps: number[] = [];
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
  }, 1);
  t = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (next < N) await one(next++);
  }));
  const perSec = N / ((performance.now() - t) / 1000);
  clearInterval(tick);
  gaps.push(performance.now() - last); // the loop may not have ticked at all
  gaps.sort((x, y) => x - y);
  const ms = (x: number) => Math.round(x * 10) / 10;
  const r = { name, serialUsPerQuery: Math.round(serialUs), queriesPerSecAt10: Math.round(perSec), loopGapP99Ms: ms(gaps[Math.floor(gaps.length * 0.99)] ?? 0), loopGapMaxMs: ms(gaps[gaps.length - 1] ?? 0) };
  console.log(JSON.stringify(r));
  return r;
}

export async function runPgliteWorkerBench() {
  const inproc = await PGlite.create({ parsers: { 20: (v: string) => v } });
  await inproc.exec(SETUP);
  const a = await measure('in process', (s, p) => inproc.query(s, p as any[]));
  await inproc.close();
  const worker = await PgliteDb.open('memory://');
  await worker.exec(SETUP);
  const b = await measure('worker thread', (s, p) => worker.query(s, p));
  await worker.close();
  return [a, b];
}

if (import.meta.url === `file://${process.argv[1]}`) await runPgliteWorkerBench();
