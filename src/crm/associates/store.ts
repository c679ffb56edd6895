// SQL for associates.
import type { Queryable } from '../../db/db.ts';
import { writeHorizon } from '../../db/write-horizon.ts';
import { looksLikeUuid } from '../customers/store.ts';
import type { AssociateCreateT } from './schema.ts';

export interface AssociateRow {
  id: string;
  uuid: string;
  external_id: string;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  store_id: string | null;
  created_at: string;
}

const SELECT = 'SELECT id, uuid, external_id, first_name, last_name, email, store_id, created_at FROM associates';

/** Inserts; undefined when the externalId is taken. */
export async function insertAssociate(db: Queryable, a: AssociateCreateT): Promise<AssociateRow | undefined> {
  const r = await db.query<AssociateRow>(
    `INSERT INTO associates (external_id, first_name, last_name, email, store_id) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (external_id) DO NOTHING
     RETURNING id, uuid, external_id, first_name, last_name, email, store_id, created_at`,
    [a.externalId, a.firstName ?? null, a.lastName ?? null, a.email ?? null, a.storeId ?? null],
  );
  return r.rows[0];
}

/** By uuid or externalId (a uuid match wins). */
export async function findAssociate(db: Queryable, id: string): Promise<AssociateRow | undefined> {
  if (looksLikeUuid(id)) {
    const r = await db.query<AssociateRow>(`${SELECT} WHERE uuid = $1`, [id]);
    if (r.rows[0]) return r.rows[0];
  }
  return (await db.query<AssociateRow>(`${SELECT} WHERE external_id = $1`, [id])).rows[0];
}

/** Internal id of an associate by uuid (for references in attached data). */
export async function associateIdByUuid(db: Queryable, uuid: string): Promise<string | undefined> {
  return (await db.query<{ id: string }>('SELECT id FROM associates WHERE uuid = $1', [uuid])).rows[0]?.id;
}

export async function listAssociates(db: Queryable, afterId: string | null, limit: number): Promise<AssociateRow[]> {
  // A walk: rows written before the write horizon only (src/db/write-horizon.ts).
  const horizon = await writeHorizon(db, 'associates');
  const r = await db.query<AssociateRow>(`${SELECT} WHERE ($1::bigint IS NULL OR id > $1) AND ($3::timestamptz IS NULL OR created_at < $3) ORDER BY id LIMIT $2`, [afterId, limit + 1, horizon]);
  return r.rows;
}
