// Periodic clean-up run by webhook workers: time marks past retention, expired Idempotency-Keys. Events, deliveries
// and attempts go with their partitions (src/partitions/); a deleted subscription's pending deliveries are cancelled
// by the workers' sweep (src/webhooks/queue-store.ts discoverLanes).
import type { Queryable } from './db/db.ts';
import type { Config } from './config.ts';
import { purgeExpired } from './crm/idempotency/store.ts';
import { purgeTimeMarks } from './events/time-marks.ts';
import { startLoop } from './loop.ts';

export async function housekeep(db: Queryable, config: Config): Promise<{ timeMarks: number; idempotencyKeys: number }> {
  const timeMarks = await purgeTimeMarks(db, config.eventRetentionDays);
  const idempotencyKeys = await purgeExpired(db);
  return { timeMarks, idempotencyKeys };
}

/**
 * The housekeeping job: a pass at start, then every `everyMs` (the scheduler's room for it, src/scheduler.ts); a pass
 * that deleted something says so.
 */
export function startHousekeeping(db: Queryable, config: Config, everyMs: number, log: (message: string) => void, onError: (err: unknown) => void): () => Promise<void> {
  return startLoop(async () => {
    const r = await housekeep(db, config);
    if (r.timeMarks + r.idempotencyKeys > 0) log(`housekeeping: deleted ${r.timeMarks} time marks past retention and ${r.idempotencyKeys} expired Idempotency-Keys`);
  }, everyMs, onError, 0);
}
