// The webhook stats' hourly rollup (docs/delivery.md, "Stats"; migration 078): a job under src/scheduler.ts that
// counts each closed hour's attempts per subscription into webhook_attempt_hours, so that GET …/webhooks/stats reads
// those rows for the hours rolled up and counts attempts only after them (stats-store.ts attemptStats), and deletes
// the rows past the longest window.
//
// Late rows. An attempt's started_at is when it started, on its worker's clock; its row is written when it ends (its
// deadline: BULB_WEBHOOK_TIMEOUT_MS, at most 10 minutes, twice that for an OAuth2 attempt's token and retry) and the writer's batch goes out (milliseconds; while the
// database refuses the write, the writer retries it until it goes in). So an hour is rolled up once it has been
// closed for SETTLE_MS (25 minutes: the longest deadline, 20, and 5 minutes for the batch and the clocks), and each pass
// that moves the rollup on counts the REROLL_HOURS hours before again: a row written up to 3 h 25 min after its
// hour ended (a worker cut off from the database for that long, its results held) is counted too. One written
// later still is left out of the rollup (the stats count one attempt fewer for its hour).
//
// Several workers: each transaction locks the rollup's one row (FOR UPDATE SKIP LOCKED): a second pass skips while
// one runs. Rerun: an hour counted again gets the same rows (INSERT … ON CONFLICT DO UPDATE), so passes are
// idempotent. One hour per transaction: a transaction's work is an hour of attempts, whatever the backlog.
import type { Db } from '../db/db.ts';
import { startLoop } from '../loop.ts';
import { deleteHoursBefore, lockRolled, rollHours, setRolled } from './stats-store.ts';

const HOUR_MS = 3_600_000;
/** How long an hour has been closed before it is rolled up. */
export const SETTLE_MS = 25 * 60_000;
/** The hours before the rollup's end each pass that moves it counts again (attempts whose rows came late). */
export const REROLL_HOURS = 3;
/** The hours kept: the stats' longest window (168, the current hour included) and one for the clocks. */
export const KEEP_HOURS = 169;

const floorHour = (t: number) => Math.floor(t / HOUR_MS) * HOUR_MS;

export interface RollupResult {
  /** Hours counted (again, for the REROLL_HOURS hours). */
  hours: number;
  /** Where the rollup ends now (null: another worker's pass held it, or nothing to roll up yet). */
  until: Date | null;
  /** Rows past KEEP_HOURS deleted. */
  deleted: number;
}

/**
 * One pass: rolls up the closed hours not rolled up yet (and the REROLL_HOURS before them), an hour per transaction,
 * and deletes the rows past KEEP_HOURS. `now`: the time to measure the hours on (tests); else the database's clock.
 */
export async function rollUpStats(db: Db, opts: { now?: Date; stopped?: () => boolean } = {}): Promise<RollupResult> {
  const result: RollupResult = { hours: 0, until: null, deleted: 0 };
  let next: number | undefined; // this pass's next hour to count
  for (;;) {
    if (opts.stopped?.()) return result;
    const more = await db.transaction(async (tx) => {
      const w = await lockRolled(tx);
      if (!w) return false; // another worker's pass runs
      const now = (opts.now ?? w.now).getTime();
      const horizon = floorHour(now) - (KEEP_HOURS - 1) * HOUR_MS;
      const target = floorHour(now - SETTLE_MS);
      const until = w.until?.getTime() ?? null;
      // Rolled up before, and not past the horizon since (the job stopped for a week): go on from there.
      const kept = until !== null && until >= horizon;
      if (next === undefined) next = kept ? Math.max(horizon, until - REROLL_HOURS * HOUR_MS) : horizon;
      if (next < horizon) next = horizon;
      if (kept && next > until) next = until; // another pass moved the rollup meanwhile: only ever on from its end
      const from = kept && w.from !== null ? Math.max(w.from.getTime(), horizon) : horizon;
      result.deleted += await deleteHoursBefore(tx, new Date(horizon));
      // Nothing to count unless the rollup moves on: a pass within the same hour does nothing more.
      if (next >= target || (kept && until >= target)) {
        if (kept && w.from !== null && from !== w.from.getTime()) await setRolled(tx, { from: new Date(from), until: new Date(until) });
        result.until = kept ? new Date(until) : null;
        return false;
      }
      await rollHours(tx, new Date(next), new Date(next + HOUR_MS));
      next += HOUR_MS;
      const end = kept ? Math.max(until, next) : next;
      await setRolled(tx, { from: new Date(from), until: new Date(end) });
      result.hours++;
      result.until = new Date(end);
      return true;
    });
    if (!more) return result;
  }
}

/**
 * The job: a pass at start, then every `everyMs` (a pass within an hour already rolled up is a look-up and an empty
 * DELETE); a pass that counted or deleted something says so.
 */
export function startStatsRollup(db: Db, everyMs: number, log: (message: string) => void, onError: (err: unknown) => void): () => Promise<void> {
  return startLoop(async (stopped) => {
    const r = await rollUpStats(db, { stopped });
    if (r.hours + r.deleted > 0) {
      log(`webhook stats: rolled up to ${r.until?.toISOString() ?? 'nothing yet'} (${r.hours} hours counted), ${r.deleted} rows past ${KEEP_HOURS} hours deleted`);
    }
  }, everyMs, onError, 0);
}
