// SQL of the merge undo (SPEC §13): reads a merge's journal and puts back exactly what it moved,
// removed and re-pointed. Every statement is set-based (one per table, whatever the row count).
import type { Queryable } from '../../db/db.ts';
import { renewedStamp } from './store.ts';

export interface MergeToUndo {
  id: string;
  uuid: string;
  primary_id: string;
  secondary_ids: string[];
  repointed_ids: string[];
  repointed_from: string[];
  created_at: string;
  undone_at: string | null;
  expired: boolean;
}

/** The merge record, locked (two undos of one merge queue here), with whether its window has passed. */
export async function lockMerge(tx: Queryable, uuid: string, windowDays: number): Promise<MergeToUndo | undefined> {
  const r = await tx.query<MergeToUndo>(
    `SELECT id, uuid, primary_id, secondary_ids, repointed_ids, repointed_from, created_at, undone_at,
       created_at < now() - make_interval(days => $2) AS expired
     FROM merges WHERE uuid = $1 FOR UPDATE`,
    [uuid, windowDays],
  );
  return r.rows[0];
}

/**
 * A later merge (not undone) that has one of these customers among its secondaries. The candidates' ids come
 * from the GIN index first: as a filter under `ORDER BY id DESC LIMIT 1` the planner walked every merge since.
 */
export async function laterMergeOf(tx: Queryable, mergeId: string, customerIds: string[]): Promise<{ uuid: string } | undefined> {
  const r = await tx.query<{ uuid: string }>(
    `SELECT uuid FROM merges
     WHERE id = ANY (ARRAY(SELECT id FROM merges WHERE secondary_ids && $2::bigint[])) AND id > $1 AND undone_at IS NULL
     ORDER BY id DESC LIMIT 1`,
    [mergeId, customerIds],
  );
  return r.rows[0];
}

/** Moves the journaled rows of one table back to their former customers (only those still on the primary). */
export async function moveBack(tx: Queryable, mergeId: string, table: string, primary: string): Promise<number> {
  // Few journal rows (one per former customer), each an index scan of its id array: no join over unnested ids.
  // `customer_id + 0` keeps the planner off the (table, customer_id) index: statistics taken before the merge
  // say the primary has no rows there, and with that index as the outer side, every moved row was compared
  // with every id array (EXPLAINed at 100k: 3.7 s per table instead of 0.3 s).
  const r = await tx.query(
    `UPDATE ${table} t SET customer_id = j.from_customer${renewedStamp(table)}
     FROM merge_moves j
     WHERE j.merge_id = $1 AND j.table_name = $2 AND t.id = ANY(j.row_ids) AND t.customer_id + 0 = $3`,
    [mergeId, table, primary],
  );
  return r.rowCount;
}

/** Re-inserts the associations removed as duplicates (same id and uuid), unless that pair exists again. */
export async function restoreAssociations(tx: Queryable, mergeId: string): Promise<number> {
  const r = await tx.query(
    `INSERT INTO customer_associates (id, uuid, customer_id, associate_id, role, created_at) OVERRIDING SYSTEM VALUE
     SELECT id, uuid, customer_id, associate_id, role, created_at FROM merge_removed_associations WHERE merge_id = $1 ORDER BY id
     ON CONFLICT DO NOTHING`,
    [mergeId],
  );
  return r.rowCount;
}

/**
 * After the rows moved back, the primary may have lost an associate that a later merge into it (still
 * standing) had dropped as a duplicate of the row now gone: that dropped row is re-attached to the primary
 * and re-journaled in its merge as moved (so undoing that merge later takes it back to its customer).
 */
export async function reattachLaterDuplicates(tx: Queryable, mergeId: string, primary: string): Promise<number> {
  const r = await tx.query<{ n: number }>(
    `WITH cand AS (
       SELECT DISTINCT ON (r.associate_id) r.merge_id, r.id, r.uuid, r.customer_id, r.associate_id, r.role, r.created_at
       FROM merge_removed_associations r JOIN merges g ON g.id = r.merge_id
       WHERE g.primary_id = $2 AND g.id > $1 AND g.undone_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM customer_associates ca WHERE ca.customer_id = $2 AND ca.associate_id = r.associate_id)
       ORDER BY r.associate_id, r.merge_id, r.id
     ), ins AS (
       INSERT INTO customer_associates (id, uuid, customer_id, associate_id, role, created_at) OVERRIDING SYSTEM VALUE
       SELECT id, uuid, $2, associate_id, role, created_at FROM cand RETURNING id
     ), unjournal AS (
       DELETE FROM merge_removed_associations r USING cand WHERE r.merge_id = cand.merge_id AND r.id = cand.id
     ), rejournal AS (
       INSERT INTO merge_moves (merge_id, table_name, from_customer, row_ids)
       SELECT merge_id, 'customer_associates', customer_id, ARRAY[id] FROM cand
     )
     SELECT count(*)::int AS n FROM ins`,
    [mergeId, primary],
  );
  return r.rows[0].n;
}

/** Secondaries active again, merged into nobody. */
export async function reactivate(tx: Queryable, ids: string[]): Promise<{ uuid: string; external_id: string }[]> {
  const r = await tx.query<{ uuid: string; external_id: string }>(
    `UPDATE customers SET status = 'active', merged_into = NULL, updated_at = clock_timestamp()
     WHERE id = ANY($1::bigint[]) RETURNING uuid, external_id`,
    [ids],
  );
  return r.rows;
}

/** Customers the merge re-pointed point to their former survivor again. */
export async function repointBack(tx: Queryable, ids: string[], from: string[]): Promise<{ uuid: string; external_id: string }[]> {
  if (ids.length === 0) return [];
  const r = await tx.query<{ uuid: string; external_id: string }>(
    `UPDATE customers c SET merged_into = r.former, updated_at = clock_timestamp()
     FROM unnest($1::bigint[], $2::bigint[]) AS r(id, former) WHERE c.id = r.id RETURNING c.uuid, c.external_id`,
    [ids, from],
  );
  return r.rows;
}

export async function markUndone(tx: Queryable, id: string): Promise<void> {
  await tx.query('UPDATE merges SET undone_at = clock_timestamp() WHERE id = $1', [id]);
}
