// Webhook metrics on the shared Prometheus registry: attempts and deliveries by outcome, attempt
// duration, queue depth and the age of the oldest due delivery (read from the database at scrape time).
import client from 'prom-client';
import { registry } from '../http/metrics.ts';
import type { Db } from '../db/db.ts';
import { queueStats } from './queue-store.ts';

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

async function stats() {
  if (!queueDb) return { depth: 0, oldestDueSec: 0 };
  try {
    return await queueStats(queueDb);
  } catch {
    return { depth: 0, oldestDueSec: 0 };
  }
}

new client.Gauge({
  name: 'bulb_webhook_queue_depth',
  help: 'Pending webhook deliveries of active subscriptions (due or scheduled)',
  registers: [registry],
  async collect() {
    this.set((await stats()).depth);
  },
});

new client.Gauge({
  name: 'bulb_webhook_oldest_due_age_seconds',
  help: 'How long the oldest due, undelivered webhook delivery has been waiting',
  registers: [registry],
  async collect() {
    this.set((await stats()).oldestDueSec);
  },
});
