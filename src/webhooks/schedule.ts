// The retry schedule: after the n-th failure of a round, wait schedule[n]; past its end, the delivery fails.
/** Delay in ms before the next attempt, or null when no attempts are left. */
export function nextDelayMs(schedule: number[], schedulePos: number): number | null {
  return schedulePos < schedule.length ? Math.round(schedule[schedulePos] * 1000) : null;
}

/** schedule_pos that leaves no automatic retries (a manual retry or recover is one attempt). */
export const NO_MORE_RETRIES = 1_000_000;
