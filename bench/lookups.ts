// Customer lookups at scale (the two an integrator runs all day): GET /crm/customers?email= and ?updatedSince= over
// 1,000,000 customers on PostgreSQL (--quick: 100,000), against bench/lookups-floor.ts (Fastify + pg, one
// hand-written query planned for the value given, no auth), measured in alternating slices after checking that
// both answer with the same customers. `npm run bench -- --only lookups [--quick]`.
import { V, api, createPgDatabase, load, log, pgAvailable, ratioGoal, round, spawnNode, startBulb, withPg, type Child, type LoadResult, type Row } from './lib.ts';

/**
 * The load is written two hours ago and every CHANGED-th customer changed an hour ago (a shifted clock, every write in
 * the past: a list serves only rows written before now, src/db/write-horizon.ts): an incremental sync since then finds
 * N / CHANGED.
 */
const CHANGED = 10_000;

async function seed(url: string, n: number): Promise<string> {
  return withPg(url, async (c) => {
    for (let i = 0; i < n; i += 100_000) {
      await c.query(
        `INSERT INTO customers (external_id, first_name, last_name, emails, email_keys, updated_at)
         SELECT 'lk' || g, 'Bo', 'N' || g, jsonb_build_array(jsonb_build_object('email', 'lk' || g || '@y.example')), ARRAY['lk' || g || '@y.example'],
           clock_timestamp() - interval '2 hours'
         FROM generate_series($1::int, $2::int) g`,
        [i + 1, Math.min(n, i + 100_000)],
      );
    }
    await c.query(`UPDATE customers SET updated_at = clock_timestamp() - interval '1 hour' WHERE id % $1 = 0`, [CHANGED]);
    await c.query('TRUNCATE duplicate_dirty'); // the API-only server runs no refresher; nothing else reads it
    await c.query('VACUUM ANALYZE customers');
    return new Date(Date.now() - 90 * 60_000).toISOString();
  });
}

type Path = (n: number) => string;

/** The same customers (external ids, in order) from Bulb and the floor, or a throw. */
async function sameAnswer(bulb: Child, floor: Child, bulbPath: string, floorPath: string): Promise<number> {
  const b = await api(bulb.url, 'GET', bulbPath);
  const f = await (await fetch(floor.url + floorPath)).json();
  const ids = (d: any[]) => d.map((x) => x.externalId).join(',');
  if (b.status !== 200 || ids(b.body.data) !== ids(f.data) || (b.body.nextCursor === null) !== (f.nextCursor === null)) {
    throw new Error(`Bulb and the floor disagree on ${bulbPath}: ${b.status} ${ids(b.body.data ?? [])} vs ${ids(f.data)}`);
  }
  return b.body.data.length;
}

export async function runLookupsBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed for the lookups bench');
  const n = opts.quick ? 100_000 : 1_000_000;
  const seconds = opts.quick ? 2 : 4;
  const cmd = `npm run bench -- --only lookups${opts.quick ? ' --quick' : ''}`;
  const db = await createPgDatabase('lookups');
  let bulb: Child | undefined;
  let floor: Child | undefined;
  try {
    bulb = await startBulb({ databaseUrl: db.url, role: 'api' });
    floor = await spawnNode('bench/lookups-floor.ts', [], { DATABASE_URL: db.url }, /lookups-floor listening on (\d+)/);
    log(`lookups: seeding ${n} customers`);
    const t0 = Date.now();
    const since = await seed(db.url, n);
    log(`lookups: seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const email = (i: number) => `LK${1 + ((i * 7919) % n)}@y.example`;
    const cases: { name: string; bulb: Path; floor: Path; goal: number; plain?: Path }[] = [
      { name: 'GET /crm/customers?email= (one customer)', bulb: (i) => `/api/${V}/crm/customers?email=${email(i)}`, floor: (i) => `/customers?email=${email(i)}`, goal: 0.7 },
      {
        name: `GET /crm/customers?updatedSince= (${n / CHANGED} changed since)`,
        bulb: () => `/api/${V}/crm/customers?updatedSince=${encodeURIComponent(since)}`,
        floor: () => `/customers?updatedSince=${encodeURIComponent(since)}`,
        plain: () => `/customers?updatedSince=${encodeURIComponent(since)}&plain=1`,
        goal: 0.7,
      },
    ];
    const rows: Row[] = [];
    for (const c of cases) {
      const found = await sameAnswer(bulb, floor, c.bulb(1), c.floor(1));
      const b: LoadResult[] = [];
      const f: LoadResult[] = [];
      await load({ url: bulb.url, make: (i) => ({ path: c.bulb(i) }), seconds: 1 });
      await load({ url: floor.url, make: (i) => ({ path: c.floor(i) }), seconds: 1 });
      for (let i = 0; i < 3; i++) {
        f.push(await load({ url: floor.url, make: (k) => ({ path: c.floor(k) }), seconds }));
        b.push(await load({ url: bulb.url, make: (k) => ({ path: c.bulb(k) }), seconds }));
      }
      // The floor's query written plainly, once, for the note (what the planner makes of it).
      const plain = c.plain && (await sameAnswer(bulb, floor, c.bulb(1), c.plain(1)), await load({ url: floor.url, make: (k) => ({ path: c.plain!(k) }), seconds }));
      const bad = [...b, ...f, ...(plain ? [plain] : [])].reduce((a, r) => a + r.non2xx + r.errors, 0);
      if (bad) throw new Error(`${c.name}: ${bad} non-2xx answers or errors`);
      const rate = (rs: LoadResult[]) => rs.reduce((a, r) => a + r.total, 0) / (seconds * rs.length);
      const [br, fr] = [rate(b), rate(f)];
      const p50 = (rs: LoadResult[]) => rs.map((r) => r.p50).sort((x, y) => x - y)[1];
      log(`lookups ${c.name}: bulb ${Math.round(br)}/s p50 ${p50(b)} ms, floor ${Math.round(fr)}/s p50 ${p50(f)} ms (${round(br / fr)})`);
      rows.push({
        what: `${c.name}, ${n.toLocaleString('en')} customers (baseline: Fastify + pg floor, one query)`,
        value: Math.round(br), unit: 'req/s', baseline: Math.round(fr), ratio: round(br / fr), goal: ratioGoal(br / fr, c.goal), command: cmd,
        note: `10 connections, 3 alternating slices of ${seconds} s each side; ${found} customer${found === 1 ? "" : "s"} per answer (checked equal to the floor's); p50 ${p50(b)} ms vs ${p50(f)} ms, largest p99 ${Math.max(...b.map((r) => r.p99))} ms vs ${Math.max(...f.map((r) => r.p99))} ms${
          plain ? `; the floor's query written plainly (WHERE updated_at >= $1 … ORDER BY id LIMIT 51, planned for the value) walks the primary key: ${Math.round(plain.rps)}/s, p50 ${plain.p50} ms` : ''}`,
      });
    }
    return rows;
  } finally {
    await bulb?.stop();
    await floor?.stop();
    await db.drop();
  }
}

