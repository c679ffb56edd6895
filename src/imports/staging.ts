// Where an upload's rows go while it streams in: the import_rows staging table, one typed row per line
// (the customer's columns and which fields the line carries, see migration 018). On PostgreSQL
// COPY … FROM STDIN (pg-copy-streams) on a connection of its own, committed about every second (the last
// segment's transaction also queues the import); on PGlite batched multi-row INSERTs (one statement per batch). Never more than a batch in memory.
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type { Db, Queryable } from '../db/db.ts';
import { connectClient, onClient } from '../db/pg.ts';
import { emailKeys } from '../crm/customers/bulk.ts';
import { FIELDS } from './fields.ts';
import { normalInput } from '../crm/customers/wire.ts';
import type { StagedLine } from './parse.ts';
import { markQueued } from './store.ts';

export interface StagingSink {
  write(rows: StagedLine[]): Promise<void>;
  /** Makes the rows durable and queues the import for the workers; inQueueTx runs in the transaction that queues it. */
  finish(rowsReceived: number, inQueueTx: (tx: Queryable) => Promise<void>): Promise<boolean>;
  /** Leaves no row behind. */
  abort(): Promise<void>;
}

const COLUMNS = `import_id, line, external_id, fields, ${FIELDS.map((f) => f[1]).join(', ')}, email_keys, errors, record, new_uuid`;

/** A staged line's column values (null: SQL NULL; jsonb and text[] values as JS values). */
function columns(r: StagedLine): { external_id: string | null; fields: number | null; values: unknown[]; email_keys: string[] | null; errors: unknown } {
  const item = r.item;
  if (item === null) return { external_id: null, fields: null, values: FIELDS.map(() => null), email_keys: null, errors: r.errors };
  // Addresses as given, not in their stored form: applying patches the current address each one names
  // (bulb_address_patch, migration 065), and the stored form fills every field an address leaves out.
  const { addresses, ...rest } = item;
  const stored: Record<string, unknown> = { ...normalInput(rest), addresses };
  let fields = 0;
  FIELDS.forEach(([k], i) => {
    if (k in item) fields |= 1 << i;
  });
  return {
    external_id: item.externalId ?? null, // none: a TGEN record of a customer without one (named by uuid, or new)
    fields,
    values: FIELDS.map(([k]) => stored[k] ?? null),
    email_keys: 'emails' in item ? emailKeys(item.emails ?? []) : null,
    errors: null,
  };
}

// COPY text format: \N is NULL; backslash, tab, newline and carriage return are escaped.
const COPY_SPECIAL = /[\\\t\n\r]/g;
const COPY_ESCAPE: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const copyText = (s: string) => s.replace(COPY_SPECIAL, (c) => COPY_ESCAPE[c]);
const copyStr = (v: string | null) => (v === null ? '\\N' : copyText(v));
const copyBool = (v: boolean | null) => (v === null ? '\\N' : v ? 't' : 'f');
const copyJson = (v: unknown) => (v === null ? '\\N' : copyText(JSON.stringify(v)));
/** A text[] literal: every element double-quoted, with " and \ escaped. */
const pgTextArray = (a: string[]) => `{${a.map((x) => `"${x.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;

function copyLine(importId: string, r: StagedLine): string {
  const c = columns(r);
  let text = `${importId}\t${r.line}\t${copyStr(c.external_id)}\t${c.fields ?? '\\N'}`;
  FIELDS.forEach(([, , kind], i) => (text += '\t' + (kind === 'text' ? copyStr(c.values[i] as string | null) : kind === 'bool' ? copyBool(c.values[i] as boolean | null) : copyJson(c.values[i]))));
  return `${text}\t${c.email_keys === null ? '\\N' : copyText(pgTextArray(c.email_keys))}\t${copyJson(c.errors)}\t${copyJson(r.record ?? null)}\t${copyStr(r.uuid ?? null)}\n`;
}

/**
 * A COPY's transaction is committed, and a new one begun, once it has been open this long: an upload can last
 * minutes, and one transaction open (with an xid) for all of it held the events API's visibility horizon (no event
 * committed meanwhile was listed until the upload ended) and VACUUM's. Committed rows stay invisible to the
 * workers until the import is queued; a refused or broken upload deletes them.
 */
export const COPY_SEGMENT_MS = 1000;

export async function pgCopySink(url: string, importId: string, db: Queryable): Promise<StagingSink> {
  const client = await connectClient(url, 'bulb-import');
  const tx = onClient(client);
  let copy: ReturnType<typeof copyFrom>;
  let failed: Error | undefined; // a COPY that failed (its 'error' came while nobody waited) fails every later step
  let written = false; // the segment holds rows (so an xid)
  let openedAt = 0;
  const begin = async () => {
    await client.query('BEGIN');
    copy = client.query(copyFrom(`COPY import_rows (${COLUMNS}) FROM STDIN`));
    copy.on('error', (err) => (failed ??= err));
    written = false;
    openedAt = Date.now();
  };
  const endCopy = async () => {
    if (failed) throw failed;
    copy.end();
    await finished(copy);
  };
  // Writes, segment commits and the end run one after another.
  let chain: Promise<void> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const r = chain.then(fn);
    chain = r.then(() => {}, () => {});
    return r;
  };
  const rotate = async () => {
    if (!written || Date.now() - openedAt < COPY_SEGMENT_MS) return;
    await endCopy();
    await client.query('COMMIT');
    await begin();
  };
  await begin();
  // A client that pauses mid-upload does not keep the segment open either.
  const timer = setInterval(() => void serial(rotate).catch(() => {}), COPY_SEGMENT_MS);
  timer.unref();
  return {
    write: (rows) =>
      serial(async () => {
        let text = '';
        for (const r of rows) text += copyLine(importId, r);
        written ||= rows.length > 0;
        if (failed) throw failed;
        // events.once also rejects on 'error', and removes both listeners either way.
        if (!copy.write(text)) await once(copy, 'drain');
        await rotate();
      }),
    finish: (rowsReceived, inQueueTx) =>
      serial(async () => {
        clearInterval(timer);
        await endCopy();
        const queued = await markQueued(tx, importId, rowsReceived);
        await inQueueTx(tx);
        await client.query('COMMIT');
        await client.end().catch(() => {}); // committed: the upload is queued whatever happens to the connection now
        return queued;
      }),
    async abort() {
      clearInterval(timer);
      // Closing the connection rolls the open segment back; the committed ones are deleted.
      await client.end().catch(() => {});
      await db.query(`DELETE FROM import_rows WHERE import_id = $1`, [importId]);
    },
  };
}

/** PGlite: a batch travels as one jsonb array of arrays, in COLUMNS order after import_id. */
const BATCH_INSERT = `INSERT INTO import_rows (${COLUMNS})
  SELECT $1, (x->>0)::bigint, x->>1, (x->>2)::smallint, ${FIELDS.map(([, , kind], i) => (kind === 'text' ? `x->>${i + 3}` : kind === 'bool' ? `(x->>${i + 3})::boolean` : `nullif(x->${i + 3}, 'null')`)).join(', ')},
    CASE WHEN jsonb_typeof(x->${FIELDS.length + 3}) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(x->${FIELDS.length + 3})) END,
    nullif(x->${FIELDS.length + 4}, 'null'), nullif(x->${FIELDS.length + 5}, 'null'), (x->>${FIELDS.length + 6})::uuid
  FROM jsonb_array_elements($2::jsonb) AS x`;

export function batchSink(db: Db, importId: string): StagingSink {
  return {
    async write(rows) {
      const json = JSON.stringify(rows.map((r) => {
        const c = columns(r);
        return [r.line, c.external_id, c.fields, ...c.values, c.email_keys, c.errors, r.record ?? null, r.uuid ?? null];
      }));
      await db.query(BATCH_INSERT, [importId, json]);
    },
    // Rows already inserted are invisible to workers until the import is queued.
    finish: (rowsReceived, inQueueTx) =>
      db.transaction(async (tx) => {
        const queued = await markQueued(tx, importId, rowsReceived);
        await inQueueTx(tx);
        return queued;
      }),
    abort: async () => void (await db.query(`DELETE FROM import_rows WHERE import_id = $1`, [importId])),
  };
}
