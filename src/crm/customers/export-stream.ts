// The two ways an export reads its one snapshot, both as a byte stream with back-pressure that ends its
// transaction the moment the reader goes away or stops reading for STALL_MS:
// - PostgreSQL: `COPY (query) TO STDOUT` in a REPEATABLE READ, READ ONLY transaction on a connection of
//   its own (application_name bulb-export; not taken from the pool, so an export cannot starve requests).
//   COPY runs the query as one statement (parallel workers allowed, unlike a cursor) and streams it; CSV
//   format with delimiter \x02 and quote \x01 passes each JSON line through byte for byte (JSON text
//   never holds raw control characters, so no field is ever quoted or escaped).
// - PGlite (one connection, no COPY streaming): DECLARE … FETCH in batches inside one transaction, with
//   one FETCH in flight while the previous batch is written. The export holds PGlite meanwhile.
import { Readable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { Db } from '../../db/db.ts';
import { ApiError } from '../../http/errors.ts';
import { connectClient } from '../../db/pg.ts';

const BATCH = 2000;
const STALL_MS = 60_000;
/** Exports at once per process on PostgreSQL, each on a connection of its own (PGlite runs one at a time). */
export const MAX_EXPORTS = 4;

let inProgress = 0;
/** Exports whose transaction is open in this process (tests watch it drop to 0 after a disconnect). */
export const exportsInProgress = () => inProgress;

class Aborted extends Error {}

/** A Readable fed by push(); wanted() waits until the reader asks for more (or fails on destroy/stall). */
function output(stallMs: number, onDestroy: () => void) {
  let wake: (() => void) | undefined;
  let abort: ((e: Error) => void) | undefined;
  let ended: Error | undefined;
  const out = new Readable({
    highWaterMark: 256 * 1024,
    read() {
      const w = wake;
      wake = undefined;
      w?.();
    },
    destroy(err, cb) {
      ended ??= err ?? new Aborted('the client went away');
      abort?.(ended);
      onDestroy();
      cb(err);
    },
  });
  const wanted = () =>
    new Promise<void>((resolve, reject) => {
      if (ended) return reject(ended);
      const timer = setTimeout(() => out.destroy(new Aborted(`the client read nothing for ${stallMs} ms`)), stallMs);
      wake = () => {
        clearTimeout(timer);
        abort = undefined;
        resolve();
      };
      abort = (e) => {
        clearTimeout(timer);
        wake = undefined;
        reject(e);
      };
    });
  return { out, wanted, ended: () => ended };
}

/**
 * A place among the exports that run at once (`limit`), taken before the export touches the database (on the embedded
 * one, a request waiting for the session behind a running export took its place only once that export ended), or 429
 * with Retry-After. Returns its release (once; later calls do nothing).
 */
export function takeExportSlot(limit: number): () => void {
  if (inProgress >= limit) {
    throw new ApiError('RateLimited', `at most ${limit} export${limit === 1 ? '' : 's'} run${limit === 1 ? 's' : ''} at once; try again when one has finished`, 'export').withHeader('Retry-After', '10');
  }
  inProgress++;
  let released = false;
  return () => {
    if (!released) (released = true), inProgress--;
  };
}

/**
 * Exports at once on the embedded database: one. Its transaction holds the only session while the reader reads, so
 * every other request waits behind it; queued exports held it in turn without end (20 at once: a GET waited 32 s;
 * found by a probe, 2026-11-29).
 */
export const MAX_EMBEDDED_EXPORTS = 1;

/** `release`: the place takeExportSlot gave it, released when the export ends or fails. */
export async function openCopyExport(url: string, sql: string, release: () => void, stallMs = STALL_MS): Promise<Readable> {
  let client: pg.Client;
  try {
    client = await connectClient(url, 'bulb-export'); // a dead connection surfaces as the copy stream's error
  } catch (err) {
    release();
    throw err;
  }
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    release();
    client.end().catch(() => {}); // closing the connection ends its transaction (and a running COPY)
  };
  const { out, wanted, ended } = output(stallMs, close);
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
  } catch (err) {
    close();
    throw err;
  }
  const copy = client.query(copyTo(`COPY (${sql}) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01')`));
  let begun = false;
  const started = new Promise<void>((resolve, reject) => {
    const go = () => {
      begun = true;
      resolve();
    };
    copy.once('data', go);
    copy.once('end', go);
    copy.once('error', reject);
  });
  copy.on('data', (chunk: Buffer) => {
    if (out.push(chunk)) return;
    copy.pause();
    wanted().then(() => copy.resume(), () => {});
  });
  copy.on('end', () => {
    if (ended()) return;
    client.query('COMMIT').then(
      () => {
        close();
        out.push(null);
      },
      (err) => out.destroy(err),
    );
  });
  copy.on('error', (err) => {
    close();
    // Before the first line the caller gets the error itself (and nobody listens to `out` yet).
    if (!ended()) out.destroy(begun ? err : undefined);
  });
  await started;
  return out;
}

export async function openCursorExport(db: Db, sql: string, params: unknown[], release: () => void, stallMs = STALL_MS): Promise<Readable> {
  const { out, wanted, ended } = output(stallMs, () => {});
  let begun = false;
  let opened!: () => void;
  const ready = new Promise<void>((r) => (opened = () => ((begun = true), r())));
  const run = db
    .transaction(async (tx) => {
      await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      await tx.query(`DECLARE bulb_export NO SCROLL CURSOR FOR ${sql}`, params);
      opened();
      const fetch = () => {
        const p = tx.query<{ j: string }>(`FETCH ${BATCH} FROM bulb_export`);
        p.catch(() => {}); // its error (if any) is thrown where it is awaited
        return p;
      };
      let next: ReturnType<typeof fetch> | undefined = fetch();
      while (next) {
        const r: { rows: { j: string }[] } = await next;
        const stop = ended();
        if (stop) throw stop;
        next = r.rows.length === BATCH ? fetch() : undefined;
        if (r.rows.length === 0) break;
        let chunk = '';
        for (const row of r.rows) chunk += row.j + '\n';
        if (!out.push(chunk)) await wanted();
      }
      await tx.query('CLOSE bulb_export');
    })
    .finally(release);
  run.then(
    () => out.push(null),
    (err) => {
      if (!(err instanceof Aborted)) out.destroy(begun ? err : undefined);
    },
  );
  await Promise.race([ready, run]);
  return out;
}
