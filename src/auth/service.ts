// Authentication: API keys and OAuth client-credentials tokens, the bootstrap admin key, key management.
import type { Db, Queryable } from '../db/db.ts';
import type { Scope } from '../http/versioning/route.ts';
import { allows, SCOPES, type Principal } from './principal.ts';
import * as store from './store.ts';
import { appendAudit, SYSTEM } from '../audit/store.ts';
import { digestsEqual, hashSecret, hashSecretBase64, newSecret, secretMatches } from './tokens.ts';

export const API_KEY_PREFIX = 'bulb_key_';
export const CLIENT_SECRET_PREFIX = 'bulb_cs_';
export const ACCESS_TOKEN_PREFIX = 'bulb_at_';
export const ACCESS_TOKEN_TTL_SEC = 3600;
const TOUCH_EVERY_MS = 60_000;

export async function createApiKey(db: Queryable, name: string, scopes: Scope[]) {
  const key = newSecret(API_KEY_PREFIX);
  const row = await store.insertApiKey(db, { name, prefix: key.slice(0, API_KEY_PREFIX.length + 6), hash: hashSecret(key), scopes });
  return { row, key };
}

export async function createAuthClient(db: Queryable, name: string, scopes: Scope[]) {
  const clientId = `bulb_client_${newSecret('', 12)}`;
  const clientSecret = newSecret(CLIENT_SECRET_PREFIX);
  const row = await store.insertAuthClient(db, { name, clientId, hash: hashSecret(clientSecret), scopes });
  return { row, clientSecret };
}

/**
 * Makes sure an admin key exists. With BULB_ADMIN_KEY: that exact key (idempotent), unless it was revoked: it stays
 * revoked and `revokedAt` says since when (the caller warns). Without: on the first start only (no API key was ever
 * made), creates one and returns it so the caller can print it once. A deployment whose admin keys were all revoked
 * gets a new one by setting BULB_ADMIN_KEY, never by a restart printing one to whatever collects its output.
 */
export async function bootstrapAdminKey(db: Db, adminKey: string | undefined): Promise<{ created?: string; revokedAt?: Date }> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [0x61646d6e]);
    // A key made here is an act of the system's, in the audit log as every other key's creation (SPEC §15): an admin
    // key minted by a start with a new BULB_ADMIN_KEY left no trace until 2026-11-29 (found by a probe).
    const audited = (k: store.ApiKeyRow, source: string) =>
      appendAudit(tx, { actor: SYSTEM, action: 'apiKey.created', targetType: 'ApiKey', targetId: k.uuid, ip: null, details: { name: k.name, scopes: k.scopes, source } });
    if (adminKey) {
      const { revokedAt, created } = await store.ensureApiKey(tx, { name: 'admin (BULB_ADMIN_KEY)', prefix: adminKey.slice(0, 4) + '…', hash: hashSecret(adminKey), scopes: ['admin'] });
      if (created) await audited(created, 'BULB_ADMIN_KEY');
      return revokedAt ? { revokedAt } : {};
    }
    if (await store.anyApiKeyEver(tx)) return {};
    const key = newSecret(API_KEY_PREFIX);
    await audited(await store.insertApiKey(tx, { name: 'admin (first start)', prefix: key.slice(0, API_KEY_PREFIX.length + 6), hash: hashSecret(key), scopes: ['admin'] }), 'first start');
    return { created: key };
  });
}

export type ClientCredentialsResult =
  | { ok: true; accessToken: string; scopes: Scope[]; expiresIn: number }
  | { ok: false; error: 'invalid_client' | 'invalid_scope'; description: string };

export async function issueAccessToken(db: Queryable, clientId: string, clientSecret: string, requested: string[] | undefined): Promise<ClientCredentialsResult> {
  const client = await store.findAuthClient(db, clientId);
  // Hash anyway when the client is unknown so both paths cost the same.
  const ok = client ? secretMatches(clientSecret, client.secret_hash) : (hashSecret(clientSecret), false);
  if (!client || !ok) return { ok: false, error: 'invalid_client', description: 'client authentication failed' };
  let scopes = client.scopes;
  if (requested && requested.length > 0) {
    // A narrower scope than granted may be asked for (RFC 6749 §3.3; read ⊂ write ⊂ admin): a write client's read token.
    const granted: Principal = { kind: 'oauth', uuid: client.uuid, scopes: client.scopes };
    const bad = requested.filter((s) => !(SCOPES as readonly string[]).includes(s) || !allows(granted, s as Scope));
    if (bad.length > 0) return { ok: false, error: 'invalid_scope', description: `scope not granted to this client: ${bad.join(' ')}` };
    scopes = requested as Scope[];
  }
  const accessToken = newSecret(ACCESS_TOKEN_PREFIX);
  await store.insertAccessToken(db, { clientId: client.id, hash: hashSecret(accessToken), scopes, ttlSec: ACCESS_TOKEN_TTL_SEC });
  return { ok: true, accessToken, scopes, expiresIn: ACCESS_TOKEN_TTL_SEC };
}

const CACHE_MAX = 10_000;

/**
 * Resolves a bearer token to its principal, or undefined (unknown, revoked, expired).
 *
 * Token cache (BULB_AUTH_CACHE_MS, default 60 s, 0 = off): a resolved token is answered from memory, so the
 * common request makes no authentication round trip. Revocation stays immediate in every process: each
 * revoking statement NOTIFYs AUTH_CHANNEL in its transaction and every process's cache is cleared when the
 * notification arrives. The cache is used only while that LISTEN is in place: until it is, and from the
 * moment its connection is lost until it is back, every request goes to the database (and the cache is
 * flushed on loss). The TTL is the backstop for a revocation that notifies nobody (e.g. SQL typed by hand).
 */
export class Authenticator {
  private lastTouch = new Map<string, number>();
  /** sha256 of the token (base64) → principal, valid until (epoch ms). Only hits are kept. */
  private cache = new Map<string, { principal: Principal; until: number }>();
  /** Bumped on every invalidation: a lookup that raced with one is not cached. */
  private generation = 0;
  /** LISTEN on AUTH_CHANNEL is in place (the cache may be used). */
  private live = false;
  private listening: Promise<unknown> | undefined;
  private retryAt = 0;

  constructor(private db: Db, private cacheMs = 60_000) {}

  /**
   * The principal of a token the cache holds (no database round trip, no promise), or undefined: ask authenticate().
   */
  cached(token: string): Principal | undefined {
    if (token.length === 0 || token.length > 512) return undefined;
    const key = this.cacheKey(token);
    return key ? this.fromCache(key) : undefined;
  }

  async authenticate(token: string): Promise<Principal | undefined> {
    if (token.length === 0 || token.length > 512) return undefined;
    const cacheKey = this.cacheKey(token);
    const hit = cacheKey ? this.fromCache(cacheKey) : undefined;
    if (hit) return hit;
    const hash = cacheKey ? Buffer.from(cacheKey, 'base64') : hashSecret(token);
    const gen = this.generation;
    if (token.startsWith(ACCESS_TOKEN_PREFIX)) {
      const t = await store.findAccessToken(this.db, hash);
      if (!t || !digestsEqual(hash, t.secret_hash)) return undefined;
      const principal: Principal = { kind: 'oauth', uuid: t.uuid, scopes: t.scopes };
      if (cacheKey) this.remember(gen, cacheKey, principal, t.expires_ms === undefined ? undefined : Number(t.expires_ms));
      return principal;
    }
    const k = await store.findApiKeyByHash(this.db, hash);
    if (!k || !digestsEqual(hash, k.secret_hash)) return undefined;
    const principal: Principal = { kind: 'apiKey', uuid: k.uuid, scopes: k.scopes };
    if (cacheKey) this.remember(gen, cacheKey, principal, undefined);
    return principal;
  }

  /** The token's key in the cache, or '' while the cache may not be used (off, or LISTEN not in place). */
  private cacheKey(token: string): string {
    if (this.cacheMs <= 0) return '';
    if (!this.listening) this.startListening();
    return this.live ? hashSecretBase64(token) : '';
  }

  /** The principal of a live cache entry (its key's use recorded), or undefined; an expired entry is dropped. */
  private fromCache(key: string): Principal | undefined {
    const hit = this.cache.get(key);
    if (!hit) return undefined;
    if (hit.until <= Date.now()) {
      this.cache.delete(key);
      return undefined;
    }
    return hit.principal;
  }

  /** Forgets every cached token (a revocation in this process: immediate here even before its NOTIFY arrives). */
  forget() {
    this.cache.clear();
    this.generation++;
  }

  /** LISTEN once, on first use; on failure the cache stays bypassed and LISTEN is retried a second later. */
  private startListening() {
    if (Date.now() < this.retryAt) return;
    this.listening = this.db
      .listen(
        store.AUTH_CHANNEL,
        () => {
          // A revocation somewhere, or the connection is back after a loss: forget, and (again) trust the cache.
          this.forget();
          this.live = true;
        },
        () => {
          this.live = false;
          this.forget();
        },
      )
      .then(
        () => {
          this.forget();
          this.live = true;
        },
        () => {
          this.listening = undefined;
          this.retryAt = Date.now() + 1000;
        },
      );
  }

  private remember(gen: number, key: string, principal: Principal, expiresMs: number | undefined) {
    if (gen !== this.generation || !this.live) return; // a revocation arrived while we were looking it up
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    const until = Math.min(Date.now() + this.cacheMs, expiresMs ?? Infinity);
    this.cache.set(key, { principal, until });
  }

  /**
   * Records an API key's use (lastUsedAt) at most once a minute per key, off the request path. Called only for a
   * call that was admitted (authenticated, within its rate and scope): a refused call is no use of the key.
   */
  used(principal: Principal) {
    if (principal.kind !== 'apiKey') return;
    const now = Date.now();
    if (now - (this.lastTouch.get(principal.uuid) ?? 0) < TOUCH_EVERY_MS) return;
    if (this.lastTouch.size >= CACHE_MAX) this.lastTouch.clear();
    this.lastTouch.set(principal.uuid, now);
    store.touchApiKey(this.db, principal.uuid).catch(() => {});
  }
}
