// The import worker (BULB_ROLE worker|all): claims a queued import (or one whose worker died: its lease
// ran out), then applies its staging rows in chunks. Each chunk is one transaction holding the import's
// row lock: the customers it upserts, their events (events=true), its errors and the import's progress
// (applied_line, counters, lease) commit together, so after a crash the next worker resumes after the
// last committed chunk: no row applied twice, no event emitted twice. The rows themselves never come
// through the worker: one statement applies a chunk inside the database (store.applyChunk).
import crypto from 'node:crypto';
import type { Config } from '../config.ts';
import { RETRYABLE_SQLSTATES, sqlState, withRetry, type Db, type Queryable } from '../db/db.ts';
import { customerDisabled } from '../crm/customers/service.ts';
import { lostRace } from '../crm/customers/bulk.ts';
import * as store from './store.ts';
import { applyCustomerChunk } from './fold.ts';
import { applyAddressChunk, isAddressesFile } from './tgen-apply.ts';
import { WokenWorker } from '../loop.ts';
import { applyNoteChunk, isNotesFile } from './tgen-notes.ts';

type Log = (msg: string, err?: unknown) => void;

export class ImportWorker extends WokenWorker {
  readonly token = crypto.randomUUID();

  constructor(db: Db, private config: Pick<Config, 'importChunkRows' | 'importLeaseMs'>, private log: Log = () => {}) {
    super(db, store.IMPORT_CHANNEL);
  }

  // stop() (WokenWorker) ends after the chunk in progress and hands the import back.

  protected async run(): Promise<void> {
    let housekeepingAt = 0;
    while (!this.stopping) {
      try {
        if (Date.now() - housekeepingAt > 60_000) {
          housekeepingAt = Date.now();
          await store.failAbandoned(this.db);
        }
        const imp = await store.claimImport(this.db, this.token, this.config.importLeaseMs);
        if (imp) {
          await this.process(imp.id);
          continue;
        }
      } catch (err) {
        this.log('import worker: will retry', err);
      }
      await this.nap.sleep(1000);
    }
  }

  private async process(id: string): Promise<void> {
    for (;;) {
      if (this.stopping) return store.releaseImport(this.db, id, this.token);
      let next: 'more' | 'done' | 'lost';
      try {
        // No statement deadline: a chunk may rightly take longer on a loaded database, and failed at it, it was
        // retried from the start each time (an import that could never finish).
        next = await withRetry(this.db, (tx) => this.chunk(tx, id), 5, { unbounded: true });
      } catch (err) {
        // A chunk that lost its races (or deadlocked) on every retry: the import is handed back at once, for whichever
        // worker claims next (under its lease it waited for this worker to come back to it: ~30 s stalls with four
        // imports over overlapping ids, found by a probe).
        if (RETRYABLE_SQLSTATES.has(sqlState(err) ?? '')) {
          this.log(`import ${id}: a chunk lost its races on every retry; handed back`, err);
          await store.releaseImport(this.db, id, this.token);
          return this.nap.sleep(100 + Math.random() * 400); // the racers' turn first (then any worker's claim)
        }
        // Bad data the database refuses fails the import; anything else (database away) is retried later.
        if (!/^(22|23|54)/.test(sqlState(err) ?? '')) throw err;
        this.log(`import ${id} failed`, err);
        await store.markFailed(this.db, id, `a chunk could not be applied (SQLSTATE ${sqlState(err)})`);
        next = 'done';
      }
      if (next === 'done') {
        await store.dropApplied(this.db, id);
        await store.analyzeImported(this.db).catch((err) => this.log(`import ${id}: ANALYZE after the import failed`, err));
      }
      if (next !== 'more') return;
    }
  }

  private async chunk(tx: Queryable, id: string): Promise<'more' | 'done' | 'lost'> {
    const imp = await store.lockForChunk(tx, id);
    if (!imp || imp.status !== 'running' || imp.lock_token !== this.token) return 'lost';
    const span = this.config.importChunkRows;
    const r = isAddressesFile(imp) ? await applyAddressChunk(tx, imp, span) : isNotesFile(imp) ? await applyNoteChunk(tx, imp, span) : await applyCustomerChunk(tx, imp, span);
    // A concurrent writer inserted one of the chunk's externalIds first: withRetry runs the chunk again.
    if (r.created < r.toInsert) throw lostRace();
    const failed = r.refused + r.disabled.length + (r.errors?.length ?? 0);
    const counts = {
      lastLine: String(Number(imp.applied_line) + this.config.importChunkRows), done: r.lines, created: r.created, updated: r.updated,
      unchanged: r.lines - failed - r.created - r.updated, failed,
    };
    const errors = [...r.disabled.map((d) => ({ line: d.line, errors: customerDisabled(d).entries as unknown[] })), ...(r.errors ?? [])];
    await store.recordErrors(tx, id, errors);
    const finished = !r.more;
    await store.advance(tx, id, counts, this.config.importLeaseMs, finished);
    return finished ? 'done' : 'more';
  }
}
