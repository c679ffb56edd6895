// SQL for customer attributes (migration 027).
import { writeHorizon } from '../../db/write-horizon.ts';
import type { Queryable } from '../../db/db.ts';
import { looksLikeUuid } from '../customers/store.ts';
import type { CustomerAttributeCreateT } from './schema.ts';

export interface AttributeRow {
  id: string;
  uuid: string;
  external_id: string;
  type: 'string';
  description: string | null;
  created_at: string;
}

const COLS = 'id, uuid, external_id, type, description, created_at';

/** Inserts; undefined when the externalId is taken. */
export async function insertAttribute(db: Queryable, a: CustomerAttributeCreateT): Promise<AttributeRow | undefined> {
  const r = await db.query<AttributeRow>(
    `INSERT INTO customer_attributes (external_id, type, description) VALUES ($1, $2, $3) ON CONFLICT (external_id) DO NOTHING RETURNING ${COLS}`,
    [a.externalId, a.type ?? 'string', a.description ?? null],
  );
  return r.rows[0];
}

/** By uuid or externalId (a uuid match wins). */
export async function findAttribute(db: Queryable, id: string): Promise<AttributeRow | undefined> {
  if (looksLikeUuid(id)) {
    const r = await db.query<AttributeRow>(`SELECT ${COLS} FROM customer_attributes WHERE uuid = $1`, [id]);
    if (r.rows[0]) return r.rows[0];
  }
  return (await db.query<AttributeRow>(`SELECT ${COLS} FROM customer_attributes WHERE external_id = $1`, [id])).rows[0];
}

export async function listAttributes(db: Queryable, afterId: string | null, limit: number): Promise<AttributeRow[]> {
  // A walk: rows written before the write horizon only (src/db/write-horizon.ts), as every id-ordered list (a probe,
  // 2026-11-29: an attribute whose insert committed after later ones was passed by the cursor, never listed).
  const horizon = await writeHorizon(db, 'customer_attributes');
  const r = await db.query<AttributeRow>(
    `SELECT ${COLS} FROM customer_attributes WHERE ($1::bigint IS NULL OR id > $1) AND ($3::timestamptz IS NULL OR created_at < $3) ORDER BY id LIMIT $2`,
    [afterId, limit + 1, horizon],
  );
  return r.rows;
}
