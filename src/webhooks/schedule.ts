// The retry schedule's one constant here: the delays themselves are read by the statement that records a failure
// (recordResults in queue-store.ts: the subscription's retrySchedule, or BULB_WEBHOOK_RETRY_SCHEDULE).
/** schedule_pos that leaves no automatic retries (a manual retry or recover is one attempt). */
export const NO_MORE_RETRIES = 1_000_000;
