// Periodic clean-up run by webhook workers: time marks past retention, expired Idempotency-Keys. Events, deliveries
// and attempts go with their partitions (src/partitions/); a deleted subscription's pending deliveries are cancelled
// by the workers' sweep (src/webhooks/queue-store.ts discoverLanes).
import type { Queryable } from './db/db.ts';
import type { Config } from './config.ts';
import { purgeExpired } from './crm/idempotency/store.ts';
import { purgeTimeMarks } from './events/time-marks.ts';
import { startLoop } from './loop.ts';

export async function housekeep(db: Queryable, config: Config): Promise<{ idempotencyKeys: number }> {
  await purgeTimeMarks(db, config.eventRetentionDays);
  const idempotencyKeys = await purgeExpired(db);
  return { idempotencyKeys };
}

/** The housekeeping job: a pass at start, then every `everyMs` (the scheduler's room for it, src/scheduler.ts). */
export function startHousekeeping(db: Queryable, config: Config, everyMs: number, onError: (err: unknown) => void): () => Promise<void> {
  return startLoop(() => housekeep(db, config), everyMs, onError, 0);
}
