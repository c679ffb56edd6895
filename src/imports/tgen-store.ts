// SQL of the TGEN customer notes apply step (tgen-notes.ts): a chunk's note records, the customers, associates and
// notes they name (one look-up each per chunk), and the chunk's writes as sets. Notes columns are Tulip's (migration
// 030: comments, external_id, store, is_private, is_deleted, wish_list_id).
import type { Queryable } from '../db/db.ts';
import { UUID } from '../http/formats.ts';
import { mergedIntoColumns } from '../crm/customers/wire.ts';
import { chunkLines } from './store.ts';

/** The chunk's lines (the range applyChunk takes) with their note records. */
export const chunkRecords = (tx: Queryable, id: string, afterLine: string, span: number) => chunkLines<{ record: any }>(tx, id, afterLine, span, 'record');

/** The uuids among references (lower case, as the uuid type prints them). */
export const uuidsOf = (refs: Iterable<string>) => [...new Set([...refs].filter((r) => UUID.test(r)).map((r) => r.toLowerCase()))];

export type NoteCustomer = { id: string; uuid: string; external_id: string | null; status: string; merged_into: string | null; merged_into_status: string | null; merged_into_uuid: string | null; merged_into_external_id: string | null };

/** The customers references name (by uuid or externalId), locked FOR SHARE in id order (a merge waits). */
export async function customersByRefs(tx: Queryable, refs: string[]): Promise<NoteCustomer[]> {
  if (refs.length === 0) return [];
  const r = await tx.query<NoteCustomer>(
    `SELECT c.id, c.uuid, c.external_id, c.status, c.merged_into, (SELECT m.status FROM customers m WHERE m.id = c.merged_into) AS merged_into_status,
       ${mergedIntoColumns('c')} FROM customers c
     WHERE c.uuid = ANY($1::uuid[]) OR c.external_id = ANY($2::text[]) ORDER BY c.id FOR SHARE OF c`,
    [uuidsOf(refs), [...new Set(refs)]],
  );
  return r.rows;
}

/** The associates (employees) references name, by uuid or externalId. */
export async function associatesByRefs(tx: Queryable, refs: string[]): Promise<{ id: string; uuid: string; external_id: string | null }[]> {
  if (refs.length === 0) return [];
  const r = await tx.query<{ id: string; uuid: string; external_id: string | null }>(
    `SELECT id, uuid, external_id FROM associates WHERE uuid = ANY($1::uuid[]) OR external_id = ANY($2::text[])`,
    [uuidsOf(refs), [...new Set(refs)]],
  );
  return r.rows;
}

const COLS = ['associate_id', 'type', 'comments', 'external_id', 'store', 'is_private', 'is_deleted', 'wish_list_id'];
const CASTS = ['bigint', 'text', 'text', 'text', 'text', 'boolean', 'boolean', 'bigint'];
/** A note's fields in COLS order, bigints as text (as both drivers return them), so that two can be compared. */
export type NoteValues = [string | null, string, string, string | null, string | null, boolean, boolean, string | null];
const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
/** A record's fields in COLS order. */
export const noteValues = (n: any, associateId: string | null): NoteValues =>
  [associateId, n.type, n.comments, n.externalId, n.store, n.isPrivate, n.isDeleted, text(n.wishListId)];

export type StoredNote = { id: string; uuid: string; customer_id: string; values: NoteValues };

/** The notes with these uuids or externalIds, locked for the update in id order. */
export async function notesByKeys(tx: Queryable, uuids: string[], externalIds: string[]): Promise<StoredNote[]> {
  if (uuids.length === 0 && externalIds.length === 0) return [];
  const r = await tx.query<any>(
    `SELECT id, uuid, customer_id, ${COLS.join(', ')} FROM notes WHERE uuid = ANY($1::uuid[]) OR external_id = ANY($2::text[]) ORDER BY id FOR UPDATE`,
    [uuids, externalIds],
  );
  return r.rows.map((n) => ({ id: n.id, uuid: n.uuid, customer_id: n.customer_id, values: COLS.map((c) => (typeof n[c] === 'boolean' ? n[c] : text(n[c]))) as NoteValues }));
}

/** `n` new time-ordered uuids, for the notes a chunk creates without one of their own. */
export async function newUuids(tx: Queryable, n: number): Promise<string[]> {
  if (n === 0) return [];
  return (await tx.query<{ u: string }>(`SELECT bulb_uuid7() AS u FROM generate_series(1, $1::int) ORDER BY 1`, [n])).rows.map((r) => r.u);
}

const columnsOf = (rows: NoteValues[]) => COLS.map((_, i) => rows.map((v) => v[i]));
const unnestOf = (first: number) => CASTS.map((t, i) => `$${i + first}::${t}[]`).join(', ');

/**
 * Writes notes' final values. The externalIds that change are first set aside (a chunk may swap two notes'
 * externalIds), then every note is written with its values.
 */
export async function updateNotes(tx: Queryable, notes: { id: string; values: NoteValues; moves: boolean }[]): Promise<void> {
  if (notes.length === 0) return;
  const moved = notes.filter((n) => n.moves).map((n) => n.id);
  if (moved.length) await tx.query(`UPDATE notes SET external_id = NULL WHERE id = ANY($1::bigint[])`, [moved]);
  await tx.query(
    `UPDATE notes n SET ${COLS.map((c) => `${c} = v.${c}`).join(', ')}, updated_at = clock_timestamp()
     FROM unnest($1::bigint[], ${unnestOf(2)}) AS v(id, ${COLS.join(', ')}) WHERE n.id = v.id`,
    [notes.map((n) => n.id), ...columnsOf(notes.map((n) => n.values))],
  );
}

/**
 * New notes, in the order given. Returns how many were inserted: fewer when a concurrent writer took one of their
 * uuids or externalIds first (the caller retries the chunk, which then finds that note).
 */
export async function insertNotes(tx: Queryable, notes: { uuid: string; customerId: string; values: NoteValues }[]): Promise<number> {
  if (notes.length === 0) return 0;
  const r = await tx.query(
    `INSERT INTO notes (uuid, customer_id, ${COLS.join(', ')})
     SELECT uuid, customer_id, ${COLS.join(', ')} FROM unnest($1::uuid[], $2::bigint[], ${unnestOf(3)}) WITH ORDINALITY
       AS v(uuid, customer_id, ${COLS.join(', ')}, ord) ORDER BY ord
     ON CONFLICT DO NOTHING`,
    [notes.map((n) => n.uuid), notes.map((n) => n.customerId), ...columnsOf(notes.map((n) => n.values))],
  );
  return r.rowCount ?? 0;
}
