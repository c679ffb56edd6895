// The one database interface the rest of Bulb uses, over node-postgres or embedded PGlite.
export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = any>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
  /** Runs several ;-separated statements without parameters (migrations, scripts). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Runs fn in one transaction; commits if it resolves, rolls back if it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on a channel; resolves to an unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** SQLSTATEs worth retrying a whole transaction for. */
export const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

export function sqlState(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof (err as any).code === 'string'
    ? (err as any).code
    : undefined;
}

/** Runs a transaction, retrying serialization failures and deadlocks a few times. */
export async function withRetry<T>(db: Db, fn: (tx: Queryable) => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(fn);
    } catch (err) {
      if (i >= attempts || !RETRYABLE_SQLSTATES.has(sqlState(err) ?? '')) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * i));
    }
  }
}
