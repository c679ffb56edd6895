// The import worker (BULB_ROLE worker|all): claims a queued import (or one whose worker died: its lease
// ran out), then applies its staging rows in chunks. Each chunk is one transaction holding the import's
// row lock: the customers it upserts, their events (events=true), its errors and the import's progress
// (applied_line, counters, lease) commit together, so after a crash the next worker resumes after the
// last committed chunk: no row applied twice, no event emitted twice.
import crypto from 'node:crypto';
import type { Config } from '../config.ts';
import { sqlState, withRetry, type Db, type Queryable } from '../db/db.ts';
import { upsertItems } from '../crm/customers/bulk.ts';
import * as store from './store.ts';

type Log = (msg: string, err?: unknown) => void;

export class ImportWorker {
  readonly token = crypto.randomUUID();
  private stopping = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private db: Db, private config: Pick<Config, 'importChunkRows' | 'importLeaseMs'>, private log: Log = () => {}) {}

  async start(): Promise<void> {
    this.unlisten = await this.db.listen(store.IMPORT_CHANNEL, () => this.wake?.());
    this.loop = this.run();
  }

  /** Stops after the chunk in progress and hands the import back. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    await this.unlisten?.().catch(() => {});
  }

  private async run(): Promise<void> {
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
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  private async process(id: string): Promise<void> {
    for (;;) {
      if (this.stopping) return store.releaseImport(this.db, id, this.token);
      let next: 'more' | 'done' | 'lost';
      try {
        next = await withRetry(this.db, (tx) => this.chunk(tx, id));
      } catch (err) {
        // Bad data the database refuses fails the import; anything else (database away) is retried later.
        if (!/^(22|23|54)/.test(sqlState(err) ?? '')) throw err;
        this.log(`import ${id} failed`, err);
        await store.markFailed(this.db, id, `a chunk could not be applied (SQLSTATE ${sqlState(err)})`);
        next = 'done';
      }
      if (next === 'done') await store.dropApplied(this.db, id);
      if (next !== 'more') return;
    }
  }

  private async chunk(tx: Queryable, id: string): Promise<'more' | 'done' | 'lost'> {
    const imp = await store.lockForChunk(tx, id);
    if (!imp || imp.status !== 'running' || imp.lock_token !== this.token) return 'lost';
    const rows = await store.nextRows(tx, id, imp.applied_line, this.config.importChunkRows);
    const valid = rows.filter((r) => r.item !== null);
    const outcomes = await upsertItems(tx, valid.map((r) => r.item), { source: imp.source, events: imp.with_events, rows: false });
    const counts = { lastLine: rows.at(-1)?.line ?? imp.applied_line, done: rows.length, created: 0, updated: 0, unchanged: 0, failed: rows.length - valid.length };
    const errors: { line: string; errors: unknown[] }[] = [];
    outcomes.forEach((o, k) => {
      if (o.status === 201) counts.created++;
      else if (o.status === 200) o.changed ? counts.updated++ : counts.unchanged++;
      else {
        counts.failed++;
        errors.push({ line: valid[k].line, errors: o.errors ?? [] });
      }
    });
    await store.recordErrors(tx, id, errors);
    const finished = rows.length < this.config.importChunkRows;
    await store.advance(tx, id, counts, this.config.importLeaseMs, finished);
    return finished ? 'done' : 'more';
  }
}
