// Receives an import file: streams the request body through the parser into staging, then queues the
// import. A file that is refused (not text, not NDJSON/CSV, too large, empty) leaves nothing behind;
// an upload that breaks off is kept as a failed import. Nothing is applied before the upload completes.
import { Writable, type Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Services } from '../services.ts';
import { ApiError } from '../http/errors.ts';
import { csvError, csvRows, ndjsonRows, textGuard, type StagedLine } from './parse.ts';
import { batchSink, pgCopySink } from './staging.ts';
import * as store from './store.ts';

export interface ImportRequest {
  format: 'ndjson' | 'csv';
  withEvents: boolean;
  source: string;
  tokenUuid: string | null;
}

const PROGRESS_EVERY_MS = 2000;

export async function receiveImport(s: Services, body: Readable, r: ImportRequest): Promise<store.ImportRow> {
  const imp = await store.createImport(s.db, { format: r.format, withEvents: r.withEvents, source: r.source, tokenUuid: r.tokenUuid });
  const sink = s.db.kind === 'pg' && s.config.databaseUrl ? await pgCopySink(s.config.databaseUrl, imp.id, s.db) : batchSink(s.db, imp.id);
  let rows = 0;
  let queued = false;
  let lastProgress = Date.now();
  const into = new Writable({
    objectMode: true,
    highWaterMark: 2000,
    writev(chunks, cb) {
      const batch = chunks.map((c) => c.chunk as StagedLine);
      rows += batch.length;
      const now = Date.now();
      const progress = now - lastProgress > PROGRESS_EVERY_MS ? ((lastProgress = now), store.setReceived(s.db, imp.id, rows)) : undefined;
      Promise.all([sink.write(batch), progress]).then(() => cb(), cb);
    },
  });
  const stages: Transform[] = [textGuard(s.config.importMaxBytes)];
  if (r.format === 'ndjson') stages.push(ndjsonRows());
  else stages.push(...csvRows());
  try {
    await pipeline([body, ...stages, into]);
    if (rows === 0) throw new ApiError('InvalidParameterError', 'the file has no data lines', 'body');
    queued = await sink.finish(rows);
  } catch (err) {
    await sink.abort();
    const refusal = err instanceof ApiError ? err : typeof (err as any)?.code === 'string' && (err as any).code.startsWith('CSV_') ? csvError(err) : undefined;
    if (refusal) {
      await store.deleteImport(s.db, imp.id);
      throw refusal;
    }
    await store.markFailed(s.db, imp.id, 'upload interrupted');
    throw err;
  }
  if (!queued) await store.dropApplied(s.db, imp.id); // cancelled while uploading
  return store.getImportById(s.db, imp.id);
}
