// Rate-cap send slots as a worker keeps them (docs/delivery-policies.md, "Rate cap across processes"): the claim's
// clock mapped onto this process's clock (also for retries' due times), and the rule that a send never goes later
// than its slot's slack.
//
// The claim hands out slots 1/maxPerSecond apart across every process (rate_tat in the database). What a receiver
// sees is the send times: a send late by L followed by one on time (its own next slot, or another process's)
// squeezes L into one gap, and a window of a second then holds more than the cap. Two things kept a send late:
// - the slot's time in this process: counted from when the claim's answer was read, it was late by however long
//   the answer waited for the event loop (a whole claim's slots at once);
// - the send itself: a timer firing late, a lane still in slow start whose previous request had not answered.
// So slot times are counted from the claim's own clock through the smallest offset seen (ClaimClock), and a
// delivery whose slot passed more than its slack ago does not go in it: it takes the next slot its lane holds, and
// the lane gives back the delivery left without one (missedSlots). Any n + 1 sends then lie in n distinct slots,
// so at least n/rate − slack apart.

/** How late a send may go after its slot: a quarter of the slot interval, at least MIN_SLACK_MS. */
export function slotSlackMs(slotMs: number): number {
  return Math.max(MIN_SLACK_MS, slotMs / 4);
}

/**
 * The least slack, whatever the rate: timers fire to the millisecond at best, and a lane's sends of one instant go in
 * one turn. From 100/s up the bound on a window is then the cap plus about rate × 5 ms, not plus 1.
 */
const MIN_SLACK_MS = 5;

/**
 * The database's clock as this process sees it. Each claim reports its statement clock (`clock_ms`) and is read
 * `answered` later by Date.now(); the difference is the clocks' offset plus the answer's delay. The smallest
 * difference seen is the best estimate of the offset (the delay is never negative); it may drift upwards by
 * DRIFT_PER_MS (clocks drift, a process may be moved), so one fast answer does not fix it for ever.
 */
export class ClaimClock {
  private best = Infinity;
  private bestAt = 0;

  /** How late this answer was read (ms, ≥ 0): subtract it from `answered` to count from the statement's clock. */
  lag(answered: number, clockMs: number): number {
    const seen = answered - clockMs;
    const allowed = this.best + (answered - this.bestAt) * DRIFT_PER_MS;
    if (seen <= allowed) {
      this.best = seen;
      this.bestAt = answered;
      return 0;
    }
    return seen - allowed;
  }

  /** A time of the database's clock (epoch ms) on this process's clock (Date.now()); null before the first claim. */
  local(clockMs: number): number | null {
    return this.best === Infinity ? null : clockMs + this.best;
  }
}

/** How fast the offset estimate may rise (ms per ms): 1 ms a second, far above clock drift. */
const DRIFT_PER_MS = 0.001;

/** What a waiting delivery keeps of its slot: when it may be sent (Date.now() time; 0: no cap) and the interval. */
export interface Slotted {
  notBefore: number;
  slotMs: number;
}

/**
 * A lane's waiting deliveries (in slot order) at `now`: the slots already past their slack are dropped, each
 * delivery takes the slot as many places later, and the deliveries left without one are returned (to be given
 * back and claimed again with new slots). The cap errs towards sending less: a dropped slot is never reused.
 */
export function missedSlots<T extends Slotted>(waiting: T[], now: number): T[] {
  let j = 0;
  while (j < waiting.length && waiting[j].slotMs > 0 && now - waiting[j].notBefore > slotSlackMs(waiting[j].slotMs)) j++;
  if (j === 0) return [];
  for (let i = 0; i + j < waiting.length; i++) {
    waiting[i].notBefore = waiting[i + j].notBefore;
    waiting[i].slotMs = waiting[i + j].slotMs;
  }
  return waiting.splice(waiting.length - j, j);
}
