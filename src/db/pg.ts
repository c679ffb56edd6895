// Db over a PostgreSQL server (node-postgres pool plus one dedicated LISTEN connection).
import pg from 'pg';
import type { Db, Queryable, QueryResult } from './db.ts';

// Timestamps and bigints come back as strings; the code formats them itself.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => v);
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => v);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => v);

// Sessions run in UTC, like PGlite, so that timestamptz text (and now()::date, date_trunc…) is the same on both.
const SESSION_OPTIONS = '-c TimeZone=UTC';

export class PgDb implements Db {
  readonly kind = 'pg' as const;
  private pool: pg.Pool;
  private listener: pg.Client | undefined;
  private listeners = new Map<string, Set<(p: string) => void>>();
  private closed = false;

  constructor(private url: string, poolSize = 10) {
    this.pool = new pg.Pool({ connectionString: url, max: poolSize, application_name: 'bulb', options: SESSION_OPTIONS });
    // An idle client dying (e.g. pg_terminate_backend) must not crash the process.
    this.pool.on('error', () => {});
  }

  async query<T>(sql: string, params?: unknown[]): Promise<QueryResult<T>> {
    const r = await this.pool.query(sql, params as any[]);
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken = false;
    const tx: Queryable = {
      async query<R>(sql: string, params?: unknown[]) {
        const r = await client.query(sql, params as any[]);
        return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
      },
      async exec(sql: string) {
        await client.query(sql);
      },
    };
    try {
      await client.query('BEGIN');
      const out = await fn(tx);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw err;
    } finally {
      client.release(broken ? true : undefined);
    }
  }

  async listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      const client = await this.listenClient();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    }
    set.add(onPayload);
    return async () => {
      set!.delete(onPayload);
    };
  }

  private async listenClient(): Promise<pg.Client> {
    if (this.listener) return this.listener;
    const client = new pg.Client({ connectionString: this.url, application_name: 'bulb-listen', options: SESSION_OPTIONS });
    client.on('notification', (msg) => {
      for (const cb of this.listeners.get(msg.channel) ?? []) cb(msg.payload ?? '');
    });
    client.on('error', () => this.reconnectListener(client));
    client.on('end', () => this.reconnectListener(client));
    await client.connect();
    this.listener = client;
    return client;
  }

  /** The LISTEN connection was lost: open a new one and re-subscribe (callers also poll, so nothing is lost). */
  private reconnectListener(dead: pg.Client) {
    if (this.listener !== dead || this.closed) return;
    this.listener = undefined;
    const retry = async () => {
      if (this.closed) return;
      try {
        const client = await this.listenClient();
        for (const channel of this.listeners.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
        // Wake everyone: notifications may have been missed while disconnected.
        for (const set of this.listeners.values()) for (const cb of set) cb('');
      } catch {
        this.listener = undefined;
        setTimeout(retry, 500).unref();
      }
    };
    setTimeout(retry, 100).unref();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => {});
    await this.pool.end();
  }
}
