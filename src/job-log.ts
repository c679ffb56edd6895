// What the background jobs say (src/scheduler.ts), logged as the HTTP server logs: JSON lines (pino) at BULB_LOG_LEVEL,
// an error with its stack and fields in its one line. Until 2026-11-28 they went to console.error: multi-line dumps
// between the JSON lines (692 lines in an 8 s database restart, found by probing), and BULB_LOG_LEVEL did not reach them.
import os from 'node:os';
import pino from 'pino';
import type { Config } from './config.ts';

/** A job's line: an error (with its stack) when `err` is given, else a notice; `warn`: a warning with its fields. */
export interface JobLog {
  (message: string, err?: unknown): void;
  warn?(message: string, fields: Record<string, unknown>): void;
}

/** An error a job says again within this long of its last line is counted, not logged (then said with the count). */
export const REPEAT_EVERY_MS = 5_000;

/**
 * Each error message is logged at most once every REPEAT_EVERY_MS, the next line saying how many were left out
 * (`repeated`): while the database is down every loop fails on each turn, and the log took ~18 lines of ~700 bytes a
 * second per process (found by a probe, 2026-11-29), as the 503 warnings of requests are bounded (docs/operations.md).
 */
export function jobLog(
  config: Pick<Config, 'logLevel' | 'role'>,
  destination?: pino.DestinationStream,
  now: () => number = Date.now,
  later: (fn: () => void, ms: number) => void = (fn, ms) => void setTimeout(fn, ms).unref(),
): JobLog {
  // hostname as pino has it by default: several workers (each pid 1 in its container) are told apart by it
  const logger = pino({ level: config.logLevel, base: { pid: process.pid, hostname: os.hostname(), role: config.role } }, destination);
  const last = new Map<string, { at: number; repeated: number; err: unknown }>();
  /**
   * Said at most once every REPEAT_EVERY_MS per message: `line` writes one, with the count of those left out since
   * (0 for the first). Errors and warnings alike: a receiver down at volume failed 10,000 deliveries in a minute, a
   * warn line each (a review probe, 2026-11-29).
   */
  const throttled = (m: string, detail: unknown, line: (detail: unknown, leftOut: number) => void) => {
    const t = now();
    const seen = last.get(m);
    if (seen && t - seen.at < REPEAT_EVERY_MS) {
      seen.err = detail;
      // The window's count is said at its end even if no failure follows (an outage's last errors were never counted).
      if (seen.repeated++ === 0) {
        later(() => {
          if (last.get(m) !== seen || seen.repeated === 0) return;
          line(seen.err, seen.repeated);
          last.set(m, { at: now(), repeated: 0, err: undefined });
        }, seen.at + REPEAT_EVERY_MS - t);
      }
      return;
    }
    if (last.size >= 1000) last.clear(); // the messages are the jobs' own, a handful: a bound all the same
    last.set(m, { at: t, repeated: 0, err: undefined });
    line(detail, seen?.repeated ?? 0);
  };
  const counted = (m: string, n: number) => (n ? `${m} (${n} more since the last such line)` : m);
  const log: JobLog = (m, e) => {
    if (e === undefined) return logger.info(m);
    throttled(m, e, (err, n) => logger.error(n ? { err, repeated: n } : { err }, counted(m, n)));
  };
  // The fields are the last one's (a line per window names one delivery, and says how many more there were).
  log.warn = (m, fields) => throttled(m, fields, (f, n) => logger.warn(n ? { ...(f as object), repeated: n } : (f as object), counted(m, n)));
  return log;
}
