// Errors that mean "the database cannot serve right now" (unreachable, restarting, a failover under way, a standby
// not yet promoted), as opposed to a fault in the request or in Bulb: the API answers them 503 with Retry-After,
// so a client retries instead of treating the write as failed for good (docs/operations.md, Failover).

/** SQLSTATE classes and codes of an unavailable server. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown (a fast or immediate stop, pg_terminate_backend)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovering)
  '25006', // read_only_sql_transaction: connected to a standby (not yet promoted)
  '53300', // too_many_connections
  '53100', // disk_full: no write succeeds until space is freed (a 500 per write until 2026-11-29, /ready 200)
  '53200', // out_of_memory
]);

/** When a statement last failed for a full disk (Date.now()), for /ready: a server whose disk is full is not ready. */
let diskFullAt = 0;
/** How long after its last disk-full failure /ready says 503 (a write that succeeds meanwhile does not end it early). */
export const DISK_FULL_UNREADY_MS = 10_000;
export function isDiskFull(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '53100';
}
export function noteDiskFull(now = Date.now()): void {
  diskFullAt = now;
}
/** How many ms ago a statement failed for a full disk, when that is within DISK_FULL_UNREADY_MS; else null. */
export function diskFullRecently(now = Date.now()): number | null {
  return diskFullAt > 0 && now - diskFullAt < DISK_FULL_UNREADY_MS ? now - diskFullAt : null;
}

/** Socket-level failures of the connection to the database. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** node-postgres's message when no pooled connection came free in time, or a new one could not connect in time. */
export const NO_CONNECTION_IN_TIME = /^timeout exceeded when trying to connect/;

/**
 * node-postgres's own messages for a connection that broke or could not be had in time (no code is set), and Node's
 * for a write to a socket the server has closed (code EPIPE but no syscall: a query sent as the server went away).
 */
const PG_MESSAGES = [
  /^Connection terminated/, NO_CONNECTION_IN_TIME, /^Client has encountered a connection error/, /^Connection ended/,
  /^This socket has been ended by the other party/,
];

/**
 * A statement past BULB_DATABASE_STATEMENT_DEADLINE_MS: cancelled by the server (57014, its statement_timeout) or given
 * up by the client, which closed the connection (node-postgres's query_timeout; pg.ts closeSocket). Also 503.
 */
export function statementDeadlinePassed(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if ((err as { code?: unknown }).code === '57014' && 'severity' in err) return true;
  return (err as { message?: unknown }).message === CLIENT_DEADLINE_MESSAGE;
}

/** node-postgres's error for a statement past its `query_timeout` (the client gave up; pg.ts closes the connection). */
export const CLIENT_DEADLINE_MESSAGE = 'Query read timeout';

export function databaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if (statementDeadlinePassed(err)) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if ('severity' in err) return code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code); // a server's ErrorResponse
    if (NETWORK_CODES.has(code) && 'syscall' in err) return true;
  }
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && PG_MESSAGES.some((re) => re.test(message));
}
