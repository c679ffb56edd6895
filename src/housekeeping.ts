// Periodic clean-up run by webhook workers: old delivery attempts (retention) and expired Idempotency-Keys.
import type { Queryable } from './db/db.ts';
import type { Config } from './config.ts';
import { purgeAttempts } from './webhooks/queue-store.ts';
import { purgeExpired } from './crm/idempotency/store.ts';

export async function housekeep(db: Queryable, config: Config): Promise<{ attempts: number; idempotencyKeys: number }> {
  const attempts = await purgeAttempts(db, config.webhookRetentionDays);
  const idempotencyKeys = await purgeExpired(db);
  return { attempts, idempotencyKeys };
}
