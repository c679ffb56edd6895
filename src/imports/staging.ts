// Where an upload's rows go while it streams in: the import_rows staging table. On PostgreSQL one
// COPY … FROM STDIN (pg-copy-streams) on a connection of its own, in one transaction that also queues the
// import; on PGlite batched multi-row INSERTs (one statement per batch). Never more than a batch in memory.
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Db, Queryable } from '../db/db.ts';
import type { StagedLine } from './parse.ts';
import { markQueued } from './store.ts';

export interface StagingSink {
  write(rows: StagedLine[]): Promise<void>;
  /** Makes the rows durable and queues the import for the workers. */
  finish(rowsReceived: number): Promise<boolean>;
  /** Leaves no row behind. */
  abort(): Promise<void>;
}

const copyText = (s: string) => s.replace(/\\/g, '\\\\');

export async function pgCopySink(url: string, importId: string): Promise<StagingSink> {
  const client = new pg.Client({ connectionString: url, application_name: 'bulb-import', options: '-c TimeZone=UTC' });
  client.on('error', () => {});
  await client.connect();
  await client.query('BEGIN');
  const copy = client.query(copyFrom('COPY import_rows (import_id, line, item, errors) FROM STDIN'));
  copy.on('error', () => {});
  const tx: Queryable = {
    query: async (sql, params) => {
      const r = await client.query(sql, params as any[]);
      return { rows: r.rows, rowCount: r.rowCount ?? 0 };
    },
    exec: async (sql) => void (await client.query(sql)),
  };
  return {
    async write(rows) {
      let text = '';
      for (const r of rows) {
        text += `${importId}\t${r.line}\t${r.item === null ? '\\N' : copyText(r.item)}\t${r.errors === null ? '\\N' : copyText(JSON.stringify(r.errors))}\n`;
      }
      if (!copy.write(text)) await Promise.race([once(copy, 'drain'), once(copy, 'error').then(([e]) => Promise.reject(e))]);
    },
    async finish(rowsReceived) {
      copy.end();
      await finished(copy);
      const queued = await markQueued(tx, importId, rowsReceived);
      await client.query('COMMIT');
      await client.end();
      return queued;
    },
    async abort() {
      // Closing the connection rolls the COPY's transaction back.
      await client.end().catch(() => {});
    },
  };
}

export function batchSink(db: Db, importId: string): StagingSink {
  return {
    async write(rows) {
      const json = '[' + rows.map((r) => `{"line":${r.line},"item":${r.item ?? 'null'},"errors":${r.errors === null ? 'null' : JSON.stringify(r.errors)}}`).join(',') + ']';
      await db.query(
        `INSERT INTO import_rows (import_id, line, item, errors)
         SELECT $1, x.line, x.item, x.errors FROM jsonb_to_recordset($2::jsonb) AS x(line bigint, item jsonb, errors jsonb)`,
        [importId, json],
      );
    },
    // Rows already inserted are invisible to workers until the import is queued.
    finish: (rowsReceived) => markQueued(db, importId, rowsReceived),
    abort: async () => void (await db.query(`DELETE FROM import_rows WHERE import_id = $1`, [importId])),
  };
}
