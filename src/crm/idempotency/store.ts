// SQL for Idempotency-Key records: one per (principal, key), kept 24 hours.
import type { Queryable } from '../../db/db.ts';

export const TTL = "interval '24 hours'";

/**
 * Claims the key for this transaction. Returns undefined when claimed (a concurrent holder is waited
 * for by the unique index), or the stored answer of an earlier request with this key.
 */
export async function claim(tx: Queryable, principal: string, key: string, hash: string): Promise<{ request_hash: string; status: number; body: unknown } | undefined> {
  await tx.query(`DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2 AND created_at < now() - ${TTL}`, [principal, key]);
  const ins = await tx.query(
    `INSERT INTO idempotency_keys (principal, key, request_hash, status, body) VALUES ($1, $2, $3, 0, 'null')
     ON CONFLICT (principal, key) DO NOTHING RETURNING 1`,
    [principal, key, hash],
  );
  if (ins.rowCount > 0) return undefined;
  const r = await tx.query<{ request_hash: string; status: number; body: unknown }>(
    'SELECT request_hash, status, body FROM idempotency_keys WHERE principal = $1 AND key = $2',
    [principal, key],
  );
  return r.rows[0];
}

/** Stores the answer as its JSON text (a json column, migration 037): replayed with its keys in the order answered. */
export async function complete(tx: Queryable, principal: string, key: string, status: number, body: unknown): Promise<void> {
  await tx.query('UPDATE idempotency_keys SET status = $3, body = $4 WHERE principal = $1 AND key = $2', [principal, key, status, JSON.stringify(body)]);
}

/** Housekeeping: drops expired records. */
export async function purgeExpired(db: Queryable): Promise<number> {
  return (await db.query(`DELETE FROM idempotency_keys WHERE created_at < now() - ${TTL}`)).rowCount;
}
