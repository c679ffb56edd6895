// Receives an import file: streams the request body through the parser into staging, then queues the
// import. A file that is refused (not text, not NDJSON/CSV, too large, empty) leaves nothing behind;
// an upload that breaks off is kept as a failed import. Nothing is applied before the upload completes.
import { Transform, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Services } from '../services.ts';
import type { Queryable } from '../db/db.ts';
import { ApiError } from '../http/errors.ts';
import { csvError, csvRows, ndjsonRows, textGuard, type StagedLine } from './parse.ts';
import { batchSink, pgCopySink } from './staging.ts';
import { PgDb } from '../db/pg.ts';
import * as store from './store.ts';
import { describeTgenFile, resolveUuids, tgenRows, type TgenFile } from './tgen.ts';
import { attributeProblems, unknownAttributeIds } from '../crm/customers/validate.ts';

export interface ImportRequest {
  format: 'ndjson' | 'csv' | 'tgen';
  /** A TGEN file's kind, import type and version from its name (tgen.ts tgenFileOf); undefined: read from the header. */
  tgen?: TgenFile;
  /** The file's text encoding (parse.ts encodingOf). */
  encoding: string;
  withEvents: boolean;
  source: string;
  tokenUuid: string | null;
}

const PROGRESS_EVERY_MS = 2000;

/** The error that ends an upload whose client sent nothing for importIdleMs. */
class Stalled extends Error {}

/** How often, and how many times, a failed upload's failure is written again while the database refuses it. */
const FAILURE_RETRY_MS = 2000;
const FAILURE_RETRIES = 60;

/**
 * An upload that failed: its staged rows deleted and its import marked failed. When the upload broke off because the
 * database went away (a restart, a failover), that cannot be written now: it is tried again in the background every
 * FAILURE_RETRY_MS for two minutes (it was tried once, and the import stayed `receiving` until the workers' 10-minute
 * rule). The caller answers once the first try is over, either way.
 */
async function recordFailure(db: Queryable, id: string, reason: string, abort: () => Promise<void>): Promise<void> {
  const attempt = async () => {
    await abort();
    await store.markFailed(db, id, reason);
  };
  try {
    await attempt(); // written before the answer, as a rule
  } catch {
    void (async () => {
      for (let i = 0; i < FAILURE_RETRIES; i++) {
        await new Promise((r) => setTimeout(r, FAILURE_RETRY_MS).unref());
        try {
          return await attempt();
        } catch { /* the database is still away */ }
      }
    })();
  }
}

/**
 * Passes the body on, and ends the upload when nothing arrives for `ms`: a client that died without closing its
 * connection (or just stopped) would otherwise hold the upload, its database connection and its COPY open for good
 * (and a backend waiting in COPY FROM STDIN holds up CREATE and DROP DATABASE across the cluster).
 */
function idleGuard(ms: number): Transform {
  // Waiting on the database is not the client's idleness: while what passed on is not taken (downstream full), the
  // clock is held; it runs again when downstream asks for more.
  let held = false;
  const t: Transform = new Transform({
    transform(chunk, _enc, cb) {
      cb(null, chunk);
      held = t.readableLength >= t.readableHighWaterMark;
      timer.refresh();
    },
    flush(cb) {
      clearTimeout(timer);
      cb();
    },
    destroy(err, cb) {
      clearTimeout(timer);
      cb(err);
    },
  });
  const read = t._read.bind(t);
  t._read = (size) => {
    held = false;
    timer.refresh();
    read(size);
  };
  const timer = setTimeout(function check() {
    if (held) timer.refresh();
    else t.destroy(new Stalled(`no data for ${ms} ms`));
  }, ms);
  return t;
}

/**
 * A line whose attribute values name an unknown customer attribute is refused (one look-up per batch, only when a
 * line has attribute values). Attributes are never deleted, so one known now is known when the line is applied.
 */
async function refuseUnknownAttributes(db: Queryable, batch: StagedLine[]): Promise<void> {
  const withAttributes = batch.filter((l) => Array.isArray(l.item?.attributes) && l.item.attributes.length > 0);
  if (withAttributes.length === 0) return;
  const unknown = await unknownAttributeIds(db, withAttributes.map((l) => l.item!));
  if (unknown.size === 0) return;
  for (const l of withAttributes) {
    const problems = attributeProblems(l.item!, unknown);
    if (problems.length > 0) {
      l.errors = problems.map((p) => ({ ...p, errorCode: 'InvalidParameterError' }));
      l.item = null;
    }
  }
}

/** Uploads being received (their handlers, until they have recorded how the upload ended). */
const receiving = new Set<Promise<unknown>>();

/**
 * Resolves once every upload in progress has ended and recorded it: a SIGTERM cuts the connection of a client that
 * keeps one going, and waits for this before closing the database (the upload's failure was not written, and the
 * import stayed `receiving` until the workers' 10-minute rule).
 */
export const uploadsEnded = () => Promise.allSettled([...receiving]);

/** audit: records the act in the transaction that queues the import, with the import as queued. */
export function receiveImport(s: Services, body: Readable, r: ImportRequest, audit: (tx: Queryable, queued: store.ImportRow) => Promise<void>): Promise<store.ImportRow> {
  const p = receive(s, body, r, audit);
  receiving.add(p);
  void p.then(() => receiving.delete(p), () => receiving.delete(p));
  return p;
}

async function receive(s: Services, body: Readable, r: ImportRequest, audit: (tx: Queryable, queued: store.ImportRow) => Promise<void>): Promise<store.ImportRow> {
  const imp = await store.createImport(s.db, { format: r.format, tgenFile: r.tgen ? describeTgenFile(r.tgen) : null, withEvents: r.withEvents, source: r.source, tokenUuid: r.tokenUuid });
  const sink = s.db instanceof PgDb ? await pgCopySink(s.db.sessionUrl, imp.id, s.db) : batchSink(s.db, imp.id);
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
      Promise.all([refuseUnknownAttributes(s.db, batch).then(() => sink.write(batch)), progress]).then(() => cb(), cb);
    },
  });
  const stages: Transform[] = [idleGuard(s.config.importIdleMs), textGuard(s.config.importMaxBytes, r.encoding)];
  // A TGEN file read from its header: the import records the kind (the worker applies an addresses file its own way).
  let inferred: TgenFile | undefined;
  if (r.format === 'ndjson') stages.push(ndjsonRows());
  else if (r.format === 'tgen') stages.push(...tgenRows(r.tgen, (f) => (inferred = r.tgen ? undefined : f)), resolveUuids((uuids) => store.externalIdsByUuid(s.db, uuids)));
  else stages.push(...csvRows());
  try {
    await pipeline([body, ...stages, into]);
    if (rows === 0) throw new ApiError('InvalidParameterError', 'the file has no data lines', 'body');
    if (inferred) await store.setTgenFile(s.db, imp.id, describeTgenFile(inferred));
    queued = await sink.finish(rows, async (tx) => audit(tx, await store.getImportById(tx, imp.id)));
  } catch (err) {
    const refusal = err instanceof ApiError ? err : typeof (err as any)?.code === 'string' && (err as any).code.startsWith('CSV_') ? csvError(err) : undefined;
    if (refusal) {
      await sink.abort();
      await store.deleteImport(s.db, imp.id);
      throw refusal;
    }
    await recordFailure(s.db, imp.id, err instanceof Stalled ? `upload stalled: ${err.message}` : 'upload interrupted', () => sink.abort());
    // The client's doing: a 4xx (no request yields a 5xx), 408 as HTTP names a request not sent in time.
    if (err instanceof Stalled) throw new ApiError('RequestTimeout', `the upload stalled: no data for ${s.config.importIdleMs} ms; import ${imp.uuid} is failed (send the file again)`, `import ${imp.uuid}`);
    throw err;
  }
  if (!queued) await store.dropApplied(s.db, imp.id); // cancelled while uploading
  return store.getImportById(s.db, imp.id);
}
