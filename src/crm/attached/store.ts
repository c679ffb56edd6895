// SQL for the data attached to customers, generic over the kinds declared in kinds.ts (table and
// column names come from those declarations, never from input).
import type { Queryable } from '../../db/db.ts';
import type { Kind } from './kinds.ts';
import { kindByName } from './kinds.ts';

function selectOf(k: Kind): string {
  return `SELECT t.*, c.uuid AS customer_uuid${k.hasAssociate ? ', a.uuid AS associate_uuid' : ''}
    FROM ${k.table} t JOIN customers c ON c.id = t.customer_id${k.hasAssociate ? ' LEFT JOIN associates a ON a.id = t.associate_id' : ''}`;
}

/** Inserts one row; returns it with customer_uuid/associate_uuid. Throws 23505 on a duplicate association. */
export async function insertRow(tx: Queryable, k: Kind, customerId: string, associateId: string | null, body: unknown): Promise<any> {
  const cols = ['customer_id', ...(k.hasAssociate ? ['associate_id'] : []), ...k.columns.map(([c]) => c)];
  const casts = ['bigint', ...(k.hasAssociate ? ['bigint'] : []), ...k.columns.map(([, t]) => t)];
  const values = [customerId, ...(k.hasAssociate ? [associateId] : []), ...k.values(body)];
  const r = await tx.query<{ id: string }>(
    `INSERT INTO ${k.table} (${cols.join(', ')}) VALUES (${casts.map((t, i) => `$${i + 1}::${t}`).join(', ')}) RETURNING id`,
    values,
  );
  return findRowById(tx, k, r.rows[0].id);
}

export async function findRowById(db: Queryable, k: Kind, id: string): Promise<any> {
  return (await db.query(`${selectOf(k)} WHERE t.id = $1`, [id])).rows[0];
}

/** One page (limit+1 rows) of a customer's rows, in id order after the cursor. */
export async function listRows(db: Queryable, k: Kind, customerId: string, afterId: string | null, limit: number): Promise<any[]> {
  const r = await db.query(
    `${selectOf(k)} WHERE t.customer_id = $1 AND ($2::bigint IS NULL OR t.id > $2) ORDER BY t.id LIMIT $3`,
    [customerId, afterId, limit + 1],
  );
  return r.rows;
}

const notes = kindByName('notes');

export async function findNote(db: Queryable, uuid: string, lock = false): Promise<any> {
  return (await db.query(`${selectOf(notes)} WHERE t.uuid = $1${lock ? ' FOR UPDATE OF t' : ''}`, [uuid])).rows[0];
}

/** Replaces a note's fields; false when nothing differed (no write). */
export async function updateNote(tx: Queryable, id: string, type: string, body: string, associateId: string | null): Promise<boolean> {
  const r = await tx.query(
    `UPDATE notes SET type = $2, body = $3, associate_id = $4, updated_at = clock_timestamp()
     WHERE id = $1 AND (type, body, associate_id) IS DISTINCT FROM ($2, $3, $4::bigint)`,
    [id, type, body, associateId],
  );
  return r.rowCount > 0;
}
