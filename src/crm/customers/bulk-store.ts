// SQL of the set-based upsert of bulk: one statement each to lock the existing rows, insert the new ones (with
// their customerCreate events) and update the changed ones, whatever the number of items; or, when every row is
// new, one statement in all. Rows travel as one jsonb parameter. Only the ON CONFLICT insert is named (prepared once
// per connection): the statements that look customers up by externalId or id are planned on every call, because a
// plan cached while the table was small (a sequential scan) stays until the next ANALYZE, and a load through bulk
// grows the table faster than autovacuum analyzes it (measured: 7,450 → 3,600 customers/s over 8 s with the
// all-new insert named, a steady 13,000–14,000/s unnamed; planning 100 items costs far less than that).
import type { Queryable } from '../../db/db.ts';
import { outboxCtes } from '../../events/emit.ts';
import type { CustomerRow } from './store.ts';
import { DATA_COLUMNS, mergedIntoColumns, rowColumns, sqlType, type WritableColumn } from './wire.ts';

/**
 * Column values of one customer as the statements below read them (jsonb_to_recordset): the writable columns (in
 * their stored form), the email keys, and `disabled` (null: the status stays; a new customer is active).
 */
export type CustomerCols = { id?: string; external_id: string; email_keys: string[]; disabled: boolean | null } & Record<WritableColumn, unknown>;

const RECORD = `external_id text, ${DATA_COLUMNS.map((c) => `${c} ${sqlType(c)}`).join(', ')}, email_keys jsonb, disabled boolean`;
const KEYS = `ARRAY(SELECT jsonb_array_elements_text(x.email_keys))`;
const RETURNING_ROWS = (t: string) => `${rowColumns(t)}, NULL::uuid AS merged_into_uuid, NULL::text AS merged_into_external_id`;
/** x's value of a column, addresses with their uuids kept from `current` (bulb_address_uuids, migration 027). */
const value = (c: string, current: string) => (c === 'addresses' ? `bulb_address_uuids(x.addresses, ${current})` : `x.${c}`);

/** Customers matching `where`, locked FOR NO KEY UPDATE in id order (concurrent bulks queue, never deadlock; store.ts lockClause says why not FOR UPDATE). */
async function lockWhere(tx: Queryable, where: string, params: unknown[]): Promise<CustomerRow[]> {
  const r = await tx.query<CustomerRow>(`SELECT ${rowColumns('c')}, ${mergedIntoColumns('c')} FROM customers c WHERE ${where} ORDER BY c.id FOR NO KEY UPDATE OF c`, params);
  return r.rows;
}

/** Existing customers with these externalIds, locked (lockWhere). */
export async function lockByExternalIds(tx: Queryable, externalIds: string[]): Promise<(CustomerRow & { external_id: string })[]> {
  if (externalIds.length === 0) return [];
  return (await lockWhere(tx, 'c.external_id = ANY($1::text[])', [externalIds])) as (CustomerRow & { external_id: string })[];
}

/** The same, of the customers with these externalIds or these uuids (a TGEN addresses file names either). */
export async function lockByKeys(tx: Queryable, externalIds: string[], uuids: string[]): Promise<CustomerRow[]> {
  if (uuids.length === 0) return lockByExternalIds(tx, externalIds);
  return lockWhere(tx, 'c.external_id = ANY($1::text[]) OR c.uuid = ANY($2::uuid[])', [externalIds, uuids]);
}

/** The insert of rows `x`: its column and value lists (each statement adds its FROM, order and RETURNING). */
const INSERT_X = `INSERT INTO customers (external_id, ${DATA_COLUMNS.join(', ')}, email_keys, status)
       SELECT x.external_id, ${DATA_COLUMNS.map((c) => value(c, 'NULL')).join(', ')}, ${KEYS},
         CASE WHEN x.disabled THEN 'disabled' ELSE 'active' END`;
/** Rows as insertMany/insertAllNew read them ($1): numbered in item order. */
const ordered = (rows: CustomerCols[]) => JSON.stringify(rows.map((row, ord) => ({ ord, ...row })));

// Inserted in externalId order (byte order, COLLATE "C": the same in every transaction), not item order: requests
// inserting overlapping new keys in different orders each waited for a key the other had inserted (a deadlock, a 500
// once the retries were spent; found by a probe, 2026-11-29). In one order the later waits for the earlier, then
// skips (ON CONFLICT) and updates. The import's insert does the same (src/imports/store.ts applyChunk).
const INSERT = `${INSERT_X}
       FROM jsonb_to_recordset($1::jsonb) AS x(ord int, ${RECORD}) ORDER BY x.external_id COLLATE "C", x.ord
       ON CONFLICT (external_id) DO NOTHING
       RETURNING ${RETURNING_ROWS('customers')}`;
// The creates' customerCreate events (with deliveries) in insertion order, written by the insert's own statement.
const createEvents = `${outboxCtes(`SELECT 'customerCreate', 'Customer', c.uuid, c.external_id, $2::text FROM c ORDER BY c.id`)}
     SELECT c.* FROM c ORDER BY c.id`;
const INSERT_WITH_EVENTS = `WITH c AS (${INSERT}),
     ${createEvents}`;

/**
 * Inserts new customers, in externalId order (above), with their customerCreate events (tagged with eventSource) and deliveries, in one
 * statement; an externalId taken meanwhile (a concurrent insert) is skipped and missing from the answer.
 */
export async function insertMany(tx: Queryable, rows: CustomerCols[], eventSource: string): Promise<CustomerRow[]> {
  if (rows.length === 0) return [];
  const r = await tx.query<CustomerRow>(INSERT_WITH_EVENTS, [ordered(rows), eventSource], 'customer_bulk_insert');
  return r.rows;
}

// Every row new, or none written. No ON CONFLICT: an externalId inserted concurrently fails the statement (unique
// violation), writing nothing.
const INSERT_ALL_NEW = `WITH x AS MATERIALIZED (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(ord int, ${RECORD})),
     c AS (
       ${INSERT_X}
       FROM x WHERE NOT EXISTS (SELECT 1 FROM customers e WHERE e.external_id IN (SELECT external_id FROM x)) ORDER BY x.external_id COLLATE "C", x.ord
       RETURNING ${RETURNING_ROWS('customers')}
     ),
     ${createEvents}`;

/**
 * Inserts every row, in externalId order, with its customerCreate event (tagged with eventSource) and deliveries, when none
 * of the externalIds exists; else writes nothing and returns []. Throws (having written nothing) when one of them
 * is inserted concurrently. One statement: on its own (autocommit) one round trip and one transaction.
 */
export async function insertAllNew(db: Queryable, rows: CustomerCols[], eventSource: string): Promise<CustomerRow[]> {
  if (rows.length === 0) return [];
  const r = await db.query<CustomerRow>(INSERT_ALL_NEW, [ordered(rows), eventSource]);
  return r.rows;
}

const STATUS = `CASE WHEN x.disabled IS NULL THEN c.status WHEN x.disabled THEN 'disabled' ELSE 'active' END`;

/** Writes the new values of existing (locked) customers; rows whose values did not change are not written nor returned. */
export async function updateMany(tx: Queryable, rows: CustomerCols[]): Promise<CustomerRow[]> {
  if (rows.length === 0) return [];
  const r = await tx.query<CustomerRow>(
    `UPDATE customers c SET ${DATA_COLUMNS.map((col) => `${col} = ${value(col, 'c.addresses')}`).join(', ')}, email_keys = ${KEYS},
       status = ${STATUS}, updated_at = clock_timestamp()
     FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, ${RECORD})
     WHERE c.id = x.id AND (${DATA_COLUMNS.map((col) => `c.${col}`).join(', ')}, c.status)
       IS DISTINCT FROM (${DATA_COLUMNS.map((col) => value(col, 'c.addresses')).join(', ')}, ${STATUS})
     RETURNING ${RETURNING_ROWS('c')}`,
    [JSON.stringify(rows)],
  );
  return r.rows;
}
