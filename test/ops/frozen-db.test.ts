// A database that stops answering without closing its connections (a network partition, a stalled server), and
// writes that fail while it restarts (found by probing with a TCP proxy, 2026-11-28):
// - `GET /ready` answers 503 within its deadline (it answered 200 after the 30 s freeze ended);
// - an upload broken off while the database cannot record it is marked failed once it can (it stayed `receiving`
//   for the workers' 10-minute rule);
// - the duplicates refresher retries a batch chosen as a deadlock's victim (each was an ERROR with its stack).
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import pg from 'pg';
import { after, before, describe, it } from 'node:test';
import { freshDb, hookedDb, postgresAvailable, type TestDb } from '../helpers/db.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { describeEachDb } from '../helpers/suite.ts';
import { PgDb, type PgDbOptions } from '../../src/db/pg.ts';
import type { Db } from '../../src/db/db.ts';
import { statementDeadlinePassed } from '../../src/db/unavailable.ts';
import { READY_DEADLINE_MS } from '../../src/http/app.ts';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';
import { waitFor } from '../webhooks/receiver.ts';

/** A TCP proxy to PostgreSQL that can stop forwarding while keeping every connection open. */
async function freezableProxy(target: URL) {
  const pairs: [net.Socket, net.Socket][] = [];
  let frozen = false;
  const server = net.createServer((c) => {
    const u = net.connect(Number(target.port || 5432), target.hostname);
    c.on('error', () => {}).pipe(u);
    u.on('error', () => {}).pipe(c);
    pairs.push([c, u]);
    if (frozen) for (const s of [c, u]) s.pause();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    freeze() {
      frozen = true;
      for (const p of pairs) for (const s of p) s.pause();
    },
    thaw() {
      frozen = false;
      for (const p of pairs) for (const s of p) s.resume();
    },
    /** New connections go through again; those open stay frozen (a failover: the old server is gone silently). */
    failover() {
      frozen = false;
    },
    close() {
      for (const p of pairs) for (const s of p) s.destroy();
      server.close();
    },
  };
}

const hasPg = await postgresAvailable();

/** A test database, a server reaching it through a freezable proxy (its pool: `poolSize`, `opts`), for one describe. */
function behindProxy(poolSize: number, opts: PgDbOptions = {}) {
  const ctx = {} as { tdb: TestDb; proxy: Awaited<ReturnType<typeof freezableProxy>>; db: PgDb; srv: TestServer };
  before(async () => {
    ctx.tdb = await freshDb('pg');
    ctx.proxy = await freezableProxy(new URL(ctx.tdb.url!));
    const url = new URL(ctx.tdb.url!);
    url.host = `127.0.0.1:${ctx.proxy.port}`;
    ctx.db = new PgDb(url.toString(), poolSize, opts);
    ctx.srv = await startServer(ctx.db);
  });
  after(async () => {
    ctx.proxy?.thaw();
    await ctx.srv?.close();
    await ctx.db?.close();
    ctx.proxy?.close();
    await ctx.tdb?.close();
  });
  return ctx;
}

describe('a frozen PostgreSQL [pg]', { skip: hasPg ? false : 'no PostgreSQL server' }, () => {
  const ctx = behindProxy(4);

  it('GET /ready answers 503 within its deadline while the database answers nothing, 200 once it does again', async () => {
    assert.equal((await fetch(`${ctx.srv.url}/ready`)).status, 200);
    ctx.proxy.freeze();
    const r = await fetch(`${ctx.srv.url}/ready`, { signal: AbortSignal.timeout(READY_DEADLINE_MS * 10) });
    assert.equal(r.status, 503);
    const body = (await r.json()) as any;
    assert.equal(body.errors[0].errorCode, 'ServiceUnavailable');
    assert.match(body.errors[0].message, /did not answer within/);
    ctx.proxy.thaw();
    let again = 0;
    for (let i = 0; i < 100 && again !== 200; i++) again = (await fetch(`${ctx.srv.url}/ready`)).status;
    assert.equal(again, 200);
  });
});

describe('a PostgreSQL gone silent, then failed over [pg]', { skip: hasPg ? false : 'no PostgreSQL server' }, () => {
  const ctx = behindProxy(2, { statementDeadlineMs: 1_500 });

  it('a request on a connection that no longer answers is a 503 after the statement deadline, and the pool reconnects', async () => {
    const list = () => fetch(`${ctx.srv.url}/api/2026-11/crm/customers`, { headers: { authorization: `Bearer ${ctx.srv.api.token}` }, signal: AbortSignal.timeout(30_000) });
    assert.equal((await ctx.srv.api.post('/crm/customers', { externalId: 'silent-1' })).status, 201);
    assert.equal((await list()).status, 200);
    ctx.proxy.freeze();
    // Without the deadline this request waited for the server as long as TCP would (~15 min): aborted here at 30 s.
    const r = await list();
    assert.equal(r.status, 503);
    assert.equal(((await r.json()) as any).errors[0].errorCode, 'ServiceUnavailable');
    ctx.proxy.failover();
    let status = 0;
    for (let i = 0; i < 20 && status !== 200; i++) status = (await list()).status;
    assert.equal(status, 200, 'served again over a new connection while the old ones stay frozen');
    assert.equal((await ctx.srv.api.get('/crm/customers/silent-1')).status, 200);
  });
});

describe('a statement waiting on a healthy server past the deadline [pg]', { skip: hasPg ? false : 'no PostgreSQL server' }, () => {
  const ctx = behindProxy(2, { statementDeadlineMs: 1_500 });

  it('is cancelled by the server itself (503 naming the deadline), leaving no backend waiting behind', async () => {
    assert.equal((await ctx.srv.api.post('/crm/customers', { externalId: 'held-1' })).status, 201);
    const holder = new pg.Client({ connectionString: ctx.tdb.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM customers WHERE external_id = 'held-1' FOR UPDATE`);
      const r = await ctx.srv.api.patch('/crm/customers/held-1', { firstName: 'Late' });
      assert.equal(r.status, 503, r.text);
      assert.match(r.body.errors[0].message, /did not answer within the statement deadline/);
      // The server cancelled it (statement_timeout): no backend of the API still waits for the lock.
      const waiting = await holder.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      assert.equal(waiting.rows[0].n, 0);
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    }
    assert.equal((await ctx.srv.api.patch('/crm/customers/held-1', { firstName: 'Now' })).status, 200, 'served once the lock is gone');
  });

  it('an unbounded transaction (migrations, partition maintenance) runs past the deadline', async () => {
    await assert.rejects(ctx.db.transaction((tx) => tx.query('SELECT pg_sleep(2.5)')), (e: any) => statementDeadlinePassed(e));
    const r = await ctx.db.transaction((tx) => tx.query<{ ok: number }>('SELECT pg_sleep(2.5), 1 AS ok'), { unbounded: true });
    assert.equal(r.rows[0].ok, 1);
  });
});

describe('the LISTEN connection to a server gone silent [pg]', { skip: hasPg ? false : 'no PostgreSQL server' }, () => {
  const ctx = behindProxy(2, { listenHeartbeatMs: 300 });

  it('is found dead by its heartbeat and replaced: notifications arrive again after the failover', async () => {
    const payloads: string[] = [];
    let lost = 0;
    const unlisten = await ctx.db.listen('bulb_heartbeat_test', (p) => payloads.push(p), () => lost++);
    try {
      ctx.proxy.freeze();
      // Without the heartbeat nothing noticed (TCP gives up after ~15 min): every notification went nowhere.
      await waitFor(() => lost > 0, 'the LISTEN connection found dead');
      ctx.proxy.failover();
      await waitFor(() => payloads.includes(''), 'LISTEN re-established (subscribers told to look everywhere)');
      await ctx.tdb.db.query(`SELECT pg_notify('bulb_heartbeat_test', 'after')`);
      await waitFor(() => payloads.includes('after'), 'a notification after the failover');
    } finally {
      await unlisten();
    }
  });
});

/** The suite's database, with the statements matching `fails` refused (as while it restarts) `times` times. */
function refusing(db: Db, fails: RegExp, times: number, code = '57P01'): Db {
  let left = times;
  return hookedDb(db, {
    statement(sql) {
      if (left > 0 && fails.test(sql)) {
        left--;
        throw Object.assign(new Error('terminating connection due to administrator command'), { code });
      }
    },
  });
}

await describeEachDb('writes refused for a moment', (ctx) => {
  it('an upload broken off while its failure cannot be recorded is marked failed once it can', { timeout: 60_000 }, async () => {
    const srv = await startServer(refusing(ctx.tdb.db, /UPDATE imports SET status = 'failed'/, 2), { BULB_IMPORT_IDLE_MS: '400' });
    try {
      const u = new URL(`${srv.url}/api/2026-11/crm/imports`);
      const req = http.request(u, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', 'transfer-encoding': 'chunked', authorization: `Bearer ${srv.api.token}` } });
      const answered = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
      });
      req.write(JSON.stringify({ externalId: 'frozen-upload-1' }) + '\n');
      const status = await answered; // the stall (400 ms), then its answer
      req.destroy();
      assert.ok(status === 408 || status === 503, `answered ${status}`);
      let imp: any;
      for (let i = 0; i < 100; i++) {
        imp = (await srv.api.withVersion('2026-11').get('/crm/imports?limit=1')).body.data[0];
        if (imp.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(imp.status, 'failed', `left ${imp.status}`);
      assert.match(imp.error, /upload stalled/);
    } finally {
      await srv.close();
    }
  });

  it('the duplicates refresher retries a batch chosen as a deadlock\'s victim', async () => {
    await ctx.srv.api.withVersion('2026-11').post('/crm/customers', { externalId: 'frozen-dup-1', firstName: 'Ann', lastName: 'Lee' });
    const taken = await refreshDuplicates(refusing(ctx.tdb.db, /INSERT INTO duplicate_profiles/, 1, '40P01'), 'US');
    assert.ok(taken >= 1, `refreshed ${taken}`);
    const left = await ctx.tdb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM duplicate_dirty`);
    assert.equal(left.rows[0].n, 0, 'the queue drained');
  });
});
