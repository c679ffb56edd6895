// A chunk that keeps losing races (its transaction retried 5 times: concurrent imports or bulk writing the same new
// externalIds, or deadlocks) hands its import back at once, so any worker's next claim takes it: kept under its lease,
// it waited for its own worker to come back to it (4 imports over overlapping ids on two processes stalled about 30 s,
// a lease, before finishing: found by a probe, 2026-11-29). Here the worker whose chunk lost does nothing more (its
// next claims wait), the lease is 10 minutes, and another worker must finish the import.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { hookedDb } from '../helpers/db.ts';
import { importFinished } from '../helpers/imports.ts';
import { ImportWorker } from '../../src/imports/worker.ts';

await describeEachDb('an import chunk that keeps losing races', (ctx) => {
  const workers: ImportWorker[] = [];
  let failures = 0;
  let unblock!: () => void;
  const blocked = new Promise<void>((r) => (unblock = r));
  before(async () => {
    // The first worker: each chunk statement fails as a lost race would (SQLSTATE 40001), 5 times (a chunk's retries);
    // after that its claims wait until the test ends.
    const losing = hookedDb(ctx.tdb.db, {
      statement: async (sql) => {
        if (/FROM imports WHERE id = \$1 FOR UPDATE/.test(sql) && failures < 5) {
          failures++;
          throw Object.assign(new Error('could not serialize access (a lost race, in a test)'), { code: '40001' });
        }
        if (failures >= 5 && /UPDATE imports SET status = 'running'/.test(sql)) await blocked;
      },
    });
    workers.push(new ImportWorker(losing, { importChunkRows: 10, importLeaseMs: 600_000 }));
    await workers[0].start();
  });
  after(async () => {
    unblock();
    for (const w of workers) await w.stop();
  });

  it('is handed back at once and finished by another worker, not after its lease', async () => {
    const api = ctx.srv.api.withVersion('2026-11');
    const file = Array.from({ length: 25 }, (_, i) => JSON.stringify({ externalId: `race-${i}`, firstName: 'R' })).join('\n') + '\n';
    const r = await api.post('/crm/imports?format=ndjson', file, { 'content-type': 'application/x-ndjson' });
    assert.equal(r.status, 202, r.text);
    for (let i = 0; failures < 5 && i < 400; i++) await new Promise((res) => setTimeout(res, 25));
    assert.equal(failures, 5, 'the first worker\'s chunk lost its races');
    workers.push(new ImportWorker(ctx.tdb.db, { importChunkRows: 10, importLeaseMs: 600_000 }));
    await workers[1].start();
    const done = await importFinished(api, r.body.uuid);
    assert.equal(done.status, 'completed');
    assert.deepEqual([done.rowsDone, done.created, done.failed], [25, 25, 0]);
  });
});
