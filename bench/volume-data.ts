// The volume bench's data set, generated in SQL (INSERT … SELECT generate_series; per slice of customers, one
// statement for them and their notes, then one for their events, deliveries and attempts): customers with skewed first names, last names and cities (a few carry a large share, Zipf-like, as in
// retail data), two emails, a phone, an address and attributes; a note for every other customer; per customer
// EVENTS_PER_CUSTOMER events (a create and updates), one delivery per event to the bench's subscription, and
// 1.6 attempts per delivery (three in five failed once with a 500, then succeeded; lean rows, as since migration
// 051), spread over 5 days in partitions of their own (docs/partitioning.md).
// Fast (5M customers with their rows in ~9 minutes here): the five tables' secondary indexes and unique constraints
// are dropped before the load and built again after it (CREATE INDEX sorts once; maintaining a GIN trigram index
// row by row was most of the time; the customers' are built while the other rows load), and the loading session's
// triggers are off (session_replication_role = replica: the duplicates queue and the due-delivery notifications,
// which the generated rows need neither of; foreign keys are not checked, the rows are made consistent).
import pg from 'pg';
import type { PgliteDb } from '../src/db/pglite.ts';

export const EVENTS_PER_CUSTOMER = 2;
export const ATTEMPTS_PER_DELIVERY = 1.6;

const FIRST = ['Maria', 'James', 'Emma', 'Olivia', 'John', 'Sophie', 'Liam', 'Anna', 'Noah', 'Laura', 'David', 'Sarah', 'Lucas', 'Julia', 'Daniel', 'Chloe', 'Thomas', 'Lea', 'Paul', 'Nina', 'Marc', 'Elena', 'Hugo', 'Clara', 'Leo', 'Ines', 'Adam', 'Zoe', 'Jules', 'Alice', 'Victor', 'Lina', 'Sam', 'Mia', 'Arthur', 'Eva', 'Louis', 'Jade', 'Max', 'Rose'];
const CITY = ['New York', 'Los Angeles', 'Chicago', 'Houston', 'Paris', 'London', 'Toronto', 'Miami', 'Dallas', 'Boston', 'Seattle', 'Denver', 'Austin', 'Atlanta', 'Phoenix', 'Portland', 'Detroit', 'Nashville', 'Orlando', 'Tampa', 'Lyon', 'Montreal', 'Vancouver', 'Calgary', 'Ottawa', 'Madrid', 'Berlin', 'Rome', 'Milan', 'Vienna'];
const sqlArray = (xs: string[]) => `ARRAY[${xs.map((x) => `'${x.replaceAll("'", "''")}'`).join(',')}]`;
/** An index into an array of n, skewed: the first few values take most rows (random()^3: the first 10% ~46%). */
const skewed = (n: number) => `1 + floor(${n} * power(random(), 3))::int`;

const SLICE = 100_000;
/**
 * Connections at work at once: two index builds or vacuums (the machine has 2 cores); the slices are made one at a
 * time (two at once into one database were no faster: they wait on each other to extend the same tables).
 */
const PARALLEL = 2;

/**
 * Adds customers from+1 … to with their rows; their events, deliveries and attempts fall in the 5 days from day0
 * (partitions of their own: the first days after the tables' legacy partition, made ahead by the caller).
 * Into an empty database (from = 0) the five tables' secondary indexes are built after the load.
 */
export async function grow(url: string, from: number, to: number, subscriptionId: string, hookUrl: string, day0: Date, log: (s: string) => void): Promise<number> {
  const clients = Array.from({ length: PARALLEL }, () => new pg.Client({ connectionString: url }));
  await Promise.all(clients.map((c) => c.connect()));
  try {
    return await growOn(clients, from, to, subscriptionId, hookUrl, day0, log, '1GB');
  } finally {
    await Promise.all(clients.map((k) => k.end().catch(() => {})));
  }
}

/** A connection the data are made through: a pg.Client, or PGlite (pgliteConn). */
export interface Conn {
  query<T = any>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

/**
 * An embedded database as the generator's connection: statements without parameters go through exec (they may be
 * several, as node-postgres's simple protocol takes them), the others through query. PGlite is one session, so
 * the generator's two connections are this one, and its statements run one after the other.
 */
export function pgliteConn(db: PgliteDb): Conn {
  return { query: async (sql: string, params?: unknown[]) => (params ? db.query(sql, params) : db.exec(sql).then(() => ({ rows: [] }))) };
}

/** grow on connections of the caller's (PARALLEL of them, or the same one twice); maintenanceMem: each index build's. */
export async function growOn(clients: Conn[], from: number, to: number, subscriptionId: string, hookUrl: string, day0: Date, log: (s: string) => void, maintenanceMem: string): Promise<number> {
  const t0 = Date.now();
  const c = clients[0];
  const versionId = (await c.query<{ id: number }>(
    `INSERT INTO webhook_subscription_versions (subscription_id, digest, url, webhook_version, hmac_header, headers)
     VALUES ($1, 'volume-bench', $2, '2022-08', 'x-bulb-signature', '{"content-type": "application/json", "user-agent": "Bulb-Webhooks/1.0"}')
     ON CONFLICT (subscription_id, digest) DO UPDATE SET digest = EXCLUDED.digest RETURNING id`,
    [subscriptionId, hookUrl],
  )).rows[0].id;
  const rebuild = from === 0 ? await dropIndexes(c) : [];
  for (const k of clients) await k.query(`SET session_replication_role = replica; SET work_mem = '64MB'`);
  for (const k of clients) await k.query(`SET maintenance_work_mem = '${maintenanceMem}'`);
  const build = async (k: Conn, list: Rebuild[]) => {
    for (let r = list.shift(); r; r = list.shift()) {
      const t = Date.now();
      await k.query(r.sql);
      if (process.env.BENCH_VOLUME_TRACE) log(`${Date.now() - t} ms ${r.sql.slice(0, 90)}`);
    }
  };
  // First the customers (and their notes), then their other rows by id range while the second connection builds
  // the customers' indexes (the trigram index's build is the longest step), then the other tables' indexes.
  const ranges: [string, string][] = [];
  for (let a = from + 1; a <= to; a += SLICE) {
    const r = (await c.query<{ lo: string; hi: string }>(CUSTOMERS_SQL, [a, Math.min(to, a + SLICE - 1)])).rows[0];
    ranges.push([r.lo, r.hi]);
  }
  log(`volume: ${to.toLocaleString('en-US')} customers (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  const first = rebuild.filter((r) => r.table === 'customers' || r.table === 'notes');
  const rest = rebuild.filter((r) => !first.includes(r));
  await Promise.all([
    (async () => {
      let done = 0;
      for (const [lo, hi] of ranges) {
        await c.query(ROWS_SQL, [lo, hi, day0.toISOString(), subscriptionId, versionId]);
        done += Number(hi) - Number(lo) + 1;
        log(`volume: the rows of ${done.toLocaleString('en-US')} customers (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
      }
    })(),
    build(clients[1], first),
  ]);
  for (const k of clients) await k.query(`RESET session_replication_role`);
  await Promise.all(clients.map((k) => build(k, rest)));
  if (from === 0) log(`volume: indexes and constraints built (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  // Nothing is left for the possible-duplicates refresher: its fold rate is its own row (wt-dup), and a
  // backlog of millions would load the worker during the write measurements.
  await c.query('TRUNCATE duplicate_dirty');
  const tv = Date.now();
  const vacuum = [...TABLES];
  await Promise.all(clients.map(async (k) => {
    for (let t = vacuum.shift(); t; t = vacuum.shift()) await k.query(`VACUUM ANALYZE ${t}`);
  }));
  if (process.env.BENCH_VOLUME_TRACE) log(`VACUUM ANALYZE ${Date.now() - tv} ms`);
  return (Date.now() - t0) / 1000;
}

/** Customers $1 … $2 and a note per two; answers their id range. */
const CUSTOMERS_SQL = `
  WITH n AS (
    INSERT INTO customers (external_id, first_name, last_name, emails, email_keys, phones, addresses, attributes, loyalty_tier, created_at, updated_at)
    SELECT 'v' || g, (${sqlArray(FIRST)})[${skewed(FIRST.length)}], 'L' || (${skewed(20_000)}),
      jsonb_build_array(jsonb_build_object('email', 'v' || g || '@mail.example', 'type', 'home', 'isPrimary', true),
                        jsonb_build_object('email', 'v' || g || '@work.example', 'type', 'work', 'isPrimary', false)),
      ARRAY['v' || g || '@mail.example', 'v' || g || '@work.example'],
      jsonb_build_array(jsonb_build_object('number', '+1555' || lpad((g % 10000000)::text, 7, '0'), 'type', 'mobile', 'isPrimary', true)),
      jsonb_build_array(jsonb_build_object('uuid', gen_random_uuid(), 'address1', (g % 997) || ' Main St', 'address2', NULL,
        'city', (${sqlArray(CITY)})[${skewed(CITY.length)}], 'zoneCode', 'US-IL', 'postCode', (10000 + g % 89999)::text,
        'countryCode', 'US', 'type', 'home', 'isPrimary', true)),
      jsonb_build_array(jsonb_build_object('key', 'favoriteStore', 'value', 'store-' || (g % 300)), jsonb_build_object('key', 'size', 'value', 'M')),
      (ARRAY['gold', 'silver', 'bronze', NULL])[1 + g % 4], t, t
    FROM generate_series($1::int, $2::int) g, LATERAL (SELECT now() - interval '5 days' * random() AS t) x
    RETURNING id, created_at),
  nt AS (
    INSERT INTO notes (customer_id, type, comments, created_at, updated_at)
    SELECT id, 'CUSTOMER_NOTE', 'Prefers ' || (ARRAY['email', 'phone', 'text'])[1 + id % 3] || ' contact; asked about size ' || (id % 12) || ' in store ' || (id % 300), created_at, created_at
    FROM n WHERE id % 2 = 0)
  SELECT min(id) AS lo, max(id) AS hi FROM n`;

/**
 * The other rows of customers with ids $1 … $2, one statement: EVENTS_PER_CUSTOMER events each (from $3), a delivery
 * per event to subscription $4, and its attempts as Bulb writes them since migration 051 (lean rows: what only the
 * attempt knows, its signatures and the version $5 of its subscription's sending config; the logs API rebuilds the
 * request from the event and that).
 */
const ROWS_SQL = `
  WITH e AS (
    INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
    SELECT CASE WHEN k = 1 THEN 'customerCreate' ELSE 'customerUpdate' END, 'customer', uuid, external_id, 'TULIP_API',
      $3::timestamptz + random() * interval '5 days' + (k - 1) * interval '1 hour'
    FROM customers, generate_series(1, ${EVENTS_PER_CUSTOMER}) k WHERE id BETWEEN $1 AND $2
    RETURNING id, created_at),
  d AS (
    INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status, attempt_count, schedule_pos, next_attempt_at, created_at, updated_at, delivered_at)
    SELECT id, created_at, $4, 'delivered', CASE WHEN id % 5 < 3 THEN 2 ELSE 1 END, 0, NULL, created_at, created_at + interval '1 minute', created_at + interval '1 minute'
    FROM e
    RETURNING id, created_at, subscription_id, attempt_count)
  INSERT INTO webhook_attempts (uuid, delivery_id, delivery_created_at, subscription_id, attempt_number, started_at, duration_ms, status_code, error_code, outcome, next_attempt_at, version_id, signatures, response_body)
  SELECT NULL, d.id, d.created_at, d.subscription_id, k, d.created_at + k * interval '20 seconds', 20 + d.id % 50,
    CASE WHEN k < d.attempt_count THEN 500 ELSE 200 END, CASE WHEN k < d.attempt_count THEN 'HTTP_STATUS' END,
    CASE WHEN k < d.attempt_count THEN 'failure' ELSE 'success' END, CASE WHEN k < d.attempt_count THEN d.created_at + interval '1 minute' END,
    $5, sha256(int8send(d.id * 4 + k)) || sha256(int8send(d.id * 4 + k + 1)), CASE WHEN k < d.attempt_count THEN 'upstream error' ELSE '{}' END
  FROM d, generate_series(1, d.attempt_count) k`;

const TABLES = ['customers', 'notes', 'events', 'webhook_deliveries', 'webhook_attempts'];

/**
 * Drops the tables' secondary indexes (a partitioned table's with its partitions') and unique constraints that no
 * foreign key needs; returns the statements that make them again, as the migrations made them (primary keys stay).
 */
interface Rebuild {
  table: string;
  sql: string;
}

export async function dropIndexes(c: Conn, tables = TABLES): Promise<Rebuild[]> {
  const r = await c.query<{ name: string; def: string; con: string | null; tbl: string }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def, k.conname AS con, i.indrelid::regclass::text AS tbl
     FROM pg_index i LEFT JOIN pg_constraint k ON k.conindid = i.indexrelid AND k.conrelid = i.indrelid
     WHERE i.indrelid = ANY ($1::regclass[]) AND NOT i.indisprimary
       AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = i.indexrelid)`,
    [tables],
  );
  const again: Rebuild[] = [];
  for (const x of r.rows) {
    if (x.con) {
      await c.query(`ALTER TABLE ${x.tbl} DROP CONSTRAINT ${x.con}`);
      // The index first (a share lock: the table stays readable), then the constraint on it (a brief exclusive lock).
      again.push({ table: x.tbl, sql: `${x.def}; ALTER TABLE ${x.tbl} ADD CONSTRAINT ${x.con} UNIQUE USING INDEX ${x.name}` });
    } else {
      await c.query(`DROP INDEX ${x.name}`);
      // A partitioned table's index is defined ON ONLY the parent; made again without ONLY, it is built on every partition.
      again.push({ table: x.tbl, sql: x.def.replace(' ON ONLY ', ' ON ') });
    }
  }
  return again;
}
