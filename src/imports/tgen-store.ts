// SQL of the TGEN customer notes apply step (tgen-notes.ts): the chunk's note records, and one note's look-ups and
// writes. Notes columns are Tulip's (migration 030: comments, external_id, store, is_private, is_deleted, wish_list_id).
import type { Queryable } from '../db/db.ts';
import { UUID } from '../http/formats.ts';
import { mergedIntoColumns } from '../crm/customers/wire.ts';

const asUuid = (ref: string) => (UUID.test(ref) ? ref : null);

/** The chunk's lines (the range applyChunk takes) with their note records. */
export async function chunkRecords(tx: Queryable, id: string, afterLine: string, span: number): Promise<{ lines: { line: string; record: any; refused: boolean }[]; more: boolean }> {
  const r = await tx.query<{ line: string; record: any; refused: boolean }>(
    `SELECT line, record, errors IS NOT NULL AS refused FROM import_rows WHERE import_id = $1 AND line > $2::bigint AND line <= $2::bigint + $3::int ORDER BY line`,
    [id, afterLine, span],
  );
  const more = await tx.query(`SELECT 1 FROM import_rows WHERE import_id = $1 AND line > $2::bigint + $3::int LIMIT 1`, [id, afterLine, span]);
  return { lines: r.rows, more: more.rows.length > 0 };
}

/** The customer a reference names (uuid or externalId, a uuid match winning), locked FOR SHARE (a merge waits). */
export async function customerByRef(tx: Queryable, ref: string): Promise<{ id: string; uuid: string; external_id: string | null; status: string; merged_into_uuid: string | null; merged_into_external_id: string | null } | undefined> {
  const r = await tx.query<any>(
    `SELECT c.id, c.uuid, c.external_id, c.status, ${mergedIntoColumns('c')} FROM customers c
     WHERE c.uuid = $1::uuid OR c.external_id = $2 ORDER BY c.uuid = $1::uuid DESC NULLS LAST LIMIT 1 FOR SHARE OF c`,
    [asUuid(ref), ref],
  );
  return r.rows[0];
}

/** The associate (employee) a reference names, by uuid or externalId. */
export async function associateByRef(tx: Queryable, ref: string): Promise<string | undefined> {
  const r = await tx.query<{ id: string }>(
    `SELECT id FROM associates WHERE uuid = $1::uuid OR external_id = $2 ORDER BY uuid = $1::uuid DESC NULLS LAST LIMIT 1`,
    [asUuid(ref), ref],
  );
  return r.rows[0]?.id;
}

/** The note a record names: by its uuid when it gives one, else by its externalId; locked for the update. */
export async function noteByKeys(tx: Queryable, uuid: string | null, externalId: string | null): Promise<{ id: string; uuid: string; external_id: string | null; customer_id: string } | undefined> {
  if (uuid === null && externalId === null) return undefined;
  const r = await tx.query<any>(
    uuid !== null
      ? `SELECT id, uuid, external_id, customer_id FROM notes WHERE uuid = $1::uuid FOR UPDATE`
      : `SELECT id, uuid, external_id, customer_id FROM notes WHERE external_id = $1 FOR UPDATE`,
    [uuid ?? externalId],
  );
  return r.rows[0];
}

/** Whether another note than `id` has this externalId (notes' externalIds are unique). */
export async function externalIdTaken(tx: Queryable, externalId: string, id: string | null): Promise<boolean> {
  const r = await tx.query(`SELECT 1 FROM notes WHERE external_id = $1 AND ($2::bigint IS NULL OR id <> $2::bigint)`, [externalId, id]);
  return r.rows.length > 0;
}

const COLS = ['associate_id', 'type', 'comments', 'external_id', 'store', 'is_private', 'is_deleted', 'wish_list_id'];
const CASTS = ['bigint', 'text', 'text', 'text', 'text', 'boolean', 'boolean', 'bigint'];
/** A note's stored values in COLS order. */
export const noteRow = (n: any, associateId: string | null) =>
  [associateId, n.type, n.comments, n.externalId, n.store, n.isPrivate, n.isDeleted, n.wishListId];

/**
 * A new note, with the uuid its record gave (one no note has: noteByKeys looked) or Bulb's. Undefined when a concurrent
 * writer took its uuid or externalId first (the caller retries the chunk, which then finds that note).
 */
export async function insertNote(tx: Queryable, customerId: string, values: unknown[], uuid: string | null): Promise<{ uuid: string; external_id: string | null } | undefined> {
  const r = await tx.query<{ uuid: string; external_id: string | null }>(
    `INSERT INTO notes (uuid, customer_id, ${COLS.join(', ')})
     VALUES (coalesce($1::uuid, bulb_uuid7()), $2::bigint, ${CASTS.map((t, i) => `$${i + 3}::${t}`).join(', ')})
     ON CONFLICT DO NOTHING RETURNING uuid, external_id`,
    [uuid, customerId, ...values],
  );
  return r.rows[0];
}

/** Replaces a note's fields; undefined when nothing differed (no write). */
export async function updateNote(tx: Queryable, id: string, values: unknown[]): Promise<{ uuid: string; external_id: string | null } | undefined> {
  const params = CASTS.map((t, i) => `$${i + 2}::${t}`);
  const r = await tx.query<{ uuid: string; external_id: string | null }>(
    `UPDATE notes SET ${COLS.map((c, i) => `${c} = ${params[i]}`).join(', ')}, updated_at = clock_timestamp()
     WHERE id = $1 AND (${COLS.join(', ')}) IS DISTINCT FROM (${params.join(', ')}) RETURNING uuid, external_id`,
    [id, ...values],
  );
  return r.rows[0];
}
