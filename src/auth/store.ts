// SQL for API keys, auth clients and OAuth access tokens.
import type { Queryable } from '../db/db.ts';
import type { Scope } from '../http/versioning/route.ts';

export interface ApiKeyRow {
  uuid: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface TokenOwnerRow {
  id: string;
  uuid: string;
  scopes: Scope[];
  secret_hash: Buffer;
  last_used_at?: string | null;
  /** OAuth tokens: expiry in epoch milliseconds. */
  expires_ms?: string;
}

/**
 * The NOTIFY channel of revocations: every statement that makes a key, client or token stop working
 * notifies it in its own transaction, and every process's token cache (Authenticator) forgets on it.
 */
export const AUTH_CHANNEL = 'bulb_auth';

const KEY_COLS = 'uuid, name, prefix, scopes, created_at, last_used_at, revoked_at';

export async function insertApiKey(db: Queryable, k: { name: string; prefix: string; hash: Buffer; scopes: Scope[] }): Promise<ApiKeyRow> {
  const r = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (name, prefix, secret_hash, scopes) VALUES ($1, $2, $3, $4) RETURNING ${KEY_COLS}`,
    [k.name, k.prefix, k.hash, k.scopes],
  );
  return r.rows[0];
}

/**
 * Idempotent insert of a key with a known hash (the bootstrap admin key). A key revoked since stays revoked: the answer
 * says so (revoking a leaked BULB_ADMIN_KEY must hold across restarts).
 */
export async function ensureApiKey(db: Queryable, k: { name: string; prefix: string; hash: Buffer; scopes: Scope[] }): Promise<{ revokedAt: Date | null; created: ApiKeyRow | null }> {
  const r = await db.query<ApiKeyRow & { inserted: boolean }>(
    `INSERT INTO api_keys (name, prefix, secret_hash, scopes) VALUES ($1, $2, $3, $4)
     ON CONFLICT (secret_hash) DO UPDATE SET scopes = CASE WHEN api_keys.revoked_at IS NULL THEN EXCLUDED.scopes ELSE api_keys.scopes END
     RETURNING ${KEY_COLS}, xmax = 0 AS inserted`,
    [k.name, k.prefix, k.hash, k.scopes],
  );
  const { inserted, ...row } = r.rows[0];
  const at = row.revoked_at;
  return { revokedAt: at == null ? null : new Date(at), created: inserted ? row : null };
}

/** Whether any API key was ever made (revoked ones count): a start that finds none is the first. */
export async function anyApiKeyEver(db: Queryable): Promise<boolean> {
  const r = await db.query(`SELECT 1 FROM api_keys LIMIT 1`);
  return r.rows.length > 0;
}

export async function listApiKeys(db: Queryable, afterId: string | null, limit: number) {
  const r = await db.query<ApiKeyRow & { id: string }>(
    `SELECT id, ${KEY_COLS} FROM api_keys WHERE revoked_at IS NULL AND ($1::bigint IS NULL OR id > $1) ORDER BY id LIMIT $2`,
    [afterId, limit],
  );
  return r.rows;
}

/** Revokes a key and notifies AUTH_CHANNEL in the same statement (so on commit); its name, or undefined if none was live. */
export async function revokeApiKey(db: Queryable, uuid: string): Promise<string | undefined> {
  const r = await db.query<{ name: string }>(
    `WITH k AS (UPDATE api_keys SET revoked_at = now() WHERE uuid = $1 AND revoked_at IS NULL RETURNING name)
     SELECT k.name, pg_notify($2, 'revoked') FROM k`,
    [uuid, AUTH_CHANNEL],
  );
  return r.rows[0]?.name;
}

export async function findApiKeyByHash(db: Queryable, hash: Buffer): Promise<TokenOwnerRow | undefined> {
  const r = await db.query<TokenOwnerRow>(
    `SELECT id, uuid, scopes, secret_hash, last_used_at FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL`,
    [hash],
    'auth_key_by_hash',
  );
  return r.rows[0];
}

export async function touchApiKey(db: Queryable, uuid: string): Promise<void> {
  await db.query(`UPDATE api_keys SET last_used_at = now() WHERE uuid = $1`, [uuid]);
}

export interface AuthClientRow {
  uuid: string;
  name: string;
  client_id: string;
  scopes: Scope[];
  created_at: string;
}

const CLIENT_COLS = 'uuid, name, client_id, scopes, created_at';

export async function insertAuthClient(db: Queryable, c: { name: string; clientId: string; hash: Buffer; scopes: Scope[] }): Promise<AuthClientRow> {
  const r = await db.query<AuthClientRow>(
    `INSERT INTO auth_clients (name, client_id, secret_hash, scopes) VALUES ($1, $2, $3, $4) RETURNING ${CLIENT_COLS}`,
    [c.name, c.clientId, c.hash, c.scopes],
  );
  return r.rows[0];
}

export async function listAuthClients(db: Queryable, afterId: string | null, limit: number) {
  const r = await db.query<AuthClientRow & { id: string }>(
    `SELECT id, ${CLIENT_COLS} FROM auth_clients WHERE revoked_at IS NULL AND ($1::bigint IS NULL OR id > $1) ORDER BY id LIMIT $2`,
    [afterId, limit],
  );
  return r.rows;
}

/** Revokes the client and every access token issued to it (one statement), notifying AUTH_CHANNEL; its name, or undefined if none was live. */
export async function revokeAuthClient(db: Queryable, uuid: string): Promise<string | undefined> {
  const r = await db.query<{ name: string }>(
    `WITH c AS (UPDATE auth_clients SET revoked_at = now() WHERE uuid = $1 AND revoked_at IS NULL RETURNING id, name),
     t AS (DELETE FROM oauth_tokens WHERE client_id IN (SELECT id FROM c))
     SELECT c.name, pg_notify($2, 'revoked') FROM c`,
    [uuid, AUTH_CHANNEL],
  );
  return r.rows[0]?.name;
}

export async function findAuthClient(db: Queryable, clientId: string): Promise<TokenOwnerRow | undefined> {
  const r = await db.query<TokenOwnerRow>(
    `SELECT id, uuid, scopes, secret_hash FROM auth_clients WHERE client_id = $1 AND revoked_at IS NULL`,
    [clientId],
  );
  return r.rows[0];
}

export async function insertAccessToken(db: Queryable, t: { clientId: string; hash: Buffer; scopes: Scope[]; ttlSec: number }) {
  await db.query(
    `INSERT INTO oauth_tokens (client_id, secret_hash, scopes, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
    [t.clientId, t.hash, t.scopes, t.ttlSec],
  );
  // Keep the table small: drop tokens that expired a while ago.
  await db.query(`DELETE FROM oauth_tokens WHERE expires_at < now() - interval '1 day'`);
}

export async function findAccessToken(db: Queryable, hash: Buffer): Promise<TokenOwnerRow | undefined> {
  const r = await db.query<TokenOwnerRow>(
    `SELECT t.id, c.uuid, t.scopes, t.secret_hash, (extract(epoch FROM t.expires_at) * 1000)::bigint AS expires_ms FROM oauth_tokens t JOIN auth_clients c ON c.id = t.client_id
      WHERE t.secret_hash = $1 AND t.expires_at > now() AND c.revoked_at IS NULL`,
    [hash],
    'auth_token_by_hash',
  );
  return r.rows[0];
}
