// SQL of imports: the import rows, claiming by workers (lease), chunk progress, errors, cancel.
import type { Queryable } from '../db/db.ts';

/** NOTIFY channel import workers listen on (an import became queued). */
export const IMPORT_CHANNEL = 'bulb_imports';

export interface ImportRow {
  id: string;
  uuid: string;
  status: 'receiving' | 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
  format: 'ndjson' | 'csv';
  with_events: boolean;
  source: string;
  rows_received: string;
  applied_line: string;
  rows_done: string;
  created: string;
  updated: string;
  unchanged: string;
  failed: string;
  error: string | null;
  lock_token: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** Seconds between started_at and finished_at (or now), computed by the database. */
  elapsed: number | null;
}

const COLS = `id, uuid, status, format, with_events, source, rows_received, applied_line, rows_done, created, updated, unchanged,
  failed, error, lock_token, created_at, started_at, finished_at,
  extract(epoch FROM coalesce(finished_at, clock_timestamp()) - started_at)::float8 AS elapsed`;

export async function createImport(db: Queryable, i: { format: string; withEvents: boolean; source: string; tokenUuid: string | null }): Promise<ImportRow> {
  const r = await db.query<ImportRow>(
    `INSERT INTO imports (format, with_events, source, token_uuid) VALUES ($1, $2, $3, $4) RETURNING ${COLS}`,
    [i.format, i.withEvents, i.source, i.tokenUuid],
  );
  return r.rows[0];
}

export async function getImport(db: Queryable, uuid: string): Promise<ImportRow | undefined> {
  return (await db.query<ImportRow>(`SELECT ${COLS} FROM imports WHERE uuid = $1`, [uuid])).rows[0];
}

export async function getImportById(db: Queryable, id: string): Promise<ImportRow> {
  return (await db.query<ImportRow>(`SELECT ${COLS} FROM imports WHERE id = $1`, [id])).rows[0];
}

/** Newest first; the cursor is the last id seen. */
export async function listImports(db: Queryable, beforeId: string | null, limit: number): Promise<ImportRow[]> {
  const r = await db.query<ImportRow>(
    `SELECT ${COLS} FROM imports WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2`,
    [beforeId, limit + 1],
  );
  return r.rows;
}

/** Upload progress (also keeps updated_at fresh, so a live upload is not taken for an abandoned one). */
export async function setReceived(db: Queryable, id: string, rows: number): Promise<void> {
  await db.query(`UPDATE imports SET rows_received = $2, updated_at = clock_timestamp() WHERE id = $1`, [id, rows]);
}

/** The upload is complete: queue the import (unless it was cancelled meanwhile) and wake the workers. */
export async function markQueued(db: Queryable, id: string, rows: number): Promise<boolean> {
  const r = await db.query(
    `UPDATE imports SET status = 'queued', rows_received = $2, updated_at = clock_timestamp() WHERE id = $1 AND status = 'receiving'`,
    [id, rows],
  );
  await db.query(`SELECT pg_notify($1, '')`, [IMPORT_CHANNEL]);
  return r.rowCount > 0;
}

/** A refused upload leaves nothing behind. */
export async function deleteImport(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM import_rows WHERE import_id = $1`, [id]);
  await db.query(`DELETE FROM imports WHERE id = $1`, [id]);
}

export async function markFailed(db: Queryable, id: string, error: string): Promise<void> {
  await db.query(
    `UPDATE imports SET status = 'failed', error = $2, finished_at = clock_timestamp(), locked_until = NULL, updated_at = clock_timestamp()
     WHERE id = $1 AND status NOT IN ('completed', 'cancelled', 'failed')`,
    [id, error],
  );
}

/** Cancels an import that is not finished; returns it, or undefined when it was finished already. */
export async function cancelImport(db: Queryable, uuid: string): Promise<ImportRow | undefined> {
  const r = await db.query<ImportRow>(
    `UPDATE imports SET status = 'cancelled', finished_at = clock_timestamp(), locked_until = NULL, updated_at = clock_timestamp()
     WHERE uuid = $1 AND status IN ('receiving', 'queued', 'running') RETURNING ${COLS}`,
    [uuid],
  );
  return r.rows[0];
}

/** Takes the oldest import with work to do whose lease is free (queued, or running on a dead worker). */
export async function claimImport(db: Queryable, token: string, leaseMs: number): Promise<ImportRow | undefined> {
  const r = await db.query<ImportRow>(
    `UPDATE imports SET status = 'running', lock_token = $1, locked_until = clock_timestamp() + $2 * interval '1 millisecond',
       started_at = coalesce(started_at, clock_timestamp()), updated_at = clock_timestamp()
     WHERE id = (SELECT id FROM imports WHERE status IN ('queued', 'running')
                   AND (locked_until IS NULL OR locked_until < clock_timestamp() OR lock_token = $1)
                 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING ${COLS}`,
    [token, leaseMs],
  );
  return r.rows[0];
}

/** A worker stopping (SIGTERM) hands its import back at once instead of letting the lease run out. */
export async function releaseImport(db: Queryable, id: string, token: string): Promise<void> {
  await db.query(`UPDATE imports SET locked_until = NULL WHERE id = $1 AND lock_token = $2`, [id, token]);
}

/** Locks the import for one chunk; the caller checks that it still holds the lease. */
export async function lockForChunk(tx: Queryable, id: string): Promise<ImportRow | undefined> {
  return (await tx.query<ImportRow>(`SELECT ${COLS} FROM imports WHERE id = $1 FOR UPDATE`, [id])).rows[0];
}

export interface StagedRow {
  line: string;
  item: any;
  errors: unknown[] | null;
}

export async function nextRows(tx: Queryable, id: string, afterLine: string, limit: number): Promise<StagedRow[]> {
  const r = await tx.query<StagedRow>(
    `SELECT line, item, errors FROM import_rows WHERE import_id = $1 AND line > $2 ORDER BY line LIMIT $3`,
    [id, afterLine, limit],
  );
  return r.rows;
}

/** Errors found when applying (e.g. a disabled customer), kept beside the upload's own. */
export async function recordErrors(tx: Queryable, id: string, errs: { line: string; errors: unknown[] }[]): Promise<void> {
  if (errs.length === 0) return;
  await tx.query(
    `UPDATE import_rows r SET errors = x.errors FROM jsonb_to_recordset($2::jsonb) AS x(line bigint, errors jsonb)
     WHERE r.import_id = $1 AND r.line = x.line`,
    [id, JSON.stringify(errs)],
  );
}

export interface ChunkCounts {
  lastLine: string;
  done: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
}

/** Commits a chunk's progress (in the chunk's transaction) and renews the lease; completes the import at the end. */
export async function advance(tx: Queryable, id: string, c: ChunkCounts, leaseMs: number, finished: boolean): Promise<void> {
  await tx.query(
    `UPDATE imports SET applied_line = $2, rows_done = rows_done + $3, created = created + $4, updated = updated + $5,
       unchanged = unchanged + $6, failed = failed + $7, updated_at = clock_timestamp(),
       locked_until = CASE WHEN $8 THEN NULL ELSE clock_timestamp() + $9 * interval '1 millisecond' END,
       status = CASE WHEN $8 THEN 'completed' ELSE status END,
       finished_at = CASE WHEN $8 THEN clock_timestamp() ELSE finished_at END
     WHERE id = $1`,
    [id, c.lastLine, c.done, c.created, c.updated, c.unchanged, c.failed, finished, leaseMs],
  );
}

/** Staging rows of a finished import are dropped, except those that carry errors (GET …/errors). */
export async function dropApplied(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM import_rows WHERE import_id = $1 AND errors IS NULL`, [id]);
}

/** Uploads whose API process died (no progress for 10 minutes) fail, so they do not stay 'receiving' forever. */
export async function failAbandoned(db: Queryable): Promise<void> {
  await db.query(
    `UPDATE imports SET status = 'failed', error = 'upload interrupted', finished_at = clock_timestamp()
     WHERE status = 'receiving' AND updated_at < clock_timestamp() - interval '10 minutes'`,
  );
}

/** Errors by line, keyset-paginated (the errors download streams page after page). */
export async function errorPage(db: Queryable, id: string, afterLine: string, limit: number): Promise<{ line: string; errors: unknown[] }[]> {
  const r = await db.query<{ line: string; errors: unknown[] }>(
    `SELECT line, errors FROM import_rows WHERE import_id = $1 AND errors IS NOT NULL AND line > $2 ORDER BY line LIMIT $3`,
    [id, afterLine, limit],
  );
  return r.rows;
}
