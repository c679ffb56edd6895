// SQL of the merge: every statement is set-based (one statement per table, whatever the row count).
import type { Queryable } from '../../db/db.ts';
import type { Moved } from './schema.ts';
import { mergedIntoColumns } from '../customers/wire.ts';

export interface LockedCustomer {
  id: string;
  uuid: string;
  external_id: string | null;
  status: 'active' | 'disabled';
  merged_into: string | null;
  merged_into_uuid: string | null;
  merged_into_external_id: string | null;
}

/** A customer as the merge names it: by its internal (Tulip) id, its uuid or its externalId. */
export interface NamedCustomer {
  id: string;
  uuid: string;
  external_id: string | null;
}

/**
 * Customers bearing any of these uuids, externalIds or internal ids (each list may be empty); unknown ones
 * are simply absent. The caller decides which identifier a reference is matched by.
 */
export async function resolve(db: Queryable, by: { uuids: string[]; externalIds: string[]; ids: string[] }): Promise<NamedCustomer[]> {
  const r = await db.query<NamedCustomer>(
    `SELECT id, uuid::text AS uuid, external_id FROM customers
     WHERE uuid = ANY($1::uuid[]) OR external_id = ANY($2::text[]) OR id = ANY($3::bigint[])`,
    [by.uuids, by.externalIds, by.ids],
  );
  return r.rows;
}

/** Customers merged earlier into one of these (to re-point them: no chains). */
export async function mergedInto(db: Queryable, ids: string[]): Promise<string[]> {
  const r = await db.query<{ id: string }>('SELECT id FROM customers WHERE merged_into = ANY($1::bigint[])', [ids]);
  return r.rows.map((x) => x.id);
}

/**
 * Locks customers in one global order (by id) so overlapping merges wait for each other instead of
 * deadlocking, and returns their state as of the lock.
 */
export async function lockCustomers(tx: Queryable, ids: string[]): Promise<LockedCustomer[]> {
  const r = await tx.query<LockedCustomer>(
    `SELECT c.id, c.uuid, c.external_id, c.status, c.merged_into, ${mergedIntoColumns('c')} FROM customers c
     WHERE c.id = ANY($1::bigint[]) ORDER BY c.id FOR NO KEY UPDATE OF c`, // not FOR UPDATE: customers/store.ts lockClause
    [ids],
  );
  return r.rows;
}

/** The attached tables that move wholesale, with the MergeResult key of each. */
export const MOVED_TABLES: [keyof Moved, string][] = [
  ['orders', 'orders'], ['followUps', 'follow_ups'], ['notes', 'notes'], ['messages', 'messages'],
  ['preferences', 'preferences'], ['productShares', 'product_shares'],
];

/**
 * `, updated_at = …` for the moved tables whose rows show an `updatedAt` (notes): a row whose customer a merge or its
 * undo changes has changed, for a client syncing notes by `updatedAt` (it stayed as it was until 2026-11-29; a probe).
 */
export const renewedStamp = (table: string) => (table === 'notes' ? ', updated_at = clock_timestamp()' : '');

/**
 * Moves every row of the secondaries to the primary and, in the same statement, journals the ids moved
 * per former customer (one merge_moves row per (table, secondary) with an array of ids).
 */
export async function moveRows(tx: Queryable, mergeId: string, table: string, primary: string, secondaries: string[]): Promise<number> {
  const r = await tx.query<{ n: number }>(
    `WITH moved AS (
       UPDATE ${table} t SET customer_id = $1${renewedStamp(table)} FROM unnest($2::bigint[]) AS s(cid)
       WHERE t.customer_id = s.cid RETURNING t.id, s.cid
     ), journal AS (
       INSERT INTO merge_moves (merge_id, table_name, from_customer, row_ids)
       SELECT $3, $4, cid, array_agg(id) FROM moved GROUP BY cid
     )
     SELECT count(*)::int AS n FROM moved`,
    [primary, secondaries, mergeId, table],
  );
  return r.rows[0].n;
}

/**
 * Removes the secondaries' associations that would duplicate one per associate on the primary:
 * the primary's own row wins, else the oldest. Returns how many were removed.
 */
export async function dedupeAssociations(tx: Queryable, mergeId: string, primary: string, secondaries: string[]): Promise<number> {
  const r = await tx.query<{ n: number }>(
    `WITH removed AS (
       DELETE FROM customer_associates WHERE id IN (
         SELECT id FROM (
           SELECT id, row_number() OVER (PARTITION BY associate_id ORDER BY (customer_id = $1) DESC, id) AS rn
           FROM customer_associates WHERE customer_id = $1 OR customer_id = ANY($2::bigint[])
         ) ranked WHERE rn > 1)
       RETURNING id, uuid, customer_id, associate_id, role, created_at
     ), journal AS (
       INSERT INTO merge_removed_associations (merge_id, id, uuid, customer_id, associate_id, role, created_at)
       SELECT $3, id, uuid, customer_id, associate_id, role, created_at FROM removed
     )
     SELECT count(*)::int AS n FROM removed`,
    [primary, secondaries, mergeId],
  );
  return r.rows[0].n;
}

/**
 * Disables the secondaries (pointing at the primary) and re-points customers merged into them, recording
 * in the merge row who was re-pointed from which survivor (for the undo).
 */
export async function disableAndRepoint(tx: Queryable, mergeId: string, primary: string, secondaries: string[]): Promise<{ uuid: string; external_id: string }[]> {
  const r = await tx.query<{ uuid: string; external_id: string }>(
    `WITH old AS (
       SELECT id, merged_into FROM customers WHERE merged_into = ANY($2::bigint[])
     ), rec AS (
       UPDATE merges SET repointed_ids = coalesce((SELECT array_agg(id ORDER BY id) FROM old), '{}'),
         repointed_from = coalesce((SELECT array_agg(merged_into ORDER BY id) FROM old), '{}')
       WHERE id = $3
     )
     UPDATE customers SET status = 'disabled', merged_into = $1, updated_at = clock_timestamp()
     WHERE id = ANY($2::bigint[]) OR merged_into = ANY($2::bigint[])
     RETURNING uuid, external_id`,
    [primary, secondaries, mergeId],
  );
  return r.rows;
}

export async function touch(tx: Queryable, id: string): Promise<void> {
  await tx.query('UPDATE customers SET updated_at = clock_timestamp() WHERE id = $1', [id]);
}

/** The merge record, written first so the journal can refer to it; counts are filled in by finishMerge. */
export async function insertMerge(
  tx: Queryable,
  m: { primary: string; secondaries: string[]; principalUuid: string | null; source: string },
): Promise<{ id: string; uuid: string }> {
  const r = await tx.query<{ id: string; uuid: string }>(
    `INSERT INTO merges (primary_id, secondary_ids, moved, duplicates_removed, principal_uuid, source)
     VALUES ($1, $2::bigint[], '{}', 0, $3, $4) RETURNING id, uuid`,
    [m.primary, m.secondaries, m.principalUuid, m.source],
  );
  return r.rows[0];
}

export async function finishMerge(tx: Queryable, id: string, moved: Moved, duplicatesRemoved: number): Promise<void> {
  await tx.query('UPDATE merges SET moved = $2, duplicates_removed = $3 WHERE id = $1', [id, JSON.stringify(moved), duplicatesRemoved]);
}

export interface MergeRow {
  id: string;
  uuid: string;
  primary_uuid: string;
  primary_external_id: string;
  secondaries: { uuid: string; externalId: string }[];
  moved: Moved;
  duplicates_removed: number;
  principal_uuid: string | null;
  source: string;
  created_at: string;
  undone_at: string | null;
}

/**
 * Merges where the customer is primary or secondary, oldest first, after the cursor. The customer's merge ids
 * are read first from the two indexes (merges_primary, the GIN merges_secondaries), then the page by primary
 * key: written as `primary_id = $1 OR secondary_ids @> …` under `ORDER BY id LIMIT`, the planner walked the
 * whole merges table in id order for a customer with few merges (test/crm/list-scale.test.ts).
 */
export async function listMerges(db: Queryable, customerId: string, afterId: string | null, limit: number): Promise<MergeRow[]> {
  const r = await db.query<MergeRow>(
    `SELECT g.id, g.uuid, p.uuid AS primary_uuid, p.external_id AS primary_external_id, g.moved, g.duplicates_removed,
       g.principal_uuid, g.source, g.created_at, g.undone_at,
       (SELECT coalesce(json_agg(json_build_object('uuid', s.uuid, 'externalId', s.external_id) ORDER BY u.ord), '[]'::json)
          FROM unnest(g.secondary_ids) WITH ORDINALITY AS u(sid, ord) JOIN customers s ON s.id = u.sid) AS secondaries
     FROM merges g JOIN customers p ON p.id = g.primary_id
     WHERE g.id = ANY (ARRAY(
         SELECT m.id FROM merges m WHERE m.primary_id = $1 AND ($2::bigint IS NULL OR m.id > $2)
         UNION ALL
         SELECT m.id FROM merges m WHERE m.secondary_ids @> ARRAY[$1::bigint]))
       AND ($2::bigint IS NULL OR g.id > $2)
     ORDER BY g.id LIMIT $3`,
    [customerId, afterId, limit + 1],
  );
  return r.rows;
}
