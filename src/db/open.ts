// Opens the configured database: PostgreSQL when a URL is given, else embedded PGlite.
import fs from 'node:fs';
import type { Db } from './db.ts';
import { PgDb } from './pg.ts';
import { PgliteDb } from './pglite.ts';

export async function openDb(opts: { databaseUrl?: string; dataDir: string; poolSize?: number }): Promise<Db> {
  if (opts.databaseUrl) return new PgDb(opts.databaseUrl, opts.poolSize);
  if (!opts.dataDir.startsWith('memory://')) fs.mkdirSync(opts.dataDir, { recursive: true });
  return PgliteDb.open(opts.dataDir);
}
