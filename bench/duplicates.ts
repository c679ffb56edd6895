// Possible-duplicates benchmark (SPEC §14, issue 25 item 1), in three parts: two on PostgreSQL, one on PGlite.
//
// Quality: QUALITY_N generated customers (1,000,000; --quick 20,000) with 5% planted duplicates, households as
// negatives and skewed names and cities (bench/duplicates-gen.ts), inserted with SQL (the triggers queue them),
// every pair built by the real refresher; precision and recall at the default minScore against the planted
// truth; per-customer lookups through a Bulb server next to GET /crm/customers/{id} on the same server.
//
// Scale: the refresher's rate folding in an import of IMPORT_N customers (generated like the above) into a base
// of N customers already folded, at two sizes (1,250,000 and 5,000,000 by default, the goal's size; --quick 50,000
// and 200,000), and the growth factor between them. The base is seeded in SQL in bulk (seedBase: INSERT … SELECT
// generate_series with the generator's lists and skew, its profiles, blocking keys, word keys and counts written in
// SQL as the refresher would write them, indexes built after; its own pairs are not built): folding millions of
// customers through the refresher would take hours. 5M seeds in ~17 minutes on the shared machine (2M took 25 before).
// Also a read of GET /crm/duplicates while the import is queued (it no longer folds anything in).
//
// Scale on PGlite (--part scale-pglite): the same fold on embedded PGlite, the default engine, at the sizes of its
// volume bench (100,000 and 400,000; --quick 20,000 and 80,000), an import of 10,000 (--quick 2,000).
//
// Run: node --import tsx bench/duplicates.ts [--quick] [--part quality|scale|scale-pglite] [--sizes 1250000,5000000] [--import 100000]
//   or npm run bench -- --only duplicates --write
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Db } from '../src/db/db.ts';
import { PgDb } from '../src/db/pg.ts';
import { PgliteDb } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import { refreshDuplicates } from '../src/crm/duplicates/refresh.ts';
import { DEFAULT_MIN_SCORE, NAME_KEY_CAP } from '../src/crm/duplicates/score.ts';
import { ADMIN_KEY, BENCH_SECRET_KEY, createPgDatabase, log, medianBy, pgAvailable, replaceSection, rowsTable, startBulb, type Row } from './lib.ts';
import { AREA, CITIES, DOMAINS, FIRSTS, LASTS, SKEW, STREET_KINDS, generate, rng, type GenCustomer } from './duplicates-gen.ts';

const COMMAND = 'npm run bench -- --only duplicates --write';
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const fmt = (x: number) => Math.round(x * 1000) / 1000;
const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const load = () => os.loadavg()[0].toFixed(1);

async function timedGet(url: string): Promise<{ ms: number; body: any }> {
  const t0 = performance.now();
  const r = await fetch(url, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  const body = await r.json();
  if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
  return { ms: performance.now() - t0, body };
}

/** Inserts generated customers with SQL, 5,000 per statement (the triggers queue them for the refresher). */
export async function insertCustomers(db: Db, customers: GenCustomer[]): Promise<void> {
  for (let i = 0; i < customers.length; i += 5000) {
    await db.query(
      `INSERT INTO customers (external_id, first_name, last_name, emails, phones, addresses, email_keys)
       SELECT x."externalId", x."firstName", x."lastName", x.emails, x.phones, x.addresses,
         ARRAY(SELECT lower(e->>'email') FROM jsonb_array_elements(x.emails) e)
       FROM jsonb_to_recordset($1::jsonb) AS x("externalId" text, "firstName" text, "lastName" text, emails jsonb, phones jsonb, addresses jsonb)`,
      [JSON.stringify(customers.slice(i, i + 5000))],
    );
  }
}

/** A Zipf-like index 1..m in SQL (continuous power law, exponent s) from a uniform u in [0, 1). */
const zipfSql = (u: string, m: number, s: number) => `least(${m}, floor(power((power(${m + 1}::float8, ${1 - s}) - 1) * ${u} + 1, ${1 / (1 - s)}))::int)`;
/** A deterministic uniform in [0, 1) from g and a salt, in float8 (numeric made power() 55 µs a call: most of the seed). */
const uni = (salt: number) => `((hashint8(g * 31 + ${salt})::bigint + 2147483648) / 4294967296.0::float8)`;
const arr = (xs: string[]) => `ARRAY[${xs.map((x) => `'${x}'`).join(',')}]`;

/**
 * Seeds n customers into an empty database in SQL with the generator's lists and skew (each with an email, a phone and an
 * address), then their profiles, blocking keys and word keys as the refresher writes them (ASCII names: folding
 * is lower case), and their counts: a base already folded in (its pairs aside). Bulk-loaded: the tables'
 * secondary indexes and the unique ones no foreign key needs are dropped first and built once after, the queue's and the
 * counts' triggers are off during the load (nothing is queued; the counts are taken once with GROUP BY, as
 * migration 049 does). Row by row into live indexes (the trigram GIN of customers above all) and through the
 * triggers, 2M took 25 minutes under load; built indexes are also denser than grown ones (say so with figures).
 */
export async function seedBase(db: Db, n: number, maintenanceMem = '1GB'): Promise<void> {
  const tables = ['customers', 'duplicate_profiles', 'duplicate_keys', 'duplicate_key_counts'];
  const indexes = (await db.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes i WHERE schemaname = current_schema() AND tablename = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`, [tables],
  )).rows;
  const timed = async (what: string, sql: string, params: unknown[] = []) => {
    const t0 = performance.now();
    await db.query(sql, params);
    log(`duplicates: seed ${what} ${((performance.now() - t0) / 1000).toFixed(1)} s (load ${load()})`);
  };
  const constraints = (await db.query<{ conname: string; t: string; def: string }>(
    `SELECT conname, conrelid::regclass::text AS t, pg_get_constraintdef(oid) AS def FROM pg_constraint c
     WHERE conrelid = ANY($1::regclass[]) AND contype IN ('p', 'u') AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = c.conindid)`, [tables],
  )).rows;
  for (const i of indexes) await db.query(`DROP INDEX ${i.indexname}`);
  for (const c of constraints) await db.query(`ALTER TABLE ${c.t} DROP CONSTRAINT ${c.conname}`);
  const triggers = 'customers DISABLE TRIGGER customers_duplicates_insert; ALTER TABLE duplicate_keys DISABLE TRIGGER duplicate_keys_count_insert; ALTER TABLE duplicate_profiles DISABLE TRIGGER duplicate_profiles_count_insert';
  await db.exec(`ALTER TABLE ${triggers}`);
  const STEP = 1_000_000;
  for (let lo = 0; lo < n; lo += STEP) {
    const hi = Math.min(n, lo + STEP);
    await timed(`customers ${n0(lo)}–${n0(hi)}`,
      `WITH fn AS (SELECT * FROM unnest($3::text[]) WITH ORDINALITY AS t(f, i)), ln AS (SELECT * FROM unnest($4::text[]) WITH ORDINALITY AS t(l, i)),
         ct AS (SELECT * FROM unnest($5::text[], $6::int[], $7::int[]) WITH ORDINALITY AS t(cn, z0, zn, i))
       INSERT INTO customers (external_id, first_name, last_name, emails, phones, addresses, email_keys)
       SELECT 'b-' || g, initcap(f), initcap(l), jsonb_build_array(jsonb_build_object('email', e)), jsonb_build_array(jsonb_build_object('number', ph)),
         jsonb_build_array(jsonb_build_object('address1', st, 'city', cn, 'postCode', z, 'countryCode', 'US')), ARRAY[e]
       FROM (
         SELECT g, fn.f, ln.l, fn.f || '.' || ln.l || '.b' || g || '@' || (${arr(DOMAINS)})[1 + g % ${DOMAINS.length}] AS e,
           '+1' || (${arr(AREA)})[1 + k % ${AREA.length}] || (200 + ((k / ${AREA.length}) * 7919) % 800) || lpad(((k / ${AREA.length} / 800) % 10000)::text, 4, '0') AS ph,
           (1 + g % 999) || ' ' || initcap(sl.l) || ' ' || (${arr(STREET_KINDS)})[1 + g % ${STREET_KINDS.length}] AS st,
           ct.cn, lpad((ct.z0 + (hashint8(g * 31 + 4)::bigint & 65535) % ct.zn)::text, 5, '0') AS z
         FROM (
           SELECT g, g + 20000000 AS k, ${zipfSql(uni(1), FIRSTS.length, SKEW.first)} AS fi, ${zipfSql(uni(2), LASTS.length, SKEW.last)} AS li,
             ${zipfSql(uni(3), CITIES.length, SKEW.city)} AS ci, 1 + (hashint8(g * 31 + 5)::bigint & 65535) % ${LASTS.length} AS si
           FROM generate_series($1::bigint, $2::bigint - 1) g
         ) a JOIN fn ON fn.i = a.fi JOIN ln ON ln.i = a.li JOIN ln sl ON sl.i = a.si JOIN ct ON ct.i = a.ci
       ) b`,
      [lo, hi, FIRSTS, LASTS, CITIES.map((c) => c.name), CITIES.map((_, i) => 10000 + i * 40), CITIES.map((c) => c.zips.length)],
    );
  }
  const fields = `SELECT c.id, lower(c.first_name) AS f, lower(c.last_name) AS l, c.email_keys[1] AS e, c.phones->0->>'number' AS p,
      c.addresses->0->>'postCode' AS z, lower(c.addresses->0->>'city') AS city, lower(c.addresses->0->>'address1') AS st FROM customers c`;
  await timed('profiles', `INSERT INTO duplicate_profiles (customer_id, name, emails, phones, postal_codes, cities)
    SELECT id, f || ' ' || l, ARRAY[e], ARRAY[p], ARRAY[z], ARRAY[city] FROM (${fields}) x`);
  // Distinct without a sort: the last name's keys only when it is not also the first name (thomas thomas).
  await timed('keys', `INSERT INTO duplicate_keys (key, customer_id, name)
    SELECT k, id, f || ' ' || l FROM (${fields}) x CROSS JOIN LATERAL (VALUES ('e:' || e), ('p:' || p),
      ('n:' || f || '|z:' || z), ('n:' || f || '|s:' || st || '|' || z),
      (CASE WHEN l <> f THEN 'n:' || l || '|z:' || z END), (CASE WHEN l <> f THEN 'n:' || l || '|s:' || st || '|' || z END),
      (CASE WHEN length(f) >= 4 THEN 'w:' || f END), (CASE WHEN length(l) >= 4 AND l <> f THEN 'w:' || l END)) v(k) WHERE k IS NOT NULL`);
  await db.exec(`ALTER TABLE ${triggers.replaceAll('DISABLE', 'ENABLE')}`);
  await timed('counts', `INSERT INTO duplicate_key_counts (key, bearers)
    SELECT key, count(*) FROM duplicate_keys WHERE key LIKE 'w:%' GROUP BY key UNION ALL SELECT 'f:' || name, count(*) FROM duplicate_profiles GROUP BY name`);
  await db.transaction(async (tx) => {
    await tx.query(`SET LOCAL maintenance_work_mem = '${maintenanceMem}'`);
    const t0 = performance.now();
    for (const c of constraints) await tx.query(`ALTER TABLE ${c.t} ADD CONSTRAINT ${c.conname} ${c.def}`);
    for (const i of indexes) await tx.query(i.indexdef);
    log(`duplicates: seed indexes built ${((performance.now() - t0) / 1000).toFixed(1)} s (load ${load()})`);
  });
  log(`duplicates: base seeded to ${n0(n)} customers (load ${load()})`);
}

/** Quality at n customers, the build rate from empty, and per-customer lookups. */
async function qualityPart(n: number, lookups: number): Promise<Row[]> {
  const gen = generate(n);
  log(`duplicates: ${gen.customers.length} customers, ${gen.truth.length} planted duplicates, ${gen.households} households`);
  const created = await createPgDatabase('dups');
  const db = new PgDb(created.url, 4);
  const rows: Row[] = [];
  const size = `${n >= 1e6 ? `${n / 1e6}M` : `${n / 1000}k`} customers`;
  try {
    await migrate(db);
    await insertCustomers(db, gen.customers);
    await db.exec('ANALYZE');
    const t0 = performance.now();
    const processed = await refreshDuplicates(db, 'US');
    const buildMs = performance.now() - t0;
    const loadAfterBuild = load();
    log(`duplicates: refreshed ${processed} customers in ${(buildMs / 1000).toFixed(1)} s`);

    const minScore = Math.round(DEFAULT_MIN_SCORE * 1000);
    const predicted = (
      await db.query<{ a: string; b: string }>(
        `SELECT ca.external_id AS a, cb.external_id AS b FROM duplicate_pairs p JOIN customers ca ON ca.id = p.a JOIN customers cb ON cb.id = p.b WHERE p.score >= $1`,
        [minScore],
      )
    ).rows.map((x) => [x.a, x.b].sort().join('|'));
    const truth = new Set(gen.truth.map((t) => [...t].sort().join('|')));
    const tp = predicted.filter((p) => truth.has(p)).length;
    const precision = predicted.length ? tp / predicted.length : 0;
    const recall = tp / truth.size;
    const capped = (await db.query<{ keys: number; bearings: string }>(
      `SELECT count(*)::int AS keys, coalesce(sum(n), 0)::text AS bearings FROM (SELECT count(*) AS n FROM duplicate_keys WHERE key LIKE 'n:%' GROUP BY key) k WHERE n > $1`, [NAME_KEY_CAP],
    )).rows[0];
    const allBearings = Number((await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM duplicate_keys`)).rows[0].n);
    rows.push({
      what: `precision at minScore ${DEFAULT_MIN_SCORE} (${size}, 5% planted, skewed names and cities)`, value: fmt(precision), unit: '', baseline: null, ratio: null,
      goal: `≥ 0.95: ${precision >= 0.95 ? 'met' : 'missed'}`, command: COMMAND,
      note: `${predicted.length} pairs at score ≥ ${DEFAULT_MIN_SCORE}: ${tp} planted, ${predicted.length - tp} not (households; people in one postal code whose names are equal or one typo apart, see bench/duplicates-typo-neighbours.ts); ${gen.households} households of 2–4 people sharing a last name, an address and (half of them) a landline. Skew (bench/duplicates-gen.ts): the commonest first name ~4.9% of customers, the ten commonest ~20%; the commonest city ~6.4%, the ten biggest ~25%. ${capped.keys} name keys past the cap of ${NAME_KEY_CAP} (${n0(Number(capped.bearings))} of ${n0(allBearings)} key bearings, ${((100 * Number(capped.bearings)) / allBearings).toFixed(1)}%): no candidates through them.`,
    });
    rows.push({
      what: `recall at minScore ${DEFAULT_MIN_SCORE} (${size})`, value: fmt(recall), unit: '', baseline: null, ratio: null,
      goal: `≥ 0.90: ${recall >= 0.9 ? 'met' : 'missed'}`, command: COMMAND,
      note: `${tp} of ${truth.size} planted duplicates found. Planted variants: name case/spacing, a typo in the first (30%) or last (15%) name, first/last swapped (20%); email kept with other case (60%), another (20%) or none (20%); phone kept in another format (60%), another (15%) or none (25%); address kept (80%) or none. A duplicate with neither email, phone nor address (~2%) carries no signal.`,
    });
    rows.push({
      what: `building the pairs from empty (refresher, ${size} queued)`, value: Math.round(n / (buildMs / 1000)), unit: 'customers/s', baseline: null, ratio: null,
      goal: 'information', command: COMMAND,
      note: `${(buildMs / 1000).toFixed(0)} s for ${n0(n)} customers (500 per transaction, planned as index probes; ${n0(processed - n)} re-scorings of bearers of names that changed step or keys that crossed their cap included; load average ${loadAfterBuild} after the build).`,
    });

    const srv = await startBulb({ databaseUrl: created.url, role: 'api' });
    try {
      const r = rng(7);
      const ids = Array.from({ length: lookups }, () => gen.customers[r.int(gen.customers.length)].externalId);
      for (const id of ids.slice(0, 50)) await timedGet(`${srv.url}/api/2026-11/crm/customers/${id}/duplicates`); // warm-up
      const dup: number[] = [];
      const get: number[] = [];
      for (const id of ids) {
        dup.push((await timedGet(`${srv.url}/api/2026-11/crm/customers/${id}/duplicates?limit=10`)).ms);
        get.push((await timedGet(`${srv.url}/api/2026-11/crm/customers/${id}`)).ms);
      }
      const lookupLoad = load();
      for (const p of [50, 99]) {
        const v = pct(dup, p);
        const b = pct(get, p);
        rows.push({
          what: `per-customer lookup p${p} (PostgreSQL, ${size})`, value: Math.round(v * 100) / 100, unit: 'ms', baseline: Math.round(b * 100) / 100,
          ratio: Math.round((v / b) * 100) / 100, goal: p === 99 ? `≤ 20 ms: ${v <= 20 ? 'met' : 'missed'}` : 'information', command: COMMAND,
          ...(p === 99 ? { note: `${lookups} sequential GET …/customers/{id}/duplicates?limit=10 over HTTP, each followed by GET …/customers/{id} (the baseline column) on the same server; one statement per lookup (the customer, the queue's length and the pairs); shared 2-core machine (load average ${lookupLoad} after the lookups).` } : {}),
        });
      }
    } finally {
      await srv.stop();
    }
  } finally {
    await db.close();
    await created.drop();
  }
  return rows;
}

interface ScaleResult {
  base: number;
  rate: number;
  seconds: number;
  processed: number;
  readMs: number;
  pending: number;
  seedS: number;
  load: string;
  /** Each fold's rate, when the size was folded more than once (the rate is their median). */
  rates?: number[];
}

/**
 * 20 reads of GET /crm/duplicates (after one unmeasured) while an import is queued, through a Bulb server of role api
 * started for them: the pairs as they stand and the queue's length, no refresher work.
 */
async function queuedReads(server: Parameters<typeof startBulb>[0]): Promise<{ readMs: number; pending: number }> {
  const srv = await startBulb(server);
  try {
    const url = `${srv.url}/api/2026-11/crm/duplicates?minScore=0.5`;
    await timedGet(url);
    const reads: number[] = [];
    let last: any;
    for (let i = 0; i < 20; i++) {
      const r = await timedGet(url);
      reads.push(r.ms);
      last = r.body;
    }
    return { readMs: pct(reads, 50), pending: last.pendingCustomers };
  } finally {
    await srv.stop();
  }
}

/** Times the refresher folding in what is queued (the import), after a checkpoint. */
async function timedFold(db: Db, base: number, importN: number): Promise<{ seconds: number; processed: number }> {
  // The seed's write-back (GBs at 5M, more the larger the base) done before the clock starts, not during the fold.
  await db.exec('CHECKPOINT');
  const t0 = performance.now();
  const processed = await refreshDuplicates(db, 'US');
  const seconds = (performance.now() - t0) / 1000;
  log(`duplicates: base ${n0(base)} (${db.kind}): folded ${n0(importN)} (${n0(processed)} with re-queued) in ${seconds.toFixed(1)} s`);
  return { seconds, processed };
}

/** Seeds the base and queues the import; returns the seed's seconds. */
async function seedAndImport(db: Db, base: number, importN: number, maintenanceMem: string): Promise<number> {
  await migrate(db);
  const s0 = performance.now();
  await seedBase(db, base, maintenanceMem);
  await db.exec('VACUUM ANALYZE');
  const seedS = (performance.now() - s0) / 1000;
  await insertCustomers(db, generate(importN, 4242, 0.05, 'imp-').customers);
  return seedS;
}

/** Folds an import of importN generated customers into a base of `base` customers seeded in SQL (PostgreSQL). */
async function scaleRun(base: number, importN: number): Promise<ScaleResult> {
  const created = await createPgDatabase('dupscale');
  const db = new PgDb(created.url, 4);
  try {
    const seedS = await seedAndImport(db, base, importN, '1GB');
    const read = await queuedReads({ databaseUrl: created.url, role: 'api' });
    const fold = await timedFold(db, base, importN);
    return { base, rate: importN / fold.seconds, ...fold, ...read, seedS, load: load() };
  } finally {
    await db.close();
    await created.drop();
  }
}

/**
 * The same on embedded PGlite, each size in a folder of its own, seeded and its import queued once. A fold there
 * takes seconds, and one fold per size moved the growth from 1.1 to 1.3 between two runs of the same code: each
 * size is folded ROUNDS times, alternating, each time on a fresh copy of its folder, and the median rate kept.
 * The refresher runs in this process as in a worker process (PGlite in a worker thread); the reads go through a
 * Bulb server of role api on the folder (one process opens a PGlite folder at a time).
 */
const ROUNDS = 3;
async function scalePglite(sizes: number[], importN: number): Promise<ScaleResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-dupscale-'));
  try {
    const seeded: (Omit<ScaleResult, 'rate' | 'seconds' | 'processed' | 'load'> & { dir: string; folds: { seconds: number; processed: number }[] })[] = [];
    for (const base of sizes) {
      const dir = path.join(root, String(base));
      const db = await PgliteDb.open(dir);
      let seedS: number;
      try {
        seedS = await seedAndImport(db, base, importN, '256MB');
      } finally {
        await db.close();
      }
      const read = await queuedReads({ role: 'api', env: { DATABASE_URL: '', BULB_DATA_DIR: dir, BULB_SECRET_KEY: BENCH_SECRET_KEY } });
      seeded.push({ base, dir, seedS, folds: [], ...read });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of seeded) {
        const copy = `${s.dir}-fold`;
        fs.cpSync(s.dir, copy, { recursive: true });
        const db = await PgliteDb.open(copy);
        try {
          s.folds.push(await timedFold(db, s.base, importN));
        } finally {
          await db.close();
          fs.rmSync(copy, { recursive: true, force: true });
        }
      }
    }
    return seeded.map(({ dir, folds, ...s }) => {
      const median = medianBy(folds, (f) => f.seconds);
      return { ...s, ...median, rate: importN / median.seconds, rates: folds.map((f) => Math.round(importN / f.seconds)), load: load() };
    });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function scalePart(sizes: number[], importN: number, engine: 'pg' | 'pglite' = 'pg'): Promise<Row[]> {
  const results: ScaleResult[] = [];
  if (engine === 'pglite') results.push(...(await scalePglite(sizes, importN)));
  else for (const base of sizes) results.push(await scaleRun(base, importN));
  const rows: Row[] = [];
  const [small, big] = results;
  const on = engine === 'pg' ? '' : ' (PGlite)';
  const command = engine === 'pg' ? COMMAND : `node --import tsx bench/duplicates.ts --part scale-pglite`;
  for (const r of results) {
    const isBig = r === big;
    rows.push({
      what: `import of ${n0(importN)} customers folded in, base of ${n0(r.base)} customers${on}`, value: Math.round(r.rate), unit: 'customers/s',
      baseline: isBig ? Math.round(small.rate) : null, ratio: isBig ? Math.round((r.rate / small.rate) * 100) / 100 : null,
      goal: engine === 'pglite' ? 'information' : isBig && r.base >= 5_000_000 ? `≥ 1,000 customers/s at 5M: ${r.rate >= 1000 ? 'met' : 'missed'}` : `≥ 1,000 customers/s: ${r.rate >= 1000 ? 'met' : 'missed'}`, command,
      note: `base ${n0(r.base)}: ${r.rates ? `the median of ${r.rates.length} folds alternating with the other size's, each on a fresh copy (${r.rates.map(n0).join(', ')} customers/s); ` : ''}${r.seconds.toFixed(0)} s by the refresher (${n0(r.processed)} customers refreshed, re-queued bearers of names that changed step or keys that crossed their cap included), load average ${r.load} after; the base seeded in SQL in ${r.seedS.toFixed(0)} s (customers, profiles, keys; not its own pairs).${isBig ? ` Growth factor (rate at ${n0(small.base)} ÷ rate at ${n0(r.base)}): ${(small.rate / r.rate).toFixed(2)} for ${(r.base / small.base).toFixed(1)}× the base.` : ''}`,
    });
  }
  if (big) {
    const growth = small.rate / big.rate;
    rows.push({
      what: `growth factor of the fold's cost, ${n0(small.base)} → ${n0(big.base)} customers (rate at the first ÷ rate at the second)${on}`, value: Math.round(growth * 100) / 100, unit: '×',
      baseline: null, ratio: null, goal: `≤ 1.2: ${growth <= 1.2 ? 'met' : 'missed'}`, command,
    });
  }
  for (const r of results) {
    rows.push({
      what: `GET /crm/duplicates p50 while ${n0(importN)} customers are queued (base ${n0(r.base)})${on}`, value: Math.round(r.readMs * 10) / 10, unit: 'ms', baseline: null, ratio: null,
      goal: 'no refresher work in a read', command,
      note: r === big ? `20 sequential reads (minScore 0.5) before the refresher ran; each answered pendingCustomers ${n0(r.pending)} (counted up to 10,000). Before: each read folded up to 4 batches in first, 43–64 s per read at 1M customers (issue 25).` : undefined,
    });
  }
  return rows;
}

export async function runDuplicatesBench(opts: { quick?: boolean; part?: string; sizes?: number[]; importN?: number; qualityN?: number } = {}): Promise<Row[]> {
  if (opts.part !== 'scale-pglite' && !(await pgAvailable())) throw new Error('the duplicate bench needs PostgreSQL (but for --part scale-pglite)');
  const rows: Row[] = [];
  if (opts.part === undefined || opts.part === 'quality') rows.push(...(await qualityPart(opts.qualityN ?? (opts.quick ? 20_000 : 1_000_000), opts.quick ? 300 : 2000)));
  if (opts.part === undefined || opts.part === 'scale') rows.push(...(await scalePart(opts.sizes ?? (opts.quick ? [50_000, 200_000] : [1_250_000, 5_000_000]), opts.importN ?? (opts.quick ? 20_000 : 100_000))));
  // PGlite, the embedded default, at the sizes its volume bench uses (bench/volume.ts --pglite).
  if (opts.part === undefined || opts.part === 'scale-pglite') rows.push(...(await scalePart(opts.sizes ?? (opts.quick ? [20_000, 80_000] : [100_000, 400_000]), opts.importN ?? (opts.quick ? 2_000 : 10_000), 'pglite')));
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const quick = process.argv.includes('--quick');
  const rows = await runDuplicatesBench({
    quick, part: arg('part'), sizes: arg('sizes')?.split(',').map(Number), importN: arg('import') ? Number(arg('import')) : undefined,
    qualityN: arg('quality-n') ? Number(arg('quality-n')) : undefined,
  });
  console.table(rows.map((r) => ({ what: r.what, value: `${r.value} ${r.unit}`, goal: r.goal })));
  console.log(JSON.stringify(rows));
  if (!quick && process.argv.includes('--write')) replaceSection('Possible duplicates', [`Written by \`node --import tsx bench/duplicates.ts ${process.argv.slice(2).join(' ')}\` on ${new Date().toISOString()}.`, '', ...rowsTable(rows)]);
  process.exit(0);
}
