// A failover under load: a primary with a synchronous streaming standby (clusters of the test's own), Bulb (API and
// worker) reaching it through a TCP switch, creates, merges and webhook deliveries running; the primary dies
// (immediate stop), the standby is promoted and the switch points at it, as a managed service's DNS switch does.
// Afterwards: every acknowledged write is on the new primary, every event of an acknowledged create is delivered at
// least once, the process reconnected by itself (LISTEN included), and during the switch the API answered 503 with
// Retry-After (never a 500, never a hang). Zero loss needs synchronous replication: docs/operations.md, Failover.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { TEST_SECRET_KEY } from '../helpers/db.ts';
import { clustersAvailable, primaryCluster, startSwitch, type Cluster, type Pair, type Switch } from '../helpers/cluster.ts';
import { startBulb, type Proc } from '../helpers/process.ts';
import { startReceiver, waitFor, type Receiver } from '../webhooks/receiver.ts';

const KEY = 'failover-admin-key-0123456789abcdef';
const enabled = clustersAvailable();

async function sql<T = any>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

interface Outcome {
  status: number | 'hang' | 'network';
  retryAfter: string | null;
  body: any;
}

/** One API call with a deadline: a hang is recorded, never waited out. */
async function call(base: string, method: string, path: string, body?: unknown): Promise<Outcome> {
  try {
    const r = await fetch(`${base}/api/2026-11${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: r.status, retryAfter: r.headers.get('retry-after'), body: parsed };
  } catch (err) {
    return { status: (err as Error).name === 'TimeoutError' ? 'hang' : 'network', retryAfter: null, body: String(err) };
  }
}

describe('failover to a promoted standby', { skip: !enabled }, () => {
  let pair: Pair;
  let standby: Cluster;
  let sw: Switch;
  let proc: Proc | undefined;
  let rx: Receiver;

  before(async () => {
    pair = await primaryCluster();
    await sql(pair.primary.url('postgres'), 'CREATE DATABASE bulb');
    standby = await pair.standby();
    // Synchronous replication: a commit is acknowledged once the standby has flushed it (the zero-loss setting).
    await sql(pair.primary.url('postgres'), "ALTER SYSTEM SET synchronous_standby_names = 'standby'");
    await sql(pair.primary.url('postgres'), "ALTER SYSTEM SET synchronous_commit = 'on'");
    await sql(pair.primary.url('postgres'), 'SELECT pg_reload_conf()');
    await waitFor(async () => (await sql(pair.primary.url('postgres'), "SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby' AND sync_state = 'sync'")).length > 0 || undefined, 'standby in sync', 60_000, 100);
    sw = await startSwitch(pair.primary.port);
    rx = await startReceiver();
  });
  after(async () => {
    if (proc && proc.child.exitCode === null) proc.child.kill('SIGKILL');
    await rx?.close();
    await sw?.close();
    pair?.destroy();
  });

  it('loses no acknowledged write or event, reconnects by itself, answers 503 with Retry-After meanwhile', async () => {
    proc = await startBulb({
      DATABASE_URL: sw.url('bulb'), BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_ADMIN_KEY: KEY,
      BULB_WEBHOOK_TIMEOUT_MS: '2000', BULB_WEBHOOK_RETRY_SCHEDULE: '0.5,1,2,4,8,16', BULB_LOG_LEVEL: 'warn',
    });
    const sub = await call(proc.url, 'POST', '/integrations/webhooks/subscriptions', { url: rx.url, eventTypes: ['customerCreate'] });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));

    const acknowledged: string[] = [];
    const merges: { primary: string; secondary: string }[] = [];
    const outcomes: Outcome[] = [];
    let stop = false;
    let n = 0;
    const worker = async (w: number) => {
      while (!stop) {
        const id = `fo-${w}-${n++}`;
        const r = await call(proc!.url, 'POST', '/crm/customers', { externalId: id, firstName: 'Fail', lastName: `Over ${w}` });
        outcomes.push(r);
        if (r.status === 201) acknowledged.push(id);
        if (r.status === 201 && n % 5 === 0 && acknowledged.length > 2) {
          const secondary = acknowledged[acknowledged.length - 2];
          if (merges.some((m) => m.primary === secondary || m.secondary === secondary || m.primary === id)) continue;
          const m = await call(proc!.url, 'POST', `/crm/customers/${id}/merge`, { mergeWithCustomerIds: [secondary] });
          outcomes.push(m);
          if (m.status === 200) merges.push({ primary: id, secondary });
        }
        if (r.status === 503) await new Promise((res) => setTimeout(res, 100));
      }
    };
    const load = Promise.all([0, 1, 2, 3].map(worker));

    await waitFor(() => acknowledged.length >= 40 || undefined, 'load under way', 60_000, 50);
    // The primary dies; the switch refuses connections until the standby is promoted, then points at it.
    sw.pointAt(undefined);
    pair.primary.stop('immediate');
    const during = outcomes.length;
    await new Promise((r) => setTimeout(r, 1000));
    standby.promote();
    sw.pointAt(standby.port);
    const ackedAtSwitch = acknowledged.length;
    try {
      await waitFor(() => acknowledged.length >= ackedAtSwitch + 40 || undefined, 'writes acknowledged after the switch', 120_000, 100);
    } catch (err) {
      const tally: Record<string, number> = {};
      for (const o of outcomes.slice(during)) tally[String(o.status)] = (tally[String(o.status)] ?? 0) + 1;
      const last = outcomes.slice(-3).map((o) => JSON.stringify(o.body).slice(0, 300));
      throw new Error(`${(err as Error).message}; answers since the failover: ${JSON.stringify(tally)}; last: ${last.join(' | ')}\n${proc.output().slice(-3000)}`);
    }
    stop = true;
    await load;

    // Never a 500 or a hang; the switch was answered 503 with Retry-After.
    const statuses = outcomes.map((o) => o.status);
    const failed = proc.output().split('\n').filter((l) => l.includes('request failed')).slice(0, 3).join('\n');
    assert.deepEqual(statuses.filter((s) => s === 'hang' || s === 'network' || (typeof s === 'number' && s >= 500 && s !== 503)), [], `no 5xx but 503, no hang\n${failed}`);
    const unavailable = outcomes.filter((o) => o.status === 503);
    assert.ok(outcomes.slice(during).some((o) => o.status === 503), 'the switch was seen as 503');
    for (const o of unavailable) {
      assert.equal(o.retryAfter, '1');
      assert.equal(o.body.errors[0].errorCode, 'ServiceUnavailable');
      assert.doesNotMatch(JSON.stringify(o.body), /ECONN|terminat|pg_|postgres/i, 'no internals');
    }

    // Every acknowledged write is on the new primary.
    const db = standby.url('bulb');
    const have = new Set((await sql<{ external_id: string }>(db, 'SELECT external_id FROM customers')).map((r) => r.external_id));
    assert.deepEqual(acknowledged.filter((id) => !have.has(id)), [], 'acknowledged creates all present');
    // A merge's secondary points at its primary's final survivor (the primary may have been merged away since).
    const survivor = `SELECT c.status, coalesce(p.external_id, c.external_id) AS survivor FROM customers c LEFT JOIN customers p ON p.id = c.merged_into WHERE c.external_id = $1`;
    for (const m of merges) {
      const [secondary] = await sql(db, survivor, [m.secondary]);
      const [primary] = await sql(db, survivor, [m.primary]);
      assert.deepEqual(secondary, { status: 'disabled', survivor: primary.survivor }, `merge of ${m.secondary} into ${m.primary} kept`);
    }
    assert.ok(merges.length > 0, 'merges ran');

    // Every acknowledged create's event is delivered at least once (at-least-once across the failover).
    await waitFor(() => {
      const got = new Set(rx.received.map((r) => r.body?.resource?.externalId));
      return acknowledged.every((id) => got.has(id)) || undefined;
    }, 'every acknowledged create delivered', 120_000, 200);

    // The process reconnected by itself, its LISTEN included, and serves as before.
    await waitFor(async () => (await sql(db, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'bulb-listen'")).length > 0 || undefined, 'LISTEN re-established', 30_000, 200);
    const after = await call(proc.url, 'POST', '/crm/customers', { externalId: 'after-failover' });
    assert.equal(after.status, 201);
    await waitFor(() => rx.received.some((r) => r.body?.resource?.externalId === 'after-failover') || undefined, 'a new event delivered', 30_000, 50);
    assert.equal(await proc.stop(), 0, proc.output());
  });
});
