// Where a customer insert's cost goes as the table grows (issue 25, item 4): one batch of new customers, inserted
// as the import and bulk insert them (one INSERT … SELECT of the stored form), timed with EXPLAIN (ANALYZE,
// BUFFERS, WAL) into an empty table and into one of M customers; then, at M, the same batch with each index or the
// duplicates trigger dropped inside a transaction that is rolled back (what that one costs), and with random
// (version 4) uuids instead of the time-ordered ones Bulb makes since migration 057.
//   node --import tsx bench/volume-profile.ts [M=2000000] [BATCH=20000]
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { ROOT, createPgDatabase, log, round } from './lib.ts';
import { dropIndexes } from './volume-data.ts';

const M = Number(process.argv[2] ?? 2_000_000);
const BATCH = Number(process.argv[3] ?? 20_000);

const row = (g: string) => `'p' || ${g}, (ARRAY['Maria','James','Emma','Olivia','John'])[1 + floor(5 * power(random(), 3))::int], 'L' || (1 + floor(20000 * power(random(), 3))::int),
  jsonb_build_array(jsonb_build_object('email', 'p' || ${g} || '@mail.example', 'type', 'home', 'isPrimary', true), jsonb_build_object('email', 'p' || ${g} || '@work.example', 'type', 'work', 'isPrimary', false)),
  ARRAY['p' || ${g} || '@mail.example', 'p' || ${g} || '@work.example'],
  jsonb_build_array(jsonb_build_object('number', '+1555' || lpad((${g} % 10000000)::text, 7, '0'), 'type', 'mobile', 'isPrimary', true)),
  jsonb_build_array(jsonb_build_object('uuid', gen_random_uuid(), 'address1', (${g} % 997) || ' Main St', 'city', 'Chicago', 'postCode', (10000 + ${g} % 89999)::text, 'countryCode', 'US'))`;
const COLS = 'external_id, first_name, last_name, emails, email_keys, phones, addresses';
const insert = (from: number, n: number) => `INSERT INTO customers (${COLS}) SELECT ${row('g')} FROM generate_series(${from}, ${from + n - 1}) g`;

interface Cost {
  ms: number;
  hit: number;
  read: number;
  dirtied: number;
  written: number;
  walMB: number;
  fpi: number;
}

let next = 10_000_000_000;
async function batch(c: pg.Client, before?: string): Promise<Cost> {
  await c.query('BEGIN');
  try {
    if (before) await c.query(before);
    const r = await c.query(`EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) ${insert(next, BATCH)}`);
    next += BATCH;
    const p = r.rows[0]['QUERY PLAN'][0];
    const plan = p.Plan;
    const ms = p['Execution Time'];
    await c.query(before ? 'ROLLBACK' : 'COMMIT');
    return { ms, hit: plan['Shared Hit Blocks'], read: plan['Shared Read Blocks'], dirtied: plan['Shared Dirtied Blocks'], written: plan['Shared Written Blocks'], walMB: plan['WAL Bytes'] / 1e6, fpi: plan['WAL FPI'] };
  } catch (err) {
    await c.query('ROLLBACK');
    throw err;
  }
}

const show = (what: string, x: Cost) =>
  `${what.padEnd(46)} ${round((BATCH / x.ms) * 1000, 0).toString().padStart(7)} rows/s  ${round(x.ms, 0).toString().padStart(6)} ms  buffers hit ${x.hit} read ${x.read} dirtied ${x.dirtied} written ${x.written}  WAL ${round(x.walMB, 1)} MB (${x.fpi} full pages)`;

const db = await createPgDatabase('volprof');
const c = new pg.Client({ connectionString: db.url });
try {
  const m = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'migrate'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: db.url, BULB_SECRET_KEY: Buffer.alloc(32, 1).toString('base64') }, encoding: 'utf8' });
  if (m.status !== 0) throw new Error(m.stderr);
  await c.connect();
  const out: string[] = [];
  await batch(c); // warm
  out.push(show('empty table', await batch(c)));
  // Seeded fast (as bench/volume-data.ts does): the secondary indexes built after the load, triggers off meanwhile.
  const again = await dropIndexes(c, ['customers']);
  await c.query('SET session_replication_role = replica');
  for (let a = 1; a <= M; a += 250_000) {
    await c.query(insert(a, Math.min(250_000, M - a + 1)));
    log(`profile: ${Math.min(M, a + 249_999)} customers`);
  }
  await c.query('RESET session_replication_role');
  await c.query(`SET maintenance_work_mem = '256MB'`);
  for (const r of again) await c.query(r.sql);
  await c.query('RESET maintenance_work_mem');
  await c.query('TRUNCATE duplicate_dirty');
  await c.query('VACUUM ANALYZE customers');
  const sizes = await c.query(`SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid) AS bytes FROM pg_index WHERE indrelid = 'customers'::regclass ORDER BY 2 DESC`);
  out.push(`at ${M.toLocaleString('en-US')} customers: table ${round((await c.query(`SELECT pg_table_size('customers') AS b`)).rows[0].b / 2 ** 20, 0)} MiB; indexes: ${sizes.rows.map((r) => `${r.name} ${round(r.bytes / 2 ** 20, 0)} MiB`).join(', ')} (shared_buffers ${(await c.query('SHOW shared_buffers')).rows[0].shared_buffers})`);
  for (let i = 0; i < 2; i++) out.push(show(`at ${M} customers (${i + 1})`, await batch(c)));
  for (const r of sizes.rows) {
    if (r.name === 'customers_pkey') continue;
    const con = r.name.endsWith('_key') ? `ALTER TABLE customers DROP CONSTRAINT ${r.name}` : `DROP INDEX ${r.name}`;
    out.push(show(`  without ${r.name}`, await batch(c, con)));
  }
  out.push(show('  without the duplicates trigger', await batch(c, 'ALTER TABLE customers DISABLE TRIGGER customers_duplicates_insert')));
  // What migration 057 (time-ordered uuids) spares: the same batch with random (version 4) uuids.
  for (let i = 0; i < 2; i++) out.push(show(`  random uuids, as before migration 057 (${i + 1})`, await batch(c, 'ALTER TABLE customers ALTER COLUMN uuid SET DEFAULT gen_random_uuid()')));
  console.log(out.join('\n'));
} finally {
  await c.end().catch(() => {});
  await db.drop();
}
