// Webhook metrics on the shared Prometheus registry: attempts and deliveries by outcome, attempt
// duration, queue depth and the age of the oldest due delivery (read from the database at scrape time).
import client from 'prom-client';
import { registry } from '../http/metrics.ts';
import type { Db } from '../db/db.ts';
import { queueStats } from './queue-store.ts';
import { ERROR_CODES } from './outcome.ts';

export const attemptsTotal = new client.Counter({
  name: 'bulb_webhook_attempts_total',
  help: 'Webhook delivery attempts by outcome (success|failure) and errorCode',
  labelNames: ['outcome', 'error_code'] as const,
  registers: [registry],
});

export const deliveriesTotal = new client.Counter({
  name: 'bulb_webhook_deliveries_total',
  help: 'Webhook deliveries by outcome: delivered, retry (re-queued after a failure), failed (no attempts left)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const attemptDuration = new client.Histogram({
  name: 'bulb_webhook_attempt_duration_seconds',
  help: 'Duration of one webhook attempt (connect to last byte kept)',
  labelNames: ['outcome'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
  registers: [registry],
});

// Every series starts at 0 in every process, so that a rate or a ratio over them answers 0, not nothing, after a
// restart (an alert on failed deliveries had no series to read until the first failure).
for (const outcome of ['delivered', 'retry', 'failed']) deliveriesTotal.labels(outcome).inc(0);
attemptsTotal.labels('success', '').inc(0);
for (const code of ERROR_CODES) attemptsTotal.labels('failure', code).inc(0);
for (const outcome of ['success', 'failure']) attemptDuration.zero({ outcome });

const attemptMetrics = new Map<string, { count: client.Counter.Internal; duration: client.Histogram.Internal<string> }>();

/** Counts one attempt and its duration (the labelled series looked up once per outcome and error, not per attempt). */
export function observeAttempt(ok: boolean, errorCode: string | null, seconds: number): void {
  const outcome = ok ? 'success' : 'failure';
  const key = `${outcome}/${errorCode ?? ''}`;
  let m = attemptMetrics.get(key);
  if (!m) attemptMetrics.set(key, (m = { count: attemptsTotal.labels(outcome, errorCode ?? ''), duration: attemptDuration.labels(outcome) }));
  m.count.inc();
  m.duration.observe(seconds);
}

let queueDb: Db | undefined;
/** The database whose queue the gauges report (the last one registered in this process). */
export function watchQueue(db: Db) {
  queueDb = db;
}

/** How long a scrape waits for the queue's figures (a usual scrape timeout is 10 s; the statement deadline is 60 s). */
const STATS_WAIT_MS = 5_000;
type Stats = { depth: number; oldestDueSec: number };
let last: { at: number; figures: Promise<Stats | null> } | undefined;

/**
 * The queue's figures for one scrape (both gauges share one query), or null when the database did not give them in time.
 * They were 0 then (found by probing, 2026-11-28): an alert on the queue went quiet exactly when delivery stalled.
 */
function stats(): Promise<Stats | null> {
  if (!queueDb) return Promise.resolve({ depth: 0, oldestDueSec: 0 });
  const now = Date.now();
  if (last && now - last.at < 1_000) return last.figures;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((r) => (timer = setTimeout(() => r(null), STATS_WAIT_MS)));
  const figures = Promise.race([queueStats(queueDb).catch(() => null), late]).finally(() => clearTimeout(timer));
  last = { at: now, figures };
  return figures;
}

new client.Gauge({
  name: 'bulb_webhook_queue_depth',
  help: 'Pending webhook deliveries of active subscriptions (due or scheduled); NaN while the database cannot say',
  registers: [registry],
  async collect() {
    this.set((await stats())?.depth ?? NaN);
  },
});

new client.Gauge({
  name: 'bulb_webhook_oldest_due_age_seconds',
  help: 'How long the oldest due, undelivered webhook delivery has been waiting; NaN while the database cannot say',
  registers: [registry],
  async collect() {
    this.set((await stats())?.oldestDueSec ?? NaN);
  },
});

new client.Gauge({
  name: 'bulb_webhook_queue_stats_ok',
  help: '1 when this scrape read the queue figures from the database, 0 when it could not (alert on 0)',
  registers: [registry],
  async collect() {
    this.set((await stats()) === null ? 0 : 1);
  },
});
