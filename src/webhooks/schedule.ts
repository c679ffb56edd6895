// The retry schedule's constants and the Retry-After rules here: the delays themselves are read by the statement that
// records a failure (recordResults in queue-store.ts: the subscription's retrySchedule, or BULB_WEBHOOK_RETRY_SCHEDULE).
/** schedule_pos that leaves no automatic retries (a manual retry or recover is one attempt). */
export const NO_MORE_RETRIES = 1_000_000;

/**
 * The shortest pause a Retry-After makes (ms). `Retry-After: 0` (or a date already past) asks for a retry now: taken
 * literally, with a pause that consumes no retry, one receiver got 258 attempts of one delivery in 5 s.
 */
export const RETRY_AFTER_MIN_MS = 1_000;

/**
 * How many times Retry-After may defer one delivery without using up a step of its schedule. Past that, a 429/503 with
 * Retry-After is an ordinary failure whose next attempt waits the longer of the step and the Retry-After: a receiver
 * that always answers Retry-After cannot keep a delivery pending for ever (docs/delivery.md, "Receiver back-pressure").
 */
export const RETRY_AFTER_DEFERRALS = 5;

/** The pause a receiver's Retry-After makes (ms): at least RETRY_AFTER_MIN_MS. */
export function retryAfterPause(retryAfterMs: number): number {
  return Math.max(RETRY_AFTER_MIN_MS, retryAfterMs);
}

/**
 * Whether a Retry-After answer to a delivery claimed at this attempt count and schedule position defers it (keeps its
 * schedule position). Every attempt but the first either moved the position or used none of it, so the attempts that
 * used none are `attemptCount − schedulePos`: the deferrals so far (a manual retry of a pending delivery, which
 * restores its position, counts as one). A one-attempt delivery (a manual retry or recover of a failed one) has
 * nothing to defer: its Retry-After answer fails it like any other.
 */
export function retryAfterDefers(attemptCount: number, schedulePos: number): boolean {
  return schedulePos < NO_MORE_RETRIES && attemptCount - schedulePos < RETRY_AFTER_DEFERRALS;
}
