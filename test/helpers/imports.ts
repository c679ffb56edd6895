// An import worker beside a test server, and waiting for an import through the API, shared by the import tests.
import { after, before } from 'node:test';
import { ImportWorker } from '../../src/imports/worker.ts';
import type { Client } from './server.ts';
import type { Ctx } from './suite.ts';

/** A real import worker on the suite's database for its tests (chunks of `chunkRows`), stopped after them. */
export function useImportWorker(ctx: Ctx, chunkRows: number): void {
  let worker: ImportWorker;
  before(async () => {
    worker = new ImportWorker(ctx.tdb.db, { importChunkRows: chunkRows, importLeaseMs: 5000 });
    await worker.start();
  });
  after(() => worker.stop());
}

/** The import once it has ended (completed, failed or cancelled); throws after about 30 s. */
export async function importFinished(api: Client, uuid: string): Promise<any> {
  for (let i = 0; i < 600; i++) {
    const r = await api.get(`/crm/imports/${uuid}`);
    if (['completed', 'failed', 'cancelled'].includes(r.body.status)) return r.body;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`import ${uuid} did not finish`);
}

/** The import's per-line errors (its NDJSON errors stream, parsed). */
export async function importErrors(api: Client, uuid: string): Promise<any[]> {
  return (await api.get(`/crm/imports/${uuid}/errors`)).text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
