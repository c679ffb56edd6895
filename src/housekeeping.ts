// Periodic clean-up run by webhook workers: old delivery attempts and time marks (retention), expired
// Idempotency-Keys, pending deliveries of deleted subscriptions. Events and deliveries go with their partitions
// (src/partitions/).
import type { Queryable } from './db/db.ts';
import type { Config } from './config.ts';
import { purgeAttempts } from './webhooks/queue-store.ts';
import { purgeExpired } from './crm/idempotency/store.ts';
import { cancelStranded } from './webhooks/store.ts';
import { purgeTimeMarks } from './events/time-marks.ts';
import { startLoop } from './loop.ts';

export async function housekeep(db: Queryable, config: Config): Promise<{ attempts: number; idempotencyKeys: number }> {
  await cancelStranded(db); // a deleted subscription's pending deliveries no longer keep their events' partitions
  const attempts = await purgeAttempts(db, config.webhookRetentionDays);
  await purgeTimeMarks(db, config.eventRetentionDays);
  const idempotencyKeys = await purgeExpired(db);
  return { attempts, idempotencyKeys };
}

/** The housekeeping job: a pass at start, then every `everyMs` (the scheduler's room for it, src/scheduler.ts). */
export function startHousekeeping(db: Queryable, config: Config, everyMs: number, onError: (err: unknown) => void): () => Promise<void> {
  return startLoop(() => housekeep(db, config), everyMs, onError, 0);
}
