// A budgeted log walk (docs/delivery.md "Log lists") is two statements: scanEdge, then the page from that edge on.
// Rows that entered the range between the two pushed the edge's rows out of the page's LIMIT, yet the cursor went
// on below the edge: those rows were never listed (the review of 2026-11-30). Simulated by inserting deliveries right
// after the edge statement; every failed delivery must still be listed once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends, freshDb } from '../helpers/db.ts';
import { listDeliveries, LOG_SCAN } from '../../src/webhooks/store.ts';

for (const backend of await backends()) describe(`a budgeted log walk beside writers [${backend}]`, () => it('rows written between the edge and the page push no row out of the walk', async () => {
  const tdb = await freshDb(backend);
  const shipped = LOG_SCAN.budget;
  const db = tdb.db;
  try {
    const [a, b] = (await db.query<{ id: string; uuid: string }>(
      `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) SELECT 'https://h.example/' || g, ARRAY['customerCreate'], 'x'
       FROM generate_series(1, 2) g RETURNING id, uuid`)).rows;
    const ev = (await db.query<{ id: string; created_at: string }>(
      `INSERT INTO events (event_type, resource_type, resource_uuid, source) VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'X') RETURNING id, created_at`)).rows[0];
    const ins = (sub: string, status: string, n: number) => db.query(
      `INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id, status) SELECT $1, $2, $3, $4 FROM generate_series(1, $5)`,
      [ev.id, ev.created_at, sub, status, n]);
    // Subscription a: 3 failed (oldest), then 27 delivered. Many failed of b, so that a's range is walked.
    await ins(a.id, 'failed', 3);
    await ins(a.id, 'delivered', 27);
    await ins(b.id, 'failed', 40);
    LOG_SCAN.budget = 28; // a's range: 30 rows; edge = its 28th newest = the newest of a's 3 failed... (ids 1..3 failed)
    const q = { subscription: a.uuid, status: 'failed', limit: 50 };
    const walk = async (qq: any) => {
      const got: string[] = [];
      let at: string | null = null;
      for (let i = 0; i < 20; i++) {
        const page = await listDeliveries(qq, q, at);
        got.push(...page.map((r) => String(r.id)));
        if (page.scanEnd === undefined) break;
        at = page.scanEnd;
      }
      return got;
    };
    const quiet = await walk(db);
    assert.equal(quiet.length, 3);
    // The same walk, 3 deliveries of `a` written between the edge statement and the page statement.
    let once = true;
    const racing = {
      query: async (sql: string, params?: unknown[], name?: string) => {
        const r = await db.query(sql as any, params as any, name as any);
        if (once && typeof name === 'string' && name.startsWith('webhook_log_edge') && sql.includes('subscription_id')) { once = false; await ins(a.id, 'pending', 3); }
        return r;
      },
    };
    const raced = await walk(racing as any);
    assert.deepEqual(raced, quiet, 'with 3 deliveries written meanwhile');
  } finally {
    LOG_SCAN.budget = shipped;
    await tdb.close();
  }
}));
