// The time-partitioned tables (docs/partitioning.md): each partitioned by `key` in daily ranges [day, day + 1) in
// UTC, named <table>_pYYYYMMDD, beside the <table>_legacy partition [MINVALUE, cutover) that holds a converted
// deployment's rows (migrations 054, 055) and a DEFAULT partition kept empty (an insert never fails for want of a
// partition). `keepDays`: how long their rows stay (whole days: a day's partition goes once all of it is older).
import type { Config } from '../config.ts';

export interface PartitionedTable {
  table: string;
  key: string;
  /** Storage parameters of each partition (the parent, partitioned, has none). */
  with?: string;
  keepDays(config: RetentionConfig): number;
}

export type RetentionConfig = Pick<Config, 'eventRetentionDays' | 'webhookRetentionDays'>;

export const EVENTS: PartitionedTable = {
  table: 'events',
  key: 'created_at',
  // Kept as long as the deliveries' logs may name them, and past that while a pending delivery needs one (see
  // runRetention).
  keepDays: (c) => Math.max(c.eventRetentionDays, c.webhookRetentionDays),
};

export const DELIVERIES: PartitionedTable = {
  table: 'webhook_deliveries',
  key: 'created_at',
  // Updated in place (status, lease, schedule): room on the page for HOT updates (migration 019).
  with: 'fillfactor = 60',
  keepDays: (c) => c.webhookRetentionDays,
};

export const ATTEMPTS: PartitionedTable = {
  table: 'webhook_attempts',
  key: 'started_at',
  keepDays: (c) => c.webhookRetentionDays,
};

/** In the order retention visits them: deliveries first, so the events they alone needed may go in the same pass. */
export const PARTITIONED: PartitionedTable[] = [DELIVERIES, ATTEMPTS, EVENTS];

/** Days created ahead of today. */
export const DAYS_AHEAD = 7;
