// Db over embedded PGlite: one in-process PostgreSQL; queries and transactions are serialised by PGlite itself.
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import type { Db, Queryable, QueryResult } from './db.ts';

const parsers = {
  1184: (v: string) => v, // timestamptz as text, like the pg backend
  20: (v: string) => v, // int8
  1700: (v: string) => v, // numeric
};

export class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  private constructor(private pg: PGlite) {}

  /** dataDir: a folder, or 'memory://'. loadDataDir: a snapshot tarball to start from. */
  static async open(dataDir: string, loadDataDir?: Blob): Promise<PgliteDb> {
    const pg = await PGlite.create({ dataDir, loadDataDir, parsers, relaxedDurability: false, extensions: { pg_trgm } });
    return new PgliteDb(pg);
  }

  async query<T>(sql: string, params?: unknown[]): Promise<QueryResult<T>> {
    const r = await this.pg.query<T>(sql, params as any[]);
    return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
  }

  async exec(sql: string): Promise<void> {
    await this.pg.exec(sql);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.pg.transaction(async (t) =>
      fn({
        async query<R>(sql: string, params?: unknown[]) {
          const r = await t.query<R>(sql, params as any[]);
          return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
        },
        async exec(sql: string) {
          await t.exec(sql);
        },
      }),
    );
  }

  /** In-process: the notification path cannot be lost, so onLost is never called. */
  async listen(channel: string, onPayload: (payload: string) => void, _onLost?: () => void): Promise<() => Promise<void>> {
    const unsub = await this.pg.listen(channel, onPayload);
    return async () => unsub();
  }

  /** A tarball of the data directory (used to start test databases fast). */
  async dump(): Promise<Blob> {
    return (await this.pg.dumpDataDir('none')) as Blob;
  }

  async close(): Promise<void> {
    if (!this.pg.closed) await this.pg.close();
  }
}
