// Opens the configured database: PostgreSQL when a URL is given, else embedded PGlite.
import fs from 'node:fs';
import path from 'node:path';
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
  /** Told what went wrong but did not stop the open (a data folder that could not be made private). */
  warn?: (line: string) => void;
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
  ownerOnly(opts.dataDir, opts.warn);
  const release = lockDataDir(opts.dataDir);
  try {
    refuseHeadless(opts.dataDir);
    const db = await PgliteDb.open(opts.dataDir).catch((err) => {
      throw new DataDirUnusable(`the embedded database in BULB_DATA_DIR ${opts.dataDir} could not be opened (${(err as Error)?.message ?? err})${whyNotOpened(opts.dataDir)}`);
    });
    const mark = path.join(opts.dataDir, OPENED_MARK);
    if (!fs.existsSync(mark)) fs.writeFileSync(mark, 'the embedded database opened here; without PG_VERSION beside this file Bulb refuses the folder\n', { mode: 0o600 });
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

/** Written once the embedded database has opened in the folder: from then on a missing PG_VERSION is damage. */
export const OPENED_MARK = 'bulb.opened';

/** A data folder Bulb will not start on: the start says why and exits 2 (main.ts). */
export class DataDirUnusable extends Error {}

/**
 * A folder holding a database's files but not its PG_VERSION (a partial copy or restore) is refused: PGlite creates a
 * new, empty database wherever PG_VERSION is missing, and the start served it over the old files (found by a probe,
 * 2026-11-29: 63,796 customers gone, the admin key made again from BULB_ADMIN_KEY, nothing said).
 */
function refuseHeadless(dir: string): void {
  if (fs.existsSync(path.join(dir, 'PG_VERSION'))) return;
  // Only a folder that has been opened (OPENED_MARK): a first start cut short (kill, Ctrl-C) leaves base/, global/ and
  // pg_wal/ before PG_VERSION, and must initialise again, as it did (a review probe, 2026-11-29).
  if (!fs.existsSync(path.join(dir, OPENED_MARK))) return;
  const held = ['base', 'global', 'pg_wal'].filter((f) => fs.existsSync(path.join(dir, f)));
  if (held.length === 0) return;
  throw new DataDirUnusable(
    `BULB_DATA_DIR ${dir} holds a database (${held.join(', ')}) without its PG_VERSION file, as a partial copy or restore leaves it: ` +
      'Bulb does not start on it (the embedded database would make a new, empty one over it). Restore the whole folder from its backup',
  );
}

/** What can be said of a folder PGlite failed to open (its own error says only that it failed). */
function whyNotOpened(dir: string): string {
  try {
    const free = fs.statfsSync(dir);
    const mib = Math.floor((free.bavail * free.bsize) / 2 ** 20);
    if (mib < 256) return `: its disk has ${mib} MiB free; free some space and start again`;
  } catch {
    // no figure: say the rest
  }
  try {
    if (fs.readFileSync(path.join(dir, 'PG_VERSION'), 'utf8').trim() === '') return ': its PG_VERSION file is empty; restore the folder from its backup';
  } catch {
    // unreadable: said below
  }
  try {
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
  } catch {
    return ': the folder cannot be read and written by this user';
  }
  return ': it may be damaged (a file missing or cut short); restore the folder from its backup';
}

/**
 * The embedded database's folder is the owner's alone (0700, as PostgreSQL requires of its data directory): PGlite
 * writes its files 0666 less the umask, and with a umask of 0 every local user could read customers out of the WAL
 * and write pg_control (found by probing, 2026-11-28). A folder the process does not own is left as it is, with a
 * warning.
 */
function ownerOnly(dir: string, warn?: (line: string) => void): void {
  try {
    if ((fs.statSync(dir).mode & 0o077) !== 0) fs.chmodSync(dir, 0o700);
  } catch (err) {
    warn?.(`warning: could not make BULB_DATA_DIR ${dir} private to its owner (chmod 700): ${(err as Error).message}`);
  }
}
