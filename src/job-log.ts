// What the background jobs say (src/scheduler.ts), logged as the HTTP server logs: JSON lines (pino) at BULB_LOG_LEVEL,
// an error with its stack and fields in its one line. Until 2026-11-28 they went to console.error: multi-line dumps
// between the JSON lines (692 lines in an 8 s database restart, found by probing), and BULB_LOG_LEVEL did not reach them.
import pino from 'pino';
import type { Config } from './config.ts';

export type JobLog = (message: string, err?: unknown) => void;

/** An error a job says again within this long of its last line is counted, not logged (then said with the count). */
export const REPEAT_EVERY_MS = 5_000;

/**
 * Each error message is logged at most once every REPEAT_EVERY_MS, the next line saying how many were left out
 * (`repeated`): while the database is down every loop fails on each turn, and the log took ~18 lines of ~700 bytes a
 * second per process (found by a probe, 2026-11-29), as the 503 warnings of requests are bounded (docs/operations.md).
 */
export function jobLog(config: Pick<Config, 'logLevel' | 'role'>, destination?: pino.DestinationStream, now: () => number = Date.now): JobLog {
  const logger = pino({ level: config.logLevel, base: { pid: process.pid, role: config.role } }, destination);
  const last = new Map<string, { at: number; repeated: number }>();
  return (m, e) => {
    if (e === undefined) return logger.info(m);
    const t = now();
    const seen = last.get(m);
    if (seen && t - seen.at < REPEAT_EVERY_MS) {
      seen.repeated++;
      return;
    }
    if (last.size >= 1000) last.clear(); // the messages are the jobs' own, a handful: a bound all the same
    last.set(m, { at: t, repeated: 0 });
    if (seen?.repeated) logger.error({ err: e, repeated: seen.repeated }, `${m} (${seen.repeated} more since the last such line)`);
    else logger.error({ err: e }, m);
  };
}
