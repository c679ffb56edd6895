// Periodic clean-up run by webhook workers: old delivery attempts, events and time marks (retention), expired
// Idempotency-Keys, pending deliveries of deleted subscriptions.
import type { Queryable } from './db/db.ts';
import type { Config } from './config.ts';
import { purgeAttempts } from './webhooks/queue-store.ts';
import { purgeExpired } from './crm/idempotency/store.ts';
import { purgeEvents } from './events/store.ts';
import { cancelStranded } from './webhooks/store.ts';
import { purgeTimeMarks } from './events/time-marks.ts';
import { startLoop } from './loop.ts';

export async function housekeep(db: Queryable, config: Config): Promise<{ attempts: number; events: number; idempotencyKeys: number }> {
  await cancelStranded(db); // first: an event kept only by such a delivery may then go
  const attempts = await purgeAttempts(db, config.webhookRetentionDays);
  // After the attempts: an event whose attempts just went may go too (pending deliveries keep theirs).
  const events = await purgeEvents(db, config.eventRetentionDays);
  await purgeTimeMarks(db, config.eventRetentionDays);
  const idempotencyKeys = await purgeExpired(db);
  return { attempts, events, idempotencyKeys };
}

/** The housekeeping job: a pass at start, then every `everyMs` (the scheduler's room for it, src/scheduler.ts). */
export function startHousekeeping(db: Queryable, config: Config, everyMs: number, onError: (err: unknown) => void): () => Promise<void> {
  return startLoop(() => housekeep(db, config), everyMs, onError, 0);
}
