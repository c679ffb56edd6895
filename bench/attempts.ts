// Attempt row size (issue 25 item 3; docs/delivery.md "What an attempt row holds"): bytes per webhook_attempts row,
// table + indexes (pg_total_relation_size / rows after VACUUM), for the same attempts written as before migration 051
// (a random uuid, the event, the request's url, headers and body in every row: that INSERT) and lean (recordResults:
// no uuid, no event, a version, the signatures, the timestamp's skew). Both fills claim (claimLanes) and build
// (buildRequest) as the worker does; the lean one takes the lean form and versionIds as the dispatcher does. Then the
// result write is timed both ways (recordResults with the request lean or whole), 5 alternating rounds of 20,000. Over N deliveries (100,000; --quick 20,000) to 10 subscriptions (BEARER, BASIC and no auth), 1 in 10
// attempts failing with a 500. PostgreSQL, and the sizes on PGlite too. `npm run bench -- --only attempts`.
import crypto from 'node:crypto';
import os from 'node:os';
import { PgDb } from '../src/db/pg.ts';
import { PgliteDb } from '../src/db/pglite.ts';
import type { Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { AesGcmBox } from '../src/secrets/box.ts';
import { installSecretBox } from '../src/secrets/active.ts';
import { insertSubscription, type AuthMethodName } from '../src/webhooks/store.ts';
import { claimLanes, recordResults, type AttemptResult, type StoredRequest } from '../src/webhooks/queue-store.ts';
import { buildRequest } from '../src/webhooks/request.ts';
import { leanRequest } from '../src/webhooks/attempt-request.ts';
import { versionIds } from '../src/webhooks/versions-store.ts';
import { createPgDatabase, log, median, pgAvailable, round, type Row } from './lib.ts';

installSecretBox(new AesGcmBox(crypto.randomBytes(32)));

const SUBS = 10;
const HMAC = 'X-Tulip-Hmac-256';
const POLICY = { defaultSchedule: [5, 20, 125], unitMs: 1000 };

export async function runAttemptsBench(opts: { quick?: boolean } = {}): Promise<Row[]> {
  if (!(await pgAvailable())) throw new Error('PostgreSQL is needed for the attempts bench');
  const total = opts.quick ? 20_000 : 100_000;
  const cmd = `npm run bench -- --only attempts${opts.quick ? ' --quick' : ''}`;
  const pgdb = await createPgDatabase('attempts');
  const db = new PgDb(pgdb.url, 2);
  let pg: Measured;
  try {
    pg = await measureOn(db, total, true);
  } finally {
    await db.close();
    await pgdb.drop();
  }
  log('attempts: PGlite (sizes only)');
  const lite = await PgliteDb.open('memory://');
  let pglite: Measured;
  try {
    pglite = await measureOn(lite, total, false);
  } finally {
    await lite.close();
  }
  const { whole, lean, times } = pg;
  const wholeUs = median(times.whole);
  const leanUs = median(times.lean);
  const note = `${lean.rows} attempts (1 in 10 a 500), ${SUBS} subscriptions; after VACUUM ANALYZE. Lean: table ${round(lean.heap, 0)} B + indexes ${round(lean.idx, 0)} B per row (${lean.indexes}); as before: ${round(whole.heap, 0)} + ${round(whole.idx, 0)} (${whole.indexes}). Load average while measured: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}.`;
  return [
    { what: `webhook_attempts bytes per row, table + indexes (${lean.rows} attempts, lean)`, value: round(lean.total, 0), unit: 'B', baseline: round(whole.total, 0), ratio: round(lean.total / whole.total, 2), goal: `≤ 300 B: ${lean.total <= 300 ? 'met' : 'missed'}`, command: cmd, note },
    {
      what: `the same on PGlite`, value: round(pglite.lean.total, 0), unit: 'B', baseline: round(pglite.whole.total, 0), ratio: round(pglite.lean.total / pglite.whole.total, 2),
      goal: `≤ 300 B: ${pglite.lean.total <= 300 ? 'met' : 'missed'}`, command: cmd,
      note: `PGlite: table ${round(pglite.lean.heap, 0)} B + indexes ${round(pglite.lean.idx, 0)} B per row (${pglite.lean.indexes}); as before: ${round(pglite.whole.heap, 0)} + ${round(pglite.whole.idx, 0)}.`,
    },
    {
      what: `result write (recordResults, batches of 500) per attempt: lean vs the request whole`, value: round(leanUs, 0), unit: 'µs', baseline: round(wholeUs, 0),
      ratio: round(leanUs / wholeUs, 2), goal: `≤ 1.1 × baseline (not slower, within the spread of rounds): ${leanUs <= 1.1 * wholeUs ? 'met' : 'missed'}`, command: cmd,
      note: `the same statement (deliveries updated, attempts inserted) both ways, PostgreSQL, 5 alternating rounds of 20,000 attempts, medians (whole: ${times.whole.map((x) => round(x, 0)).join(', ')} µs; lean: ${times.lean.map((x) => round(x, 0)).join(', ')} µs); whole writes url, headers (jsonb) and body as before.`,
    },
  ];
}

interface Size { rows: number; total: number; heap: number; idx: number; indexes: string }
interface Measured { whole: Size; lean: Size; times: Record<'whole' | 'lean', number[]> }

/** Both fills on one database (and, when `timed`, the rounds timing the result write). */
async function measureOn(db: Db, total: number, timed: boolean): Promise<Measured> {
  {
    await migrate(db);
    const subs: string[] = [];
    for (let i = 0; i < SUBS; i++) {
      const auth: AuthMethodName = i % 3 === 0 ? 'BEARER' : i % 3 === 1 ? 'BASIC' : 'NONE';
      const s = await insertSubscription(db, {
        url: `https://hooks.example.com/bulb/customer-events/${i}`, eventTypes: ['customerCreate'], isActive: true, authMethod: auth,
        bearerToken: auth === 'BEARER' ? `tok-${crypto.randomBytes(12).toString('hex')}` : null,
        basicUsername: auth === 'BASIC' ? 'bulb' : null, basicPassword: auth === 'BASIC' ? crypto.randomBytes(9).toString('base64url') : null,
        webhookVersion: '2025-04', maxInFlight: 64,
      }, `whsec_${crypto.randomBytes(32).toString('base64')}`);
      subs.push(s.id);
    }
    log(`attempts: ${total} events and deliveries`);
    await db.query(
      `WITH ev AS (
         INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
         SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'ext-' || lpad(g::text, 8, '0'), 'TULIP_API' FROM generate_series(1, $1) g
         RETURNING id
       )
       INSERT INTO webhook_deliveries (event_id, subscription_id)
       SELECT ev.id, ($2::bigint[])[1 + ev.id % $3] FROM ev`,
      [total, subs, SUBS],
    );
    const measure = async () => {
      await db.exec('VACUUM ANALYZE webhook_attempts');
      const r = await db.query<{ rows: string; total: string; heap: string; idx: string }>(
        `SELECT count(*) AS rows, pg_total_relation_size('webhook_attempts') AS total, pg_table_size('webhook_attempts') AS heap,
           pg_indexes_size('webhook_attempts') AS idx FROM webhook_attempts`,
      );
      const each = await db.query<{ name: string; size: string }>(
        `SELECT c.relname AS name, pg_relation_size(c.oid) AS size FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'webhook_attempts'::regclass ORDER BY 1`,
      );
      const x = r.rows[0];
      const indexes = each.rows.map((e) => `${e.name.replace('webhook_attempts_', '')} ${round(Number(e.size) / Number(x.rows), 0)}`).join(', ');
      log(`attempts: indexes ${indexes}`);
      const rows = Number(x.rows);
      return { rows, total: Number(x.total) / rows, heap: Number(x.heap) / rows, idx: Number(x.idx) / rows, indexes };
    };
    /** before: the INSERT of before; whole: recordResults with the request whole (timing only); lean: recordResults, lean. */
    const fill = async (mode: 'before' | 'whole' | 'lean', n = total) => {
      const lean = mode === 'lean';
      let writeMs = 0;
      await db.exec(`TRUNCATE webhook_attempts`);
      await db.exec(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), attempt_count = 0, schedule_pos = 0, locked_until = NULL, lock_token = NULL`);
      await db.exec(`VACUUM ANALYZE webhook_deliveries`);
      let written = 0;
      for (;;) {
        const token = crypto.randomUUID();
        const { claimed } = await claimLanes(db, subs.map((s) => ({ subscriptionId: s, room: 256, held: 0 })), 600_000, token);
        if (claimed.length === 0) break;
        claimed.splice(n - written); // exactly n attempts
        const rs = claimed.map((c, i) => {
          const startedAt = Date.now();
          const req = buildRequest(c, HMAC, startedAt);
          const ok = (written + i) % 10 !== 0;
          const l = lean ? leanRequest(req.logHeaders, req.body, c, { subscriptionId: c.subscription_id, url: c.url, webhookVersion: c.webhook_version }, HMAC, startedAt) : null;
          if (lean && !l) throw new Error('a request that does not rebuild');
          return {
            r: {
              deliveryId: c.id, deliveryCreatedAt: c.created_at, lockToken: token, subscriptionId: c.subscription_id, attemptNumber: c.attempt_count + 1,
              startedAt: new Date(startedAt).toISOString(), durationMs: 20 + ((written + i) % 80), statusCode: ok ? 200 : 500,
              errorCode: ok ? null : 'HTTP_STATUS', ok, schedulePos: c.schedule_pos, retryAfterMs: null,
              responseBody: ok ? '{"ok":true}' : 'Internal Server Error', request: null as unknown as StoredRequest,
            } satisfies AttemptResult,
            stored: l ? { config: l.config, ...l.signed } : { url: c.url, headers: req.logHeaders, body: req.body },
          };
        });
        const leanOnes = rs.flatMap((x) => ('config' in x.stored ? [x.stored.config] : []));
        const ids = await versionIds(db, leanOnes);
        let k = 0;
        const batch = rs.map(({ r, stored }) => ({
          ...r,
          request: 'config' in stored ? { versionId: ids[k++], signatures: stored.signatures, timestampSkew: stored.timestampSkew } : stored,
        }));
        for (let i = 0; i < batch.length; i += 500) {
          const t0 = performance.now();
          if (mode === 'before') await insertAsBefore(db, batch.slice(i, i + 500), claimed);
          else await recordResults(db, batch.slice(i, i + 500), [], 24, POLICY);
          writeMs += performance.now() - t0;
        }
        written += batch.length;
        if (written >= n) break;
      }
      return { ...(await measure()), writeUs: (writeMs * 1000) / written };
    };
    log('attempts: as before migration 051');
    const whole = await fill('before');
    log(`attempts: whole ${JSON.stringify(whole)}`);
    log('attempts: lean');
    const lean = await fill('lean');
    log(`attempts: lean ${JSON.stringify(lean)}`);
    // The write's cost: 5 rounds of 20,000 attempts each way, alternating, the median of each (a shared machine).
    const times: Record<'whole' | 'lean', number[]> = { whole: [], lean: [] };
    for (let round = 0; timed && round < 5; round++) {
      for (const mode of ['whole', 'lean'] as const) times[mode].push((await fill(mode, Math.min(total, 20_000))).writeUs);
    }
    if (timed) log(`attempts: write per attempt (µs): whole ${times.whole.map((x) => x.toFixed(0))}, lean ${times.lean.map((x) => x.toFixed(0))}`);
    return { whole, lean, times };
  }
}

/** The attempt rows as recordResults wrote them before migration 051: a random uuid, the event, the request whole. */
async function insertAsBefore(db: Db, rs: AttemptResult[], claimed: { id: string; event_id: string }[]): Promise<void> {
  const eventOf = new Map(claimed.map((c) => [c.id, c.event_id]));
  await db.query(
    `INSERT INTO webhook_attempts (delivery_id, subscription_id, event_id, attempt_number, url, started_at, duration_ms, status_code,
       error_code, outcome, next_attempt_at, request_headers, request_body, response_body)
     SELECT r.delivery_id, r.subscription_id, r.event_id, r.attempt_number, r.url, r.started_at, r.duration_ms, r.status_code,
       r.error_code, CASE WHEN r.ok THEN 'success' ELSE 'failure' END, CASE WHEN NOT r.ok THEN r.started_at + interval '5 seconds' END,
       r.request_headers, r.request_body, r.response_body
     FROM json_to_recordset($1::json) AS r(delivery_id bigint, subscription_id bigint, event_id bigint, attempt_number int, url text,
       started_at timestamptz, duration_ms int, status_code int, error_code text, ok boolean, request_headers jsonb, request_body text, response_body text)`,
    [JSON.stringify(rs.map((x) => {
      const w = x.request as { url: string; headers: Record<string, string>; body: string };
      return {
        delivery_id: x.deliveryId, subscription_id: x.subscriptionId, event_id: eventOf.get(x.deliveryId), attempt_number: x.attemptNumber, url: w.url,
        started_at: x.startedAt, duration_ms: x.durationMs, status_code: x.statusCode, error_code: x.errorCode, ok: x.ok,
        request_headers: w.headers, request_body: w.body, response_body: x.responseBody,
      };
    }))],
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runAttemptsBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(rows, null, 2));
}
