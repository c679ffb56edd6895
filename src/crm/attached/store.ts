// SQL for the data attached to customers, generic over the kinds declared in kinds.ts (table and
// column names come from those declarations, never from input).
import { writeHorizon } from '../../db/write-horizon.ts';
import type { Queryable } from '../../db/db.ts';
import { UUID } from '../../http/formats.ts';

/** What the SQL takes of a kind (kinds.ts declares the rest): its table and the columns a create writes. */
export interface KindTable {
  table: string;
  /** Has an associate_id column, given on the wire as associateUuid. */
  hasAssociate: boolean;
  /** Columns written on create (besides customer_id, associate_id) with their SQL casts, and their values. */
  columns: [name: string, cast: string][];
  values(body: any): unknown[];
}

function selectOf(k: KindTable): string {
  return `SELECT t.*, c.uuid AS customer_uuid${k.hasAssociate ? ', a.uuid AS associate_uuid' : ''}
    FROM ${k.table} t JOIN customers c ON c.id = t.customer_id${k.hasAssociate ? ' LEFT JOIN associates a ON a.id = t.associate_id' : ''}`;
}

/** Inserts one row; returns it with customer_uuid/associate_uuid. Throws 23505 on a duplicate association. */
export async function insertRow(tx: Queryable, k: KindTable, customerId: string, associateId: string | null, body: unknown): Promise<any> {
  const cols = ['customer_id', ...(k.hasAssociate ? ['associate_id'] : []), ...k.columns.map(([c]) => c)];
  const casts = ['bigint', ...(k.hasAssociate ? ['bigint'] : []), ...k.columns.map(([, t]) => t)];
  const values = [customerId, ...(k.hasAssociate ? [associateId] : []), ...k.values(body)];
  const r = await tx.query<{ id: string }>(
    `INSERT INTO ${k.table} (${cols.join(', ')}) VALUES (${casts.map((t, i) => `$${i + 1}::${t}`).join(', ')}) RETURNING id`,
    values,
  );
  return findRowById(tx, k, r.rows[0].id);
}

export async function findRowById(db: Queryable, k: KindTable, id: string): Promise<any> {
  return (await db.query(`${selectOf(k)} WHERE t.id = $1`, [id])).rows[0];
}

/**
 * One page (limit+1 rows) of a customer's rows, in id order after the cursor: a range of the kind's (customer_id, id)
 * index (every kind has one, `<table>_customer`, migration 002), `(customer_id, id)` after (customer, cursor) and
 * customer_id up to the customer's, ordered by both. Written as an equality (`customer_id = $1 AND ($2 IS NULL OR
 * id > $2) ORDER BY id`) the order was the primary key's too, and for a customer the statistics count among the
 * most common the planner walked it, expecting the customer's rows spread through the table: where they sat in a
 * long run of ids (a POS import, customer by customer), a page of a customer far in the id order, or the last page
 * of one before others, read every row in between (a probe: 208 ms for 2 rows; 200,000 notes in runs of 25,000:
 * 2,819 buffers for a page). Ordered by both columns, only that index gives the order and the walk stops with the
 * page. The customer's uuid is read once (not joined per row: the range is no equality the join could use).
 */
export async function listRows(db: Queryable, k: KindTable, customerId: string, afterId: string | null, limit: number): Promise<any[]> {
  // A walk in id order: only rows written before the write horizon, so it never passes one still uncommitted (writers
  // side by side take ids in one order and commit in another: 1–9 rows of a list missed in a probe, 2026-11-28).
  const horizon = await writeHorizon(db, k.table);
  const r = await db.query(
    `SELECT t.*, (SELECT c.uuid FROM customers c WHERE c.id = $1) AS customer_uuid${k.hasAssociate ? ', a.uuid AS associate_uuid' : ''}
     FROM ${k.table} t${k.hasAssociate ? ' LEFT JOIN associates a ON a.id = t.associate_id' : ''}
     WHERE (t.customer_id, t.id) > ($1::bigint, $2::bigint) AND t.customer_id <= $1::bigint AND ($4::timestamptz IS NULL OR t.created_at < $4)
     ORDER BY t.customer_id, t.id LIMIT $3`,
    [customerId, afterId ?? '0', limit + 1, horizon],
  );
  return r.rows;
}

/** The note columns written from the wire (noteValues in notes.ts gives them in this order). */
export const NOTE_COLUMNS = ['type', 'comments', 'external_id', 'store', 'is_private', 'is_deleted', 'wish_list_id'];
export const NOTE_CASTS = ['text', 'text', 'text', 'text', 'boolean', 'boolean', 'bigint'];
// Its customer and associate by subqueries, not joins: lockNote locks the note, and a note a merge moved meanwhile is
// read again as moved, while a joined customer row stays as first read (the join failed: the edit answered 404).
const SELECT_NOTE = `SELECT t.*, (SELECT c.uuid FROM customers c WHERE c.id = t.customer_id) AS customer_uuid,
  (SELECT a.uuid FROM associates a WHERE a.id = t.associate_id) AS associate_uuid FROM notes t`;

/** Inserts a note; returns it as read. Throws 23505 when its externalId is taken. */
export async function insertNote(tx: Queryable, customerId: string, associateId: string | null, values: unknown[]): Promise<any> {
  const r = await tx.query<{ id: string }>(
    `INSERT INTO notes (customer_id, associate_id, ${NOTE_COLUMNS.join(', ')})
     VALUES ($1::bigint, $2::bigint, ${NOTE_CASTS.map((t, i) => `$${i + 3}::${t}`).join(', ')}) RETURNING id`,
    [customerId, associateId, ...values],
  );
  return findNoteById(tx, r.rows[0].id);
}

export async function findNoteById(db: Queryable, id: string): Promise<any> {
  return (await db.query(`${SELECT_NOTE} WHERE t.id = $1`, [id])).rows[0];
}

/** A note by uuid or externalId (a uuid match wins), unlocked. */
export async function findNote(db: Queryable, ref: string): Promise<any> {
  if (UUID.test(ref)) {
    const r = await db.query(`${SELECT_NOTE} WHERE t.uuid = $1`, [ref]);
    if (r.rows[0]) return r.rows[0];
  }
  return (await db.query(`${SELECT_NOTE} WHERE t.external_id = $1`, [ref])).rows[0];
}

/**
 * A note by its id, locked for an update, as it stands once locked. Its customer must be locked first (docs/merge.md
 * "Lock order": a customer before the rows attached to it, as a merge and its undo take them).
 */
export async function lockNote(tx: Queryable, id: string): Promise<any> {
  return (await tx.query(`${SELECT_NOTE} WHERE t.id = $1 FOR UPDATE OF t`, [id])).rows[0];
}

/** Replaces a note's fields; false when nothing differed (no write). Throws 23505 when the externalId is taken. */
export async function updateNote(tx: Queryable, id: string, associateId: string | null, values: unknown[]): Promise<boolean> {
  const cols = ['associate_id', ...NOTE_COLUMNS];
  const casts = ['bigint', ...NOTE_CASTS];
  const params = casts.map((t, i) => `$${i + 2}::${t}`);
  const r = await tx.query(
    `UPDATE notes SET ${cols.map((c, i) => `${c} = ${params[i]}`).join(', ')}, updated_at = clock_timestamp()
     WHERE id = $1 AND (${cols.join(', ')}) IS DISTINCT FROM (${params.join(', ')})`,
    [id, associateId, ...values],
  );
  return r.rowCount > 0;
}
