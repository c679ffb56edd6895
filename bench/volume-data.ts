// The volume bench's data set, generated in SQL (INSERT … SELECT generate_series, one statement per table and
// slice): customers with skewed first names, last names and cities (a few carry a large share, Zipf-like, as in
// retail data), two emails, a phone, an address and attributes; a note for every other customer; per customer
// EVENTS_PER_CUSTOMER events (a create and updates), one delivery per event to the bench's subscription, and
// 1.6 attempts per delivery (three in five failed once with a 500, then succeeded; lean rows, as since migration
// 051), spread over 5 days in partitions of their own (docs/partitioning.md).
import type pg from 'pg';

export const EVENTS_PER_CUSTOMER = 2;
export const ATTEMPTS_PER_DELIVERY = 1.6;

const FIRST = ['Maria', 'James', 'Emma', 'Olivia', 'John', 'Sophie', 'Liam', 'Anna', 'Noah', 'Laura', 'David', 'Sarah', 'Lucas', 'Julia', 'Daniel', 'Chloe', 'Thomas', 'Lea', 'Paul', 'Nina', 'Marc', 'Elena', 'Hugo', 'Clara', 'Leo', 'Ines', 'Adam', 'Zoe', 'Jules', 'Alice', 'Victor', 'Lina', 'Sam', 'Mia', 'Arthur', 'Eva', 'Louis', 'Jade', 'Max', 'Rose'];
const CITY = ['New York', 'Los Angeles', 'Chicago', 'Houston', 'Paris', 'London', 'Toronto', 'Miami', 'Dallas', 'Boston', 'Seattle', 'Denver', 'Austin', 'Atlanta', 'Phoenix', 'Portland', 'Detroit', 'Nashville', 'Orlando', 'Tampa', 'Lyon', 'Montreal', 'Vancouver', 'Calgary', 'Ottawa', 'Madrid', 'Berlin', 'Rome', 'Milan', 'Vienna'];
const sqlArray = (xs: string[]) => `ARRAY[${xs.map((x) => `'${x.replaceAll("'", "''")}'`).join(',')}]`;
/** An index into an array of n, skewed: the first few values take most rows (random()^3: the first 10% ~46%). */
const skewed = (n: number) => `1 + floor(${n} * power(random(), 3))::int`;

const SLICE = 250_000;

/**
 * Adds customers from+1 … to with their rows; their events, deliveries and attempts fall in the 5 days from day0
 * (partitions of their own: the first days after the tables' legacy partition, made ahead by the caller).
 */
export async function grow(c: pg.Client, from: number, to: number, subscriptionId: string, url: string, day0: Date, log: (s: string) => void): Promise<number> {
  const t0 = Date.now();
  const versionId = (await c.query<{ id: number }>(
    `INSERT INTO webhook_subscription_versions (subscription_id, digest, url, webhook_version, hmac_header, headers)
     VALUES ($1, 'volume-bench', $2, '2022-08', 'x-bulb-signature', '{"content-type": "application/json", "user-agent": "Bulb-Webhooks/1.0"}')
     ON CONFLICT (subscription_id, digest) DO UPDATE SET digest = EXCLUDED.digest RETURNING id`,
    [subscriptionId, url],
  )).rows[0].id;
  for (let a = from + 1; a <= to; a += SLICE) {
    const b = Math.min(to, a + SLICE - 1);
    await c.query(
      `INSERT INTO customers (external_id, first_name, last_name, emails, email_keys, phones, addresses, attributes, loyalty_tier, created_at, updated_at)
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
       FROM generate_series($1::int, $2::int) g, LATERAL (SELECT now() - interval '5 days' * random() AS t) x`,
      [a, b],
    );
    const ids = (await c.query<{ lo: string; hi: string }>(`SELECT min(id) AS lo, max(id) AS hi FROM customers WHERE external_id IN ('v' || $1::int, 'v' || $2::int)`, [a, b])).rows[0];
    await c.query(
      `INSERT INTO notes (customer_id, type, comments, created_at, updated_at)
       SELECT id, 'CUSTOMER_NOTE', 'Prefers ' || (ARRAY['email', 'phone', 'text'])[1 + id % 3] || ' contact; asked about size ' || (id % 12) || ' in store ' || (id % 300), created_at, created_at
       FROM customers WHERE id BETWEEN $1 AND $2 AND id % 2 = 0`,
      [ids.lo, ids.hi],
    );
    const ev = await c.query<{ lo: string; hi: string }>(
      `WITH e AS (
         INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source, created_at)
         SELECT CASE WHEN k = 1 THEN 'customerCreate' ELSE 'customerUpdate' END, 'customer', uuid, external_id, 'TULIP_API',
           $3::timestamptz + random() * interval '5 days' + (k - 1) * interval '1 hour'
         FROM customers, generate_series(1, ${EVENTS_PER_CUSTOMER}) k WHERE id BETWEEN $1 AND $2 RETURNING id)
       SELECT min(id) AS lo, max(id) AS hi FROM e`,
      [ids.lo, ids.hi, day0.toISOString()],
    );
    const dv = await c.query<{ lo: string; hi: string }>(
      `WITH d AS (
         INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status, attempt_count, schedule_pos, next_attempt_at, created_at, updated_at, delivered_at)
         SELECT id, created_at, $3, 'delivered', CASE WHEN id % 5 < 3 THEN 2 ELSE 1 END, 0, NULL, created_at, created_at + interval '1 minute', created_at + interval '1 minute'
         FROM events WHERE id BETWEEN $1 AND $2 RETURNING id)
       SELECT min(id) AS lo, max(id) AS hi FROM d`,
      [ev.rows[0].lo, ev.rows[0].hi, subscriptionId],
    );
    // Attempts as Bulb writes them since migration 051 (lean rows): what only the attempt knows, its signatures and
    // the version of its subscription's sending config; the logs API rebuilds the request from the event and that.
    await c.query(
      `INSERT INTO webhook_attempts (uuid, delivery_id, delivery_created_at, subscription_id, attempt_number, started_at, duration_ms, status_code, error_code, outcome, next_attempt_at, version_id, signatures, response_body)
       SELECT NULL, d.id, d.created_at, d.subscription_id, k, d.created_at + k * interval '20 seconds', 20 + d.id % 50,
         CASE WHEN k < d.attempt_count THEN 500 ELSE 200 END, CASE WHEN k < d.attempt_count THEN 'HTTP_STATUS' END,
         CASE WHEN k < d.attempt_count THEN 'failure' ELSE 'success' END, CASE WHEN k < d.attempt_count THEN d.created_at + interval '1 minute' END,
         $3, sha256(int8send(d.id * 4 + k)) || sha256(int8send(d.id * 4 + k + 1)), CASE WHEN k < d.attempt_count THEN 'upstream error' ELSE '{}' END
       FROM webhook_deliveries d, generate_series(1, d.attempt_count) k
       WHERE d.id BETWEEN $1 AND $2`,
      [dv.rows[0].lo, dv.rows[0].hi, versionId],
    );
    log(`volume: ${b.toLocaleString('en-US')} customers (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
  // Nothing is left for the possible-duplicates refresher: its fold rate is its own row (wt-dup), and a
  // backlog of millions would load the worker during the write measurements.
  await c.query('TRUNCATE duplicate_dirty');
  await c.query('VACUUM ANALYZE');
  return (Date.now() - t0) / 1000;
}
