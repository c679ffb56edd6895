// A worker process SIGKILLed in the middle of an import, then restarted: every row applied once, every
// event (and its delivery) written once, counters exact (PostgreSQL; real processes).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshDb, postgresAvailable, type TestDb } from '../helpers/db.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { spawnBulb, type Child } from '../webhooks/child.ts';

const hasPg = await postgresAvailable();
if (!hasPg) console.log('# SKIP import kill test: it needs PostgreSQL');

const ROWS = 6000;

describe('import worker killed mid-import [pg]', { skip: !hasPg }, () => {
  let tdb: TestDb;
  let srv: TestServer;
  const children: Child[] = [];
  const worker = async () => {
    const c = await spawnBulb({ DATABASE_URL: tdb.url!, BULB_ROLE: 'worker', BULB_IMPORT_CHUNK_ROWS: '100', BULB_IMPORT_LEASE_MS: '1500' });
    children.push(c);
    return c;
  };
  before(async () => {
    tdb = await freshDb('pg');
    srv = await startServer(tdb.db, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: tdb.url! });
  });
  after(async () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    await srv?.close();
    await tdb?.close();
  });
  const n = async (sql: string) => Number((await tdb.db.query(sql)).rows[0].n);

  it('resumes after the last committed chunk: no row applied twice, no event emitted twice', async () => {
    const sub = await srv.api.post('/integrations/webhooks/subscriptions', { url: 'http://127.0.0.1:9/hooks', eventType: 'customerCreate' });
    assert.equal(sub.status, 201, sub.text);
    const file = Array.from({ length: ROWS }, (_, i) => JSON.stringify({ externalId: `k-${i}`, firstName: `F${i}`, emails: [{ email: `k${i}@x.io` }] })).join('\n');
    const imp = await srv.api.withVersion('2026-11').post('/crm/imports?events=true', file, { 'content-type': 'application/x-ndjson' });
    assert.equal(imp.status, 202, imp.text);

    const first = await worker();
    const q = `SELECT rows_done::int AS n FROM imports WHERE uuid = '${imp.body.uuid}'`;
    for (let i = 0; (await n(q)) === 0; i++) {
      assert.ok(i < 2000, 'the worker never started');
      await new Promise((r) => setTimeout(r, 10));
    }
    first.proc.kill('SIGKILL');
    await first.exited;
    const atKill = await n(q);
    assert.ok(atKill > 0 && atKill < ROWS, `killed mid-import (${atKill} of ${ROWS} done)`);
    assert.equal(await n(`SELECT count(*) AS n FROM customers WHERE external_id LIKE 'k-%'`), atKill, 'customers written = chunks committed');

    await worker();
    for (let i = 0; ; i++) {
      const r = await srv.api.withVersion('2026-11').get(`/crm/imports/${imp.body.uuid}`);
      if (r.body.status === 'completed') {
        assert.deepEqual([r.body.rowsDone, r.body.created, r.body.failed], [ROWS, ROWS, 0]);
        break;
      }
      assert.ok(i < 1200, `not completed: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(await n(`SELECT count(*) AS n FROM customers WHERE external_id LIKE 'k-%'`), ROWS);
    assert.equal(await n(`SELECT count(*) AS n FROM events WHERE resource_external_id LIKE 'k-%'`), ROWS, 'every event once');
    assert.equal(await n(`SELECT count(DISTINCT resource_external_id) AS n FROM events WHERE resource_external_id LIKE 'k-%'`), ROWS);
    assert.equal(
      await n(`SELECT count(*) AS n FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.resource_external_id LIKE 'k-%'`),
      ROWS,
      'every delivery once',
    );
  });
});
