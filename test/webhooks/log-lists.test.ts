// The admin lists of deliveries and attempts (GET …/webhooks/deliveries, …/logs) read what they list, not the
// table: a page for a subscription, a delivery or an event type that owns few rows among tens of thousands,
// counted in buffers (pages the executor touched, not time) with the plan Bulb's statement really gets (a named
// one: the cached generic plan; an unnamed one: planned per call), statistics fresh (on PGlite, made by Bulb's
// own autovacuum pass). The answers are checked against the catch-all statement the lists were before, filter
// combination by combination, cursors included.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import type { Res } from '../helpers/server.ts';
import type { Queryable } from '../../src/db/db.ts';
import { costOf } from '../helpers/buffers.ts';
import { listDeliveries, LOG_SCAN, type ScannedPage } from '../../src/webhooks/store.ts';
import { listAttempts, type LogQuery } from '../../src/webhooks/attempts-store.ts';
import { maintain } from '../../src/db/autovacuum.ts';
import { ensurePartitions } from '../../src/partitions/maintain.ts';

const EVENTS = 12_000; // three big subscriptions get a delivery of each: 36,000 deliveries, as many attempts
const RARE_TYPE = 'customerNoteUpdate'; // 3 events
const COMMON_TYPE = 'customerCreate';

/** The lists as they were: one catch-all statement each, walking the primary key (the reference for the answers). */
async function deliveriesBefore(db: Queryable, q: { status?: string; subscription?: string; eventType?: string; limit: number }, before: string | null) {
  const r = await db.query<{ id: string }>(
    `SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_subscriptions s ON s.id = d.subscription_id
     WHERE ($1::text IS NULL OR d.status = $1) AND ($2::uuid IS NULL OR s.uuid = $2) AND ($3::text IS NULL OR e.event_type = $3)
       AND ($4::bigint IS NULL OR d.id < $4)
     ORDER BY d.id DESC LIMIT $5`,
    [q.status ?? null, q.subscription ?? null, q.eventType ?? null, before, q.limit + 1],
  );
  return r.rows.map((x) => String(x.id));
}

async function attemptsBefore(db: Queryable, q: LogQuery, before: string | null) {
  const r = await db.query<{ id: string }>(
    `SELECT a.id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
       JOIN webhook_subscriptions s ON s.id = a.subscription_id
     WHERE ($1::uuid IS NULL OR s.uuid = $1) AND ($2::text IS NULL OR e.event_type = $2) AND ($3::text IS NULL OR a.outcome = $3)
       AND ($4::timestamptz IS NULL OR a.started_at >= $4) AND ($5::timestamptz IS NULL OR a.started_at < $5)
       AND ($6::uuid IS NULL OR d.uuid = $6) AND ($7::bigint IS NULL OR a.id < $7)
     ORDER BY a.id DESC LIMIT $8`,
    [q.subscription ?? null, q.eventType ?? null, q.outcome ?? null, q.since ?? null, q.until ?? null, q.delivery ?? null, before, q.limit + 1],
  );
  return r.rows.map((x) => String(x.id));
}

/**
 * Where a client gets to following the cursor from `before` until it has limit + 1 rows or the list ends: a page
 * walked by a budget (LOG_SCAN) may be short, and goes on after its scanEnd.
 */
async function upTo<R extends { id: string }>(list: (before: string | null) => Promise<ScannedPage<R>>, limit: number, before: string | null) {
  const got: string[] = [];
  for (let at = before; ;) {
    const page = await list(at);
    assert.ok(page.length <= limit + 1);
    got.push(...page.map((r) => String(r.id)));
    if (got.length > limit || page.length > limit || page.scanEnd === undefined) return got.slice(0, limit + 1);
    at = page.scanEnd;
  }
}

/**
 * How many rows the scans of `table` (or of one of its partitions) read in a plan (EXPLAIN's JSON). A bitmap heap
 * scan reads at least the entries its bitmap index scans found (a BitmapAnd reads each range whole, whatever the
 * heap keeps): it counts the more of those and of its rows.
 */
function rowsScanned(plan: any, table: string): number {
  const name = plan['Relation Name'];
  const loops = plan['Actual Loops'] ?? 1;
  if (typeof name === 'string' && (name === table || name.startsWith(`${table}_`))) {
    const rows = plan['Actual Rows'] + (plan['Rows Removed by Filter'] ?? 0) + (plan['Rows Removed by Index Recheck'] ?? 0);
    const entries = (p: any): number => (p['Node Type'] === 'Bitmap Index Scan' ? p['Actual Rows'] * (p['Actual Loops'] ?? 1) : 0)
      + (p.Plans ?? []).reduce((n: number, c: any) => n + entries(c), 0);
    return Math.max(rows * loops, entries(plan));
  }
  return (plan.Plans ?? []).reduce((n: number, p: any) => n + rowsScanned(p, table), 0);
}

await describeEachDb('webhook log lists on large tables', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  /** Every row of a list over HTTP, following nextCursor to its end; with `short`, one page before the last was short. */
  const walkPages = async (path: string, limit: number, short = false) => {
    const seen: any[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const r: Res = await api().get(`${path}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.data);
      sizes.push(r.body.data.length);
      cursor = r.body.nextCursor;
      assert.ok(sizes.length < 200, 'ends');
    } while (cursor);
    if (short) assert.ok(sizes.slice(0, -1).some((n) => n < limit), `a short page with a cursor: ${sizes}`);
    return seen;
  };
  const subs: Record<'a' | 'b' | 'c' | 'rare' | 'u', string> = { a: '', b: '', c: '', rare: '', u: '' };
  let rareDelivery = ''; // a delivery of the rare subscription, in the middle of the table: 3 attempts
  let middleDelivery = ''; // a cursor half-way down the deliveries
  let middleAttempt = '';
  let since = '';

  it(`loads ${EVENTS} events, ${EVENTS * 3} deliveries and their attempts; statistics are made (PGlite: by Bulb's autovacuum pass)`, async () => {
    const db = ctx.tdb.db;
    // The partitions the job keeps (docs/partitioning.md): the rows land in one, the plans see them all.
    await ensurePartitions(db);
    const s = await db.query<{ uuid: string }>(
      `INSERT INTO webhook_subscriptions (url, event_types, signing_secret, is_active)
       SELECT 'https://hooks.example/' || g, ARRAY['customerCreate', 'customerUpdate', '${RARE_TYPE}'], 'not-a-secret', false
       FROM generate_series(1, 4) g ORDER BY g RETURNING uuid`,
    );
    [subs.a, subs.b, subs.c, subs.rare] = s.rows.map((r) => r.uuid);
    await db.query(
      `INSERT INTO events (event_type, resource_type, resource_uuid, source)
       SELECT CASE WHEN g % 4000 = 2000 THEN '${RARE_TYPE}' WHEN g % 2 = 0 THEN '${COMMON_TYPE}' ELSE 'customerUpdate' END,
         'Customer', gen_random_uuid(), 'TULIP_API'
       FROM generate_series(1, $1::int) g ORDER BY g`,
      [EVENTS],
    );
    // Subscription u: a delivery (delivered, one attempt) of every customerUpdate event and of 10 customerCreate ones,
    // the oldest rows of both tables: a common type it holds few of.
    const u = await db.query<{ id: string; uuid: string }>(
      `INSERT INTO webhook_subscriptions (url, event_types, signing_secret, is_active)
       VALUES ('https://hooks.example/u', ARRAY['customerUpdate'], 'not-a-secret', false) RETURNING id, uuid`,
    );
    subs.u = u.rows[0].uuid;
    await db.query(
      `INSERT INTO webhook_deliveries (event_id, subscription_id, status, attempt_count, delivered_at)
       SELECT e.id, $1, 'delivered', 1, clock_timestamp()
       FROM (SELECT id, event_type, row_number() OVER (ORDER BY id) AS n FROM events) e
       WHERE e.event_type = 'customerUpdate' OR e.n % 1200 = 600 ORDER BY e.id`,
      [u.rows[0].id],
    );
    await db.query(
      `INSERT INTO webhook_attempts (delivery_id, delivery_created_at, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code,
         outcome, request_headers, request_body)
       SELECT d.id, d.created_at, d.subscription_id, d.event_id, 1, 'https://hooks.example/u', '2026-01-01T00:00:00Z'::timestamptz + d.id * 3 * interval '1 second',
         12, 200, 'success', '{}', '{}'
       FROM webhook_deliveries d WHERE d.subscription_id = $1 ORDER BY d.id`,
      [u.rows[0].id],
    );
    // The three big subscriptions get every event; the rare one every 3000th (4 deliveries). Mostly delivered, a
    // few failed or cancelled, the newest pending.
    await db.query(
      `INSERT INTO webhook_deliveries (event_id, subscription_id, status, attempt_count, next_attempt_at, delivered_at)
       SELECT e.id, s.id, st.status, CASE WHEN st.status = 'pending' THEN 0 ELSE 1 END,
         CASE WHEN st.status = 'pending' THEN clock_timestamp() END, CASE WHEN st.status = 'delivered' THEN clock_timestamp() END
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM events) e
       JOIN (SELECT id, row_number() OVER (ORDER BY id) AS k FROM webhook_subscriptions) s ON s.k <= 3 OR (s.k = 4 AND e.n % 3000 = 1500)
       CROSS JOIN LATERAL (SELECT CASE WHEN e.n > $1::int - 30 THEN 'pending' WHEN (e.n + s.k) % 97 = 0 THEN 'failed'
         WHEN (e.n + s.k) % 401 = 0 THEN 'cancelled' ELSE 'delivered' END AS status) st
       ORDER BY e.id, s.id`,
      [EVENTS],
    );
    // One attempt per delivery that was attempted, three for the rare subscription's.
    await db.query(
      `INSERT INTO webhook_attempts (delivery_id, delivery_created_at, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code,
         error_code, outcome, request_headers, request_body)
       SELECT d.id, d.created_at, d.subscription_id, d.event_id, n, 'https://hooks.example/', '2026-01-01T00:00:00Z'::timestamptz + (d.id * 3 + n) * interval '1 second', 12,
         CASE WHEN d.status = 'failed' AND n = 1 THEN 500 ELSE 200 END, CASE WHEN d.status = 'failed' AND n = 1 THEN 'HTTP_STATUS' END,
         CASE WHEN d.status = 'failed' AND n = 1 THEN 'failure' ELSE 'success' END, '{}', '{}'
       FROM webhook_deliveries d CROSS JOIN generate_series(1, 3) n
       WHERE d.status <> 'pending' AND d.subscription_id <> $1 AND (n = 1 OR d.subscription_id = (SELECT id FROM webhook_subscriptions ORDER BY id OFFSET 3 LIMIT 1))
       ORDER BY d.id, n`,
      [u.rows[0].id],
    );
    const mid = await db.query<{ rare: string; middle: string; attempt: string; since: string }>(
      `SELECT (SELECT d.uuid FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
                WHERE s.uuid = $1 ORDER BY d.id OFFSET 1 LIMIT 1) AS rare,
         (SELECT min(id) + (max(id) - min(id)) / 2 FROM webhook_deliveries)::text AS middle,
         (SELECT min(id) + (max(id) - min(id)) / 2 FROM webhook_attempts)::text AS attempt,
         (SELECT started_at FROM webhook_attempts ORDER BY id DESC OFFSET 40 LIMIT 1) AS since`,
      [subs.rare],
    );
    rareDelivery = mid.rows[0].rare;
    middleDelivery = mid.rows[0].middle;
    middleAttempt = mid.rows[0].attempt;
    since = new Date(mid.rows[0].since).toISOString();
    if (ctx.backend === 'pglite') {
      await db.query('SELECT pg_stat_force_next_flush()');
      const done = await maintain(db);
      // events and webhook_deliveries are partitioned (docs/partitioning.md): their partitions are the tables analyzed.
      for (const t of ['events', 'webhook_deliveries', 'webhook_attempts']) assert.ok(done.analyzed.some((n) => n === t || n.startsWith(`${t}_`)), JSON.stringify(done));
    } else {
      await db.exec('ANALYZE events, webhook_subscriptions, webhook_deliveries, webhook_attempts'); // autovacuum's job
    }
  });

  it('answers every filter combination as the catch-all statement did, page by page (a budgeted walk followed to a page)', async () => {
    const db = ctx.tdb.db;
    // The budget as shipped, and a small one: a common type's pages then stop short, many times, and the cursor
    // (scanEnd) goes on; the rows a client gets, in order, are the catch-all's.
    for (const budget of [LOG_SCAN.budget, 300]) {
      const shipped = LOG_SCAN.budget;
      LOG_SCAN.budget = budget;
      try {
        for (const status of [undefined, 'pending', 'delivered', 'failed', 'cancelled']) {
          for (const subscription of [undefined, subs.a, subs.rare, subs.u, '00000000-0000-4000-8000-000000000000']) {
            for (const eventType of [undefined, COMMON_TYPE, RARE_TYPE, 'customerMerge']) {
              for (const before of [null, middleDelivery]) {
                const q = { status, subscription, eventType, limit: 7 };
                const got = await upTo((at) => listDeliveries(db, q, at), q.limit, before);
                assert.deepEqual(got, await deliveriesBefore(db, q, before), JSON.stringify({ q, before, budget }));
              }
            }
          }
        }
        for (const subscription of [undefined, subs.b, subs.rare, subs.u]) {
          for (const eventType of [undefined, COMMON_TYPE, RARE_TYPE]) {
            for (const outcome of [undefined, 'failure']) {
              for (const delivery of [undefined, rareDelivery]) {
                for (const dated of [{}, { since }, { until: since }]) {
                  for (const before of [null, middleAttempt]) {
                    const q = { subscription, eventType, outcome, delivery, ...dated, limit: 7 };
                    const got = await upTo((at) => listAttempts(db, q, at), q.limit, before);
                    assert.deepEqual(got, await attemptsBefore(db, q, before), JSON.stringify({ q, before, budget }));
                  }
                }
              }
            }
          }
        }
      } finally {
        LOG_SCAN.budget = shipped;
      }
    }
  });

  it('pages through a rare subscription, a rare event type and a delivery over HTTP (cursors as before)', async () => {
    const walk = (path: string, limit: number) => walkPages(path, limit);
    const rare = await walk(`/integrations/webhooks/deliveries?subscription=${subs.rare}`, 3);
    assert.equal(rare.length, 4);
    assert.ok(rare.every((d) => d.subscriptionUuid === subs.rare));
    assert.deepEqual(rare.map((d) => d.createdAt), rare.map((d) => d.createdAt).sort().reverse(), 'newest first');
    const typed = await walk(`/integrations/webhooks/deliveries?eventType=${RARE_TYPE}`, 2);
    assert.equal(typed.length, 9);
    assert.ok(typed.every((d) => d.eventType === RARE_TYPE));
    const logs = await walk(`/integrations/webhooks/logs?delivery=${rareDelivery}`, 2);
    assert.deepEqual(logs.map((a) => a.attemptNumber), [3, 2, 1]);
    const typedLogs = await walk(`/integrations/webhooks/logs?eventType=${RARE_TYPE}`, 4);
    assert.equal(typedLogs.length, 9);
    const none = await api().get(`/integrations/webhooks/deliveries?subscription=00000000-0000-4000-8000-000000000000`);
    assert.deepEqual(none.body, { data: [], nextCursor: null });
  });

  const few = async (what: string, call: (q: Queryable) => Promise<unknown>, max: number) => {
    const { buffers, plans, statements } = await costOf(ctx.tdb.db, call);
    console.log(`# [${ctx.backend}] ${what}: ${buffers} buffers, ${statements} statement(s)`);
    assert.ok(buffers < max, `${what}: ${buffers} buffers: ${plans}`);
  };

  it("lists a rare subscription's deliveries and attempts reading those, not the table", async () => {
    await few('deliveries?subscription=rare', (q) => listDeliveries(q, { subscription: subs.rare, limit: 50 }, null), 60);
    await few('deliveries?subscription=rare&status=failed', (q) => listDeliveries(q, { subscription: subs.rare, status: 'failed', limit: 50 }, null), 60);
    await few('logs?subscription=rare', (q) => listAttempts(q, { subscription: subs.rare, limit: 50 }, null), 150);
  });

  it("lists a delivery's attempts reading those, not the table", async () => {
    await few('logs?delivery=…', (q) => listAttempts(q, { delivery: rareDelivery, limit: 50 }, null), 60);
  });

  it('lists a rare event type reading its events, not the table', async () => {
    await few(`deliveries?eventType=${RARE_TYPE}`, (q) => listDeliveries(q, { eventType: RARE_TYPE, limit: 50 }, null), 150);
    await few(`logs?eventType=${RARE_TYPE}`, (q) => listAttempts(q, { eventType: RARE_TYPE, limit: 50 }, null), 200);
    await few(`deliveries?eventType=${RARE_TYPE}&subscription=a`, (q) => listDeliveries(q, { eventType: RARE_TYPE, subscription: subs.a, limit: 50 }, null), 150);
    await few(`logs?eventType=${RARE_TYPE}&subscription=b`, (q) => listAttempts(q, { eventType: RARE_TYPE, subscription: subs.b, limit: 50 }, null), 200);
  });

  it('still reads about a page for the common cases (no filter, a common type, a big subscription, failed ones)', async () => {
    await few('deliveries', (q) => listDeliveries(q, { limit: 50 }, null), 400);
    await few(`deliveries?eventType=${COMMON_TYPE}`, (q) => listDeliveries(q, { eventType: COMMON_TYPE, limit: 50 }, null), 600);
    await few('deliveries?subscription=a', (q) => listDeliveries(q, { subscription: subs.a, limit: 50 }, null), 400);
    await few('deliveries?status=failed', (q) => listDeliveries(q, { status: 'failed', limit: 50 }, null), 400);
    await few('logs', (q) => listAttempts(q, { limit: 50 }, null), 400);
  });

  it("pages a subscription's few rows of a common type over HTTP across budget boundaries: each once, in order, short pages carrying the cursor", async () => {
    const shipped = LOG_SCAN.budget;
    LOG_SCAN.budget = 700; // u's 6,010 deliveries (and attempts): 9 budgets, its 10 customerCreate ones spread over them
    try {
      const walk = (path: string) => walkPages(path, 3, true);
      const db = ctx.tdb.db;
      const deliveries = await walk(`/integrations/webhooks/deliveries?subscription=${subs.u}&eventType=${COMMON_TYPE}`);
      const all = await deliveriesBefore(db, { subscription: subs.u, eventType: COMMON_TYPE, limit: 100 }, null);
      assert.equal(all.length, 10);
      const ids = await db.query<{ uuid: string }>(`SELECT uuid FROM webhook_deliveries WHERE id = ANY($1::bigint[]) ORDER BY id DESC`, [all]);
      assert.deepEqual(deliveries.map((d) => d.uuid), ids.rows.map((r) => r.uuid), 'every one once, newest first');
      assert.ok(deliveries.every((d) => d.eventType === COMMON_TYPE && d.subscriptionUuid === subs.u));
      const logs = await walk(`/integrations/webhooks/logs?subscription=${subs.u}&eventType=${COMMON_TYPE}`);
      const attempts = await attemptsBefore(db, { subscription: subs.u, eventType: COMMON_TYPE, limit: 100 }, null);
      assert.equal(attempts.length, 10);
      assert.deepEqual(logs.map((a) => a.deliveryUuid), ids.rows.map((r) => r.uuid), 'one attempt each, the last written first');
      // None match (u has no failed delivery): the failed deliveries' range ends within the budget (369 of them), so
      // the walk takes it, not u's, and one page says so.
      const none = await api().get(`/integrations/webhooks/deliveries?subscription=${subs.u}&eventType=${COMMON_TYPE}&status=failed&limit=3`);
      assert.deepEqual(none.body, { data: [], nextCursor: null });
    } finally {
      LOG_SCAN.budget = shipped;
    }
  });

  it("pages a subscription's failed deliveries and failed attempts over HTTP across budget boundaries: each once, in order", async () => {
    const db = ctx.tdb.db;
    const shipped = LOG_SCAN.budget;
    const walk = (path: string, limit: number) => walkPages(path, limit, true);
    try {
      // ~370 failed deliveries, ~124 of them a's: at a budget of 100 neither range ends within it, the failed ones'
      // reaches furthest back (a's 100 newest span 100 events), a third of its rows are a's.
      LOG_SCAN.budget = 100;
      const failed = await walk(`/integrations/webhooks/deliveries?subscription=${subs.a}&status=failed`, 40);
      const all = await deliveriesBefore(db, { subscription: subs.a, status: 'failed', limit: 1000 }, null);
      assert.ok(all.length > 100, `${all.length}`);
      const ids = await db.query<{ uuid: string }>(`SELECT uuid FROM webhook_deliveries WHERE id = ANY($1::bigint[]) ORDER BY id DESC`, [all]);
      assert.deepEqual(failed.map((d) => d.uuid), ids.rows.map((x) => x.uuid), 'every one once, newest first');
      assert.ok(failed.every((d) => d.status === 'failed' && d.subscriptionUuid === subs.a));
      // b's ~124 failed attempts among its 12,000: pages of 700 attempts, ~7 failed in each.
      LOG_SCAN.budget = 700;
      const logs = await walk(`/integrations/webhooks/logs?subscription=${subs.b}&outcome=failure`, 10);
      const attempts = await attemptsBefore(db, { subscription: subs.b, outcome: 'failure', limit: 1000 }, null);
      assert.ok(attempts.length > 100, `${attempts.length}`);
      assert.equal(logs.length, attempts.length);
      assert.ok(logs.every((a) => a.outcome === 'failure' && a.subscriptionUuid === subs.b));
      assert.equal(new Set(logs.map((a) => a.uuid)).size, logs.length, 'each once');
    } finally {
      LOG_SCAN.budget = shipped;
    }
  });

  /** At a budget, the rows a call's plans read of `table` (the most of one statement) and its buffers stay under its bounds. */
  const bounded = async (budget: number, what: string, table: string, call: (q: Queryable) => Promise<unknown>, perRow: number) => {
    const { buffers, plans, statements } = await costOf(ctx.tdb.db, call);
    // Per statement (the budget's edge, read from the index; the page, from it on).
    const read = Math.max(...plans.split('\n').map((p) => rowsScanned(JSON.parse(p), table)));
    console.log(`# [${ctx.backend}] ${what} (budget ${budget}): ${read} rows of ${table}, ${buffers} buffers, ${statements} statement(s)`);
    assert.ok(read <= budget + 1, `${what}: ${read} rows read: ${plans}`);
    assert.ok(buffers < budget * perRow + 200, `${what}: ${buffers} buffers: ${plans}`);
  };

  it('reads at most a budget of a subscription per page for a common type it holds few of (not the whole subscription)', async () => {
    // Subscription u has 6,010 deliveries and attempts, 10 of customerCreate: the walk joined each of them to its
    // event (5–6 s at 630,000; a probe, 2026-11-29). Now a page reads LOG_SCAN.budget rows of it at most, whatever
    // its size: the rows the plan's scans of the table read, and the buffers, stay under bounds set by the budget.
    const shipped = LOG_SCAN.budget;
    try {
      for (const budget of [shipped, 500]) {
        LOG_SCAN.budget = budget;
        await bounded(budget, `deliveries?subscription=u&eventType=${COMMON_TYPE}`, 'webhook_deliveries',
          (q) => listDeliveries(q, { subscription: subs.u, eventType: COMMON_TYPE, limit: 50 }, null), 6);
        await bounded(budget, `deliveries?subscription=u&eventType=${COMMON_TYPE}&status=delivered`, 'webhook_deliveries',
          (q) => listDeliveries(q, { subscription: subs.u, eventType: COMMON_TYPE, status: 'delivered', limit: 50 }, null), 6);
        await bounded(budget, `logs?subscription=u&eventType=${COMMON_TYPE}`, 'webhook_attempts',
          (q) => listAttempts(q, { subscription: subs.u, eventType: COMMON_TYPE, limit: 50 }, null), 12);
        await bounded(budget, `logs?subscription=u&eventType=${COMMON_TYPE}&outcome=failure`, 'webhook_attempts',
          (q) => listAttempts(q, { subscription: subs.u, eventType: COMMON_TYPE, outcome: 'failure', limit: 50 }, null), 12);
      }
    } finally {
      LOG_SCAN.budget = shipped;
    }
  });

  it('reads at most a budget per page for a subscription and a status, an outcome, since or until without a type (not the whole range)', async () => {
    // No index holds a subscription's deliveries of a status, or attempts of an outcome or a time, in id order: the
    // walk of one range tested the rest on each row, u's 6,010 rows for a status or an outcome it has none of, every
    // attempt newer than an until. Now the budget bounds each page; a subscription and a status walk the range whose
    // budget reaches furthest back (here the status's, which ends within it: the page is whole).
    const db = ctx.tdb.db;
    const r = await db.query<{ oldest: string; after: string; early: string }>(
      `SELECT (SELECT min(a.id) FROM webhook_attempts a WHERE a.subscription_id <> (SELECT id FROM webhook_subscriptions WHERE uuid = $1))::text AS oldest,
         (SELECT max(a.started_at) + interval '1 second' FROM webhook_attempts a WHERE a.subscription_id = (SELECT id FROM webhook_subscriptions WHERE uuid = $1)) AS after,
         (SELECT started_at FROM webhook_attempts ORDER BY id OFFSET 100 LIMIT 1) AS early`,
      [subs.u],
    );
    const oldest = r.rows[0].oldest; // u's attempts are all older: a cursor that leaves only them
    const after = new Date(r.rows[0].after).toISOString(); // after u's last attempt: none of u's match
    const early = new Date(r.rows[0].early).toISOString(); // until: the 100 oldest attempts match
    // Every shape is measured, then the ones over their bounds named.
    const over: string[] = [];
    const each = async (...args: Parameters<typeof bounded>) => bounded(...args).catch((err) => void over.push(`${args[1]} (budget ${args[0]}): ${String(err.message).slice(0, 80)}`));
    const shipped = LOG_SCAN.budget;
    try {
      for (const budget of [shipped, 500]) {
        LOG_SCAN.budget = budget;
        await each(budget, 'deliveries?subscription=u&status=failed', 'webhook_deliveries',
          (q) => listDeliveries(q, { subscription: subs.u, status: 'failed', limit: 50 }, null), 6);
        await each(budget, 'deliveries?subscription=u&status=delivered', 'webhook_deliveries',
          (q) => listDeliveries(q, { subscription: subs.u, status: 'delivered', limit: 50 }, null), 6);
        await each(budget, 'deliveries?subscription=rare&status=delivered', 'webhook_deliveries',
          (q) => listDeliveries(q, { subscription: subs.rare, status: 'delivered', limit: 50 }, null), 6);
        await each(budget, 'deliveries?subscription=a&status=pending (before the middle)', 'webhook_deliveries',
          (q) => listDeliveries(q, { subscription: subs.a, status: 'pending', limit: 50 }, middleDelivery), 6);
        await each(budget, 'logs?subscription=u&outcome=failure', 'webhook_attempts',
          (q) => listAttempts(q, { subscription: subs.u, outcome: 'failure', limit: 50 }, null), 12);
        await each(budget, "logs?outcome=failure (before u's attempts)", 'webhook_attempts',
          (q) => listAttempts(q, { outcome: 'failure', limit: 50 }, oldest), 12);
        await each(budget, "logs?subscription=u&since=(after u's last)", 'webhook_attempts',
          (q) => listAttempts(q, { subscription: subs.u, since: after, limit: 50 }, null), 12);
        await each(budget, 'logs?until=(the 100th oldest)', 'webhook_attempts',
          (q) => listAttempts(q, { until: early, limit: 50 }, null), 12);
      }
    } finally {
      LOG_SCAN.budget = shipped;
    }
    assert.deepEqual(over, []);
  });

  it('prunes a dated walk to the partitions that hold since and until, by their bounds (answers as the catch-all, every row once)', async () => {
    // Attempts in the day partitions ahead (the rest of the table is in the legacy one): four a day, three days.
    const db = ctx.tdb.db;
    const day = await db.query<{ d: string }>(`SELECT (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days')::text AS d`);
    const first = new Date(day.rows[0].d);
    await db.query(
      `INSERT INTO webhook_attempts (delivery_id, delivery_created_at, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code,
         outcome, request_headers, request_body)
       SELECT d.id, d.created_at, d.subscription_id, d.event_id, 4, 'https://hooks.example/', $2::timestamptz + g * interval '6 hours' + interval '1 hour', 12, 200,
         CASE WHEN g % 2 = 0 THEN 'failure' ELSE 'success' END, '{}', '{}'
       FROM webhook_deliveries d CROSS JOIN generate_series(0, 11) g WHERE d.uuid = $1 ORDER BY g DESC`,
      [rareDelivery, first.toISOString()],
    );
    const at = (hours: number) => new Date(first.getTime() + hours * 3_600_000).toISOString();
    // since in the second day, until in the third: the walk reads those two days' partitions, nothing else.
    const { plans } = await costOf(db, (q) => listAttempts(q, { since: at(30), until: at(50), limit: 50 }, null));
    const read = [...plans.matchAll(/"Relation Name":"(webhook_attempts_[^"]+)"/g)].map((m) => m[1]);
    const days = [1, 2].map((n) => `webhook_attempts_p${new Date(first.getTime() + n * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '')}`);
    const shipped = LOG_SCAN.budget;
    try {
      assert.deepEqual([...new Set(read)].sort(), days, plans);
      for (const budget of [shipped, 2]) {
        LOG_SCAN.budget = budget;
        for (const dated of [{ since: at(30) }, { until: at(40) }, { since: at(13), until: at(55) }, { since: at(24), until: at(48) }]) {
          for (const subscription of [undefined, subs.rare]) {
            for (const outcome of [undefined, 'failure']) {
              const q = { subscription, outcome, ...dated, limit: 3 };
              for (const before of [null, middleAttempt]) {
                const got = await upTo((c) => listAttempts(db, q, c), q.limit, before);
                assert.deepEqual(got, await attemptsBefore(db, q, before), JSON.stringify({ q, before, budget }));
              }
            }
          }
        }
      }
    } finally {
      LOG_SCAN.budget = shipped;
      await db.query(`DELETE FROM webhook_attempts WHERE started_at >= $1::timestamptz`, [first.toISOString()]);
    }
  });
});
