// A subscription's delivery policies (2026-11, docs/delivery-policies.md): its retry schedule and jitter, and its
// rate cap. The bounds a schema cannot say (the schedule's 7-day total) are checked here: a 400 naming the field.
import { invalid } from '../http/errors.ts';

/** Most a subscription's schedule may add up to: 7 days, in seconds. */
export const MAX_SCHEDULE_TOTAL_SEC = 7 * 86400;

/** What a subscription states about its deliveries; undefined: unchanged (or the default on create). */
export interface PolicyWrite {
  /** Delays in seconds; null: the service's BULB_WEBHOOK_RETRY_SCHEDULE. */
  retrySchedule?: number[] | null;
  /** Percent, 0–50. */
  retryJitter?: number;
  /** Attempts per second across every worker; null: no cap. */
  maxPerSecond?: number | null;
}

/** The bounds the request schema leaves to code (the schema has the count, each step, the jitter and the rate). */
export function checkPolicy(p: PolicyWrite): void {
  if (p.retrySchedule) {
    const total = p.retrySchedule.reduce((a, b) => a + b, 0);
    if (total > MAX_SCHEDULE_TOTAL_SEC) {
      throw invalid(`"retrySchedule" must add up to at most 7 days (${MAX_SCHEDULE_TOTAL_SEC} s); these delays add up to ${total} s`, 'retrySchedule');
    }
  }
}
