// Opens the configured database: PostgreSQL when a URL is given, else embedded PGlite.
import fs from 'node:fs';
import type { Db } from './db.ts';
import { PgDb } from './pg.ts';
import { decidePooling, type PreparedSetting } from './pooler.ts';
import { PgliteDb } from './pglite.ts';
import { lockDataDir } from './data-dir-lock.ts';

export interface OpenOptions {
  databaseUrl?: string;
  /** With databaseUrl: a direct connection for sessions, and whether to prepare statements by name. */
  databaseDirectUrl?: string;
  databasePreparedStatements?: PreparedSetting;
  /** A pooled statement unanswered this long closes its connection (ms; 0 or unset: never). */
  databaseStatementDeadlineMs?: number;
  dataDir: string;
  poolSize?: number;
  /** Told how the connection was judged (pooler or not, prepared statements). */
  log?: (line: string) => void;
}

export async function openDb(opts: OpenOptions): Promise<Db> {
  if (opts.databaseUrl) {
    const d = await decidePooling(opts.databaseUrl, opts.databaseDirectUrl, opts.databasePreparedStatements ?? 'auto');
    opts.log?.(d.summary);
    return new PgDb(opts.databaseUrl, opts.poolSize, {
      directUrl: opts.databaseDirectUrl, preparedStatements: d.preparedStatements, statementDeadlineMs: opts.databaseStatementDeadlineMs,
    });
  }
  if (opts.dataDir.startsWith('memory://')) return PgliteDb.open(opts.dataDir);
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const release = lockDataDir(opts.dataDir);
  try {
    const db = await PgliteDb.open(opts.dataDir);
    const close = db.close.bind(db);
    db.close = async () => {
      await close();
      release();
    };
    return db;
  } catch (err) {
    release();
    throw err;
  }
}
