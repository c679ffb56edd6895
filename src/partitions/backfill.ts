// The partition keys' backfill (docs/partitioning.md, migration 060): a job under src/scheduler.ts that fills the
// keys rows written before the conversion lack (a delivery's event_created_at, an attempt's delivery_created_at), a
// batch at a time with a pause between batches, until each legacy partition is walked; then each pass is one
// look-up of partition_backfills.
import type { Db } from '../db/db.ts';
import { startLoop } from '../loop.ts';
import { backfillBatch, unfinished } from './backfill-store.ts';

export interface BackfillOptions {
  /** Rows per batch (one short transaction each). */
  batch?: number;
  /** Pause between batches (ms): room for the requests (PGlite has one session) and for autovacuum. */
  pauseMs?: number;
  stopped?: () => boolean;
}

/** Runs the unfinished backfills to their end (or until stopped). Returns the rows filled, per legacy partition. */
export async function backfillKeys(db: Db, opts: BackfillOptions = {}): Promise<Record<string, number>> {
  const { batch = 2000, pauseMs = 50, stopped = () => false } = opts;
  const filled: Record<string, number> = {};
  for (const b of await unfinished(db)) {
    filled[b.name] = 0;
    for (;;) {
      if (stopped()) return filled;
      const r = await backfillBatch(db, b, batch);
      filled[b.name] += r.filled;
      if (!r.mine || r.done) break; // another worker walks it
      if (pauseMs > 0) await new Promise((res) => setTimeout(res, pauseMs));
    }
  }
  return filled;
}

/** The job: a pass 30 s after start, then every `everyMs` (a finished backfill's pass is one look-up). */
export function startKeyBackfill(db: Db, everyMs: number, log: (message: string) => void, onError: (err: unknown) => void): () => Promise<void> {
  return startLoop(async (stopped) => {
    const filled = await backfillKeys(db, { stopped });
    for (const [name, n] of Object.entries(filled)) if (n > 0) log(`partitions: ${n} rows of ${name} given their partition key`);
  }, everyMs, onError, 30_000);
}
