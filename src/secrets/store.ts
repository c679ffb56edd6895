// SQL over every column that holds a sealed secret: which key ids are in use, and rewriting values in
// batches (first-start sealing of clear text, re-encryption under a new key).
import type { Queryable } from '../db/db.ts';
import { SEALED_SQL } from './box.ts';

/**
 * Every secret column (SPEC §15). Each table has a bigint `id` primary key. Add new secret columns here. `live`: the
 * rows whose values can still be used (a deleted subscription's, a rotated-out secret past its expiry, never are).
 */
export const SECRET_COLUMNS: readonly { table: string; columns: readonly string[]; live: string }[] = [
  { table: 'webhook_subscriptions', columns: ['signing_secret', 'bearer_token', 'basic_password', 'destination_password', 'oauth2_client_secret', 'tls_client_key'], live: 'deleted_at IS NULL' },
  { table: 'webhook_retired_secrets', columns: ['secret'], live: 'expires_at > now()' },
];

/**
 * Key ids named by sealed values that can still be used: a start refuses without these keys. Those of a deleted
 * subscription or an expired rotated-out secret kept a key lost for good "in use" for ever (nothing can clear them;
 * a probe, 2026-11-30).
 */
export async function keyIdsInUse(db: Queryable): Promise<string[]> {
  const parts = SECRET_COLUMNS.flatMap(({ table, columns, live }) =>
    columns.map((c) => `SELECT substr(${c}, 4, 16) AS kid FROM ${table} WHERE ${c} ~ '${SEALED_SQL}' AND ${live}`),
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
 * Deactivates the live, active subscriptions holding a value sealed under one of these key ids (declared lost), each
 * with `reasonOf(its fields, its key ids)` as its disabled reason: their deliveries wait instead of failing
 * SECRET_UNREADABLE. Each reason names what is its own: the fields (as the API names them: it leaves them out of its
 * answer) and the key ids of those given that its values are sealed under (until 2026-11-30 every reason named every
 * lost key id in use, another subscription's too). Returns their ids, and the key ids their values are sealed under:
 * a key declared lost may seal only values of subscriptions inactive already, or rotated-out secrets, or nothing.
 * (A rotated-out secret under such a key leaves only its own signature out: no reason to stop the subscription.)
 */
export async function deactivateHolders(db: Queryable, keyIds: string[], reasonOf: (fields: string[], keyIds: string[]) => string): Promise<{ ids: string[]; keyIds: string[] }> {
  const own = SECRET_COLUMNS.find((t) => t.table === 'webhook_subscriptions')!.columns;
  const kids = own.map((c) => `CASE WHEN ${sealedUnder(c)} THEN substr(${c}, 4, 16) END`).join(', ');
  const held = (await db.query<{ id: string; kids: (string | null)[] }>(
    `SELECT s.id, ARRAY[${kids}] AS kids FROM webhook_subscriptions s
     WHERE s.is_active AND s.deleted_at IS NULL
       AND (${own.map(sealedUnder).join(' OR ')})
     ORDER BY s.id FOR UPDATE`,
    [keyIds],
  )).rows;
  if (held.length === 0) return { ids: [], keyIds: [] };
  // kids[i] is own[i]'s key id when sealed under a lost key: the fields and key ids of this subscription's own.
  const reasons = held.map((h) => reasonOf(
    own.filter((_, i) => h.kids[i] !== null).map((c) => FIELD_OF[c] ?? c),
    keyIds.filter((k) => h.kids.includes(k)),
  ));
  await db.query(
    `UPDATE webhook_subscriptions s SET is_active = false, updated_at = clock_timestamp(), disabled_reason = v.reason
     FROM unnest($1::bigint[], $2::text[]) AS v(id, reason) WHERE s.id = v.id`,
    [held.map((h) => h.id), reasons],
  );
  const used = new Set(held.flatMap((h) => h.kids.filter((k): k is string => k !== null)));
  return { ids: held.map((h) => h.id), keyIds: keyIds.filter((k) => used.has(k)) };
}

/** The API's name of each secret column of webhook_subscriptions. */
const FIELD_OF: Record<string, string> = {
  signing_secret: 'signingSecret', bearer_token: 'bearerToken', basic_password: 'basicPassword',
  destination_password: "the url's password", oauth2_client_secret: 'oauth2.clientSecret', tls_client_key: 'tls.clientKey',
};

/**
 * Deletes a subscription's rotated-out secrets sealed under a key this process cannot open (`openable`: its key ids):
 * they sign nothing, and kept they kept a lost key in use and the rotation's answer promised their signature.
 */
export async function dropUnopenableRetired(db: Queryable, subscriptionId: string, openable: string[]): Promise<void> {
  await db.query(
    `DELETE FROM webhook_retired_secrets WHERE subscription_id = $1 AND secret ~ '${SEALED_SQL}' AND substr(secret, 4, 16) <> ALL($2::text[])`,
    [subscriptionId, openable],
  );
}

/** Replaces one value, only if nobody changed it meanwhile. */
export async function replaceValue(db: Queryable, table: string, column: string, id: string, old: string, next: string): Promise<boolean> {
  const r = await db.query(`UPDATE ${table} SET ${column} = $3 WHERE id = $1 AND ${column} = $2`, [id, old, next]);
  return r.rowCount > 0;
}
