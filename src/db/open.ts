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
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  ownerOnly(opts.dataDir, opts.log);
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

/**
 * The embedded database's folder is the owner's alone (0700, as PostgreSQL requires of its data directory): PGlite
 * writes its files 0666 less the umask, and with a umask of 0 every local user could read customers out of the WAL
 * and write pg_control (found by probing, 2026-11-28). A folder the process does not own is left as it is, with a
 * warning.
 */
function ownerOnly(dir: string, log?: (line: string) => void): void {
  try {
    if ((fs.statSync(dir).mode & 0o077) !== 0) fs.chmodSync(dir, 0o700);
  } catch (err) {
    log?.(`warning: could not make BULB_DATA_DIR ${dir} private to its owner (chmod 700): ${(err as Error).message}`);
  }
}
