// The one database interface the rest of Bulb uses, over node-postgres or embedded PGlite.
import { createHash } from 'node:crypto';
export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  /**
   * name: a hot statement's name; on PostgreSQL it is prepared once per connection and reused (no parsing or
   * planning per call). Give a name only to SQL whose text never varies with the values (one name, one text).
   */
  query<T = any>(sql: string, params?: unknown[], name?: string): Promise<QueryResult<T>>;
  /** Runs several ;-separated statements without parameters (migrations, scripts). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Runs fn in one transaction; commits if it resolves, rolls back if it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * Runs fn on one connection of its own, outside any transaction (each statement commits by itself): for
   * session-level locks and statements that refuse to run in a transaction (CREATE INDEX CONCURRENTLY).
   */
  session<T>(fn: (s: Queryable) => Promise<T>): Promise<T>;
  /**
   * Subscribes to NOTIFY on a channel; resolves (once LISTEN is in place) to an unsubscribe function.
   * onLost: the connection carrying notifications broke, so some may be missed; once it is re-established
   * (and LISTEN re-issued), onPayload('') is called.
   */
  listen(channel: string, onPayload: (payload: string) => void, onLost?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Page sizes a list statement's LIMIT is rounded up to, so a few texts serve every `limit`. */
const FETCH_SIZES = [10, 50, 100, 250];

/**
 * Rows a list statement fetches for a page: limit + 1, the limit rounded up to one of FETCH_SIZES, written into the
 * text as a literal (with `LIMIT $n` a generic plan assumes a tenth of the rows, and may sort a table instead of
 * walking an index). The caller keeps the first limit + 1.
 */
export function fetchSize(limit: number): number {
  return (FETCH_SIZES.find((n) => n >= limit) ?? limit) + 1;
}

const names = new Map<string, string>();

/** A prepared-statement name for SQL built from a few fixed shapes: the prefix and a digest of the text. */
export function statementName(prefix: string, sql: string): string {
  let n = names.get(sql);
  if (n === undefined) {
    n = `${prefix}_${createHash('sha1').update(sql).digest('hex').slice(0, 16)}`;
    if (names.size < 1000) names.set(sql, n);
  }
  return n;
}

/** SQLSTATEs worth retrying a whole transaction for. */
export const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/** A lost race found by the code itself (SQLSTATE 40001, as a serialization failure): withRetry runs the transaction again. */
export const lostRaceError = (why: string) => Object.assign(new Error(why), { code: '40001' });

export function sqlState(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof (err as any).code === 'string'
    ? (err as any).code
    : undefined;
}

export interface TransactionOptions {
  /**
   * No statement deadline (BULB_DATABASE_STATEMENT_DEADLINE_MS): for maintenance whose statements may rightly run for
   * minutes on a large database (migrations, partition maintenance), which a deadline would fail for ever.
   */
  unbounded?: boolean;
}

/** Runs a transaction, retrying serialization failures and deadlocks a few times. */
export function withRetry<T>(db: Db, fn: (tx: Queryable) => Promise<T>, attempts = 5, opts?: TransactionOptions): Promise<T> {
  return retried(() => db.transaction(fn, opts), attempts);
}

/** Runs `run` again after a serialization failure or a deadlock (it rolled back whole), up to `attempts` times in all. */
export async function retried<T>(run: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await run();
    } catch (err) {
      if (i >= attempts || !RETRYABLE_SQLSTATES.has(sqlState(err) ?? '')) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * i));
    }
  }
}
