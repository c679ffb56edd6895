// Every background job of a process, under one scheduler: each job is a room of its own (its module owns its loop
// or worker), listed here with the roles that run it, started in order and stopped together. main.ts starts them;
// nothing else runs work on a timer of its own (the webhook dispatcher included: its housekeeping is a job here).
import type { Config, Role } from './config.ts';
import type { Db } from './db/db.ts';
import type { JobLog } from './job-log.ts';
import { startAutovacuum } from './db/autovacuum.ts';
import { startTimeMarks } from './events/time-marks.ts';
import { startHousekeeping } from './housekeeping.ts';
import { startPartitionMaintenance } from './partitions/maintain.ts';
import { startKeyBackfill } from './partitions/backfill.ts';
import { Dispatcher } from './webhooks/dispatcher.ts';
import { ReplayWorker } from './webhooks/replay-worker.ts';
import { startStatsRollup } from './webhooks/stats-rollup.ts';
import { startDuplicateRefresher } from './crm/duplicates/refresh.ts';
import { ImportWorker } from './imports/worker.ts';

export type Stop = () => Promise<void>;

export interface Job {
  name: string;
  /** `any`: every process (api, worker, all); `worker`: processes that do background work (worker, all). */
  runs: 'any' | 'worker';
  start(): Promise<Stop>;
}


export function backgroundJobs(db: Db, config: Config, log: JobLog): Job[] {
  const failed = (name: string) => (err: unknown) => log(`${name} failed`, err);
  return [
    // PGlite has no autovacuum daemon: Bulb vacuums and analyzes its tables itself (a no-op on PostgreSQL).
    { name: 'autovacuum', runs: 'any', start: async () => startAutovacuum(db, 60_000, failed('autovacuum')) },
    // The events API's since/until read a time → transaction-id map: every process marks the time once a minute.
    { name: 'time marks', runs: 'any', start: async () => startTimeMarks(db, 60_000, failed('time mark')) },
    // Webhook delivery: claims due deliveries, wakes on NOTIFY; stop() stops claiming and drains.
    {
      name: 'webhook delivery', runs: 'worker',
      start: async () => {
        const dispatcher = new Dispatcher(db, config, { log: (m, e) => log(`webhooks: ${m}`, e), warn: (m, f) => log.warn?.(`webhooks: ${m}`, f) });
        await dispatcher.start();
        return () => dispatcher.stop();
      },
    },
    // Time partitions of events, deliveries and attempts: days created ahead, retention by dropping whole partitions
    // (src/partitions/, docs/partitioning.md).
    {
      name: 'partitions', runs: 'worker',
      start: async () => startPartitionMaintenance(db, config, 3_600_000, (m) => log(m), failed('partition maintenance')),
    },
    // The partition keys of rows written before the conversion (deliveries' event_created_at, attempts'
    // delivery_created_at), filled in batches once (migration 060).
    {
      name: 'partition key backfill', runs: 'worker',
      start: async () => startKeyBackfill(db, 3_600_000, (m) => log(m), failed('partition key backfill')),
    },
    // Time marks past retention, expired Idempotency-Keys.
    { name: 'housekeeping', runs: 'worker', start: async () => startHousekeeping(db, config, 3_600_000, (m) => log(m), failed('housekeeping')) },
    // The webhook stats' hourly rollup: closed hours' attempts per subscription (src/webhooks/stats-rollup.ts).
    { name: 'webhook stats rollup', runs: 'worker', start: async () => startStatsRollup(db, 300_000, (m) => log(m), failed('webhook stats rollup')) },
    // Possible duplicates: folds changed customers into the pairs table (SPEC §14).
    { name: 'duplicates refresh', runs: 'worker', start: async () => startDuplicateRefresher(db, config.defaultPhoneRegion, 1000, failed('duplicate refresh')) },
    // Imports: applies uploaded files in committed chunks.
    {
      name: 'imports', runs: 'worker',
      start: async () => {
        const imports = new ImportWorker(db, config, log);
        await imports.start();
        return () => imports.stop();
      },
    },
    // Webhook replays: queues a replay's deliveries in committed chunks (one INSERT … SELECT each).
    {
      name: 'replays', runs: 'worker',
      start: async () => {
        const replays = new ReplayWorker(db, { log });
        await replays.start();
        return () => replays.stop();
      },
    },
  ];
}

/** Starts the jobs this role runs, in order; the stops come back in the same order. */
export async function startJobs(jobs: Job[], role: Role): Promise<Stop[]> {
  const stops: Stop[] = [];
  for (const job of jobs) if (job.runs === 'any' || role !== 'api') stops.push(await job.start());
  return stops;
}
