// SQL of the set-based upsert of bulk: one statement each to lock the existing rows, insert the
// new ones and update the changed ones, whatever the number of items. Rows travel as one jsonb parameter.
import type { Queryable } from '../../db/db.ts';
import type { CustomerRow } from './store.ts';

/** Column values of one customer as the statements below read them (jsonb_to_recordset). */
export interface CustomerCols {
  id?: string;
  external_id: string;
  first_name: string | null;
  last_name: string | null;
  emails: unknown[];
  phones: unknown[];
  addresses: unknown[];
  social_profiles: unknown[];
  loyalty_tier: string | null;
  email_keys: string[];
}

const RECORD = `external_id text, first_name text, last_name text, emails jsonb, phones jsonb, addresses jsonb,
  social_profiles jsonb, loyalty_tier text, email_keys jsonb`;
const KEYS = `ARRAY(SELECT jsonb_array_elements_text(x.email_keys))`;
const RETURNING_ROWS = (t: string) => `${t}.id, ${t}.uuid, ${t}.external_id, ${t}.status, ${t}.first_name, ${t}.last_name, ${t}.emails,
  ${t}.phones, ${t}.addresses, ${t}.social_profiles, ${t}.loyalty_tier, NULL::uuid AS merged_into_uuid,
  NULL::text AS merged_into_external_id, ${t}.created_at, ${t}.updated_at`;

/** Existing customers with these externalIds, locked FOR UPDATE in id order (concurrent bulks queue, never deadlock). */
export async function lockByExternalIds(tx: Queryable, externalIds: string[]): Promise<CustomerRow[]> {
  if (externalIds.length === 0) return [];
  const r = await tx.query<CustomerRow>(
    `SELECT c.id, c.uuid, c.external_id, c.status, c.first_name, c.last_name, c.emails, c.phones, c.addresses,
       c.social_profiles, c.loyalty_tier, m.uuid AS merged_into_uuid, m.external_id AS merged_into_external_id, c.created_at, c.updated_at
     FROM customers c LEFT JOIN customers m ON m.id = c.merged_into
     WHERE c.external_id = ANY($1::text[]) ORDER BY c.id FOR UPDATE OF c`,
    [externalIds],
  );
  return r.rows;
}

/** Inserts new customers; an externalId taken meanwhile (a concurrent insert) is skipped and missing from the answer. */
export async function insertMany(tx: Queryable, rows: CustomerCols[]): Promise<CustomerRow[]> {
  if (rows.length === 0) return [];
  const r = await tx.query<CustomerRow>(
    `INSERT INTO customers (external_id, first_name, last_name, emails, phones, addresses, social_profiles, loyalty_tier, email_keys)
     SELECT x.external_id, x.first_name, x.last_name, x.emails, x.phones, x.addresses, x.social_profiles, x.loyalty_tier, ${KEYS}
     FROM jsonb_to_recordset($1::jsonb) AS x(ord int, ${RECORD}) ORDER BY x.ord
     ON CONFLICT (external_id) DO NOTHING
     RETURNING ${RETURNING_ROWS('customers')}`,
    [JSON.stringify(rows.map((row, ord) => ({ ord, ...row })))],
  );
  return r.rows;
}

/** Writes the new values of existing (locked) customers; rows whose values did not change are not written nor returned. */
export async function updateMany(tx: Queryable, rows: CustomerCols[]): Promise<CustomerRow[]> {
  if (rows.length === 0) return [];
  const r = await tx.query<CustomerRow>(
    `UPDATE customers c SET first_name = x.first_name, last_name = x.last_name, emails = x.emails, phones = x.phones,
       addresses = x.addresses, social_profiles = x.social_profiles, loyalty_tier = x.loyalty_tier, email_keys = ${KEYS},
       updated_at = clock_timestamp()
     FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, ${RECORD})
     WHERE c.id = x.id AND (c.first_name, c.last_name, c.emails, c.phones, c.addresses, c.social_profiles, c.loyalty_tier)
       IS DISTINCT FROM (x.first_name, x.last_name, x.emails, x.phones, x.addresses, x.social_profiles, x.loyalty_tier)
     RETURNING ${RETURNING_ROWS('c')}`,
    [JSON.stringify(rows)],
  );
  return r.rows;
}
