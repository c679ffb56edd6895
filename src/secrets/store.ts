// SQL over every column that holds a sealed secret: which key ids are in use, and rewriting values in
// batches (first-start sealing of clear text, re-encryption under a new key).
import type { Queryable } from '../db/db.ts';
import { SEALED_SQL } from './box.ts';

/** Every secret column (SPEC §15). Each table has a bigint `id` primary key. Add new secret columns here. */
export const SECRET_COLUMNS: readonly { table: string; columns: readonly string[] }[] = [
  { table: 'webhook_subscriptions', columns: ['signing_secret', 'bearer_token', 'basic_password', 'destination_password', 'oauth2_client_secret', 'tls_client_key'] },
  { table: 'webhook_retired_secrets', columns: ['secret'] },
];

/** Key ids named by sealed values anywhere. */
export async function keyIdsInUse(db: Queryable): Promise<string[]> {
  const parts = SECRET_COLUMNS.flatMap(({ table, columns }) =>
    columns.map((c) => `SELECT substr(${c}, 4, 16) AS kid FROM ${table} WHERE ${c} ~ '${SEALED_SQL}'`),
  );
  const r = await db.query<{ kid: string }>(`SELECT DISTINCT kid FROM (${parts.join(' UNION ')}) k`);
  return r.rows.map((x) => x.kid);
}

export interface StoredValue {
  id: string;
  value: string;
}

/**
 * Values of one column that are clear text, or (when keyId is given) sealed under another key that `openable` names
 * (one sealed under a key declared lost stays as it is).
 */
export async function valuesToSeal(db: Queryable, table: string, column: string, keyId: string | null, openable: string[], afterId: string, limit: number): Promise<StoredValue[]> {
  const r = await db.query<StoredValue>(
    `SELECT id, ${column} AS value FROM ${table}
     WHERE ${column} IS NOT NULL
       AND (${column} !~ '${SEALED_SQL}' OR ($1::text IS NOT NULL AND substr(${column}, 4, 16) <> $1 AND substr(${column}, 4, 16) = ANY($4::text[])))
       AND id > $2
     ORDER BY id LIMIT $3`,
    [keyId, afterId, limit, openable],
  );
  return r.rows;
}

/** A secret column `c` holds a value sealed under one of the key ids $1. */
const sealedUnder = (c: string) => `(${c} ~ '${SEALED_SQL}' AND substr(${c}, 4, 16) = ANY($1::text[]))`;

/**
 * Deactivates the live, active subscriptions holding a value sealed under one of these key ids (declared lost), with
 * `reason` as their disabled reason: their deliveries wait instead of failing SECRET_UNREADABLE. Returns their ids.
 * (A rotated-out secret under such a key leaves only its own signature out: no reason to stop the subscription.)
 */
export async function deactivateHolders(db: Queryable, keyIds: string[], reason: string): Promise<string[]> {
  const own = SECRET_COLUMNS.find((t) => t.table === 'webhook_subscriptions')!.columns.map(sealedUnder);
  const r = await db.query<{ id: string }>(
    `UPDATE webhook_subscriptions s SET is_active = false, disabled_reason = $2, updated_at = clock_timestamp()
     WHERE s.is_active AND s.deleted_at IS NULL
       AND (${own.join(' OR ')})
     RETURNING s.id`,
    [keyIds, reason],
  );
  return r.rows.map((x) => x.id);
}

/** Replaces one value, only if nobody changed it meanwhile. */
export async function replaceValue(db: Queryable, table: string, column: string, id: string, old: string, next: string): Promise<boolean> {
  const r = await db.query(`UPDATE ${table} SET ${column} = $3 WHERE id = $1 AND ${column} = $2`, [id, old, next]);
  return r.rowCount > 0;
}
