// What the background jobs say (src/scheduler.ts), logged as the HTTP server logs: JSON lines (pino) at BULB_LOG_LEVEL,
// an error with its stack and fields in its one line. Until 2026-11-28 they went to console.error: multi-line dumps
// between the JSON lines (692 lines in an 8 s database restart, found by probing), and BULB_LOG_LEVEL did not reach them.
import pino from 'pino';
import type { Config } from './config.ts';

export type JobLog = (message: string, err?: unknown) => void;

export function jobLog(config: Pick<Config, 'logLevel' | 'role'>, destination?: pino.DestinationStream): JobLog {
  const logger = pino({ level: config.logLevel, base: { pid: process.pid, role: config.role } }, destination);
  return (m, e) => (e === undefined ? logger.info(m) : logger.error({ err: e }, m));
}
