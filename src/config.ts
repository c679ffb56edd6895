// Environment → one typed, validated configuration object (SPEC §1).
import { isSupportedCountry } from 'libphonenumber-js';
import { isIP } from 'node:net';
import { parseProxyUrl } from './webhooks/proxy.ts';

export type Role = 'api' | 'worker' | 'all';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  /** BULB_DATABASE_DIRECT_URL: a direct connection for sessions when DATABASE_URL is a pooler (src/db/pooler.ts). */
  databaseDirectUrl: string | undefined;
  /** BULB_DATABASE_PREPARED_STATEMENTS: auto (on unless a transaction pooler is detected), on, off. */
  databasePreparedStatements: 'auto' | 'on' | 'off';
  /** A pooled connection whose statement has not answered in this long is closed (ms; 0: never). */
  databaseStatementDeadlineMs: number;
  /** BULB_DATABASE_WAIT_MS: how long a start waits for an unreachable or starting PostgreSQL before it exits 1 (0: not at all). */
  databaseWaitMs: number;
  dataDir: string;
  adminKey: string | undefined;
  serviceName: string;
  role: Role;
  webhookRetrySchedule: number[]; // seconds between attempts
  /**
   * BULB_WEBHOOK_RETRY_UNIT_MS, for tests only: how many ms a second of a retry schedule lasts (default 1000), so that
   * a schedule spanning hours runs in seconds (docs/delivery-policies.md).
   */
  webhookRetryUnitMs: number;
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  /** BULB_WEBHOOK_PROXY: an HTTP CONNECT proxy every webhook connection goes through (docs/receiver-auth.md); null: direct. */
  webhookProxy: URL | null;
  /** BULB_PUBLIC_URL: where clients reach this server (no trailing slash), for absolute links; null: the request's own. */
  publicUrl: string | null;
  webhookRetentionDays: number;
  /** Events older than this many days (and than webhookRetentionDays) are dropped a partition at a time (a day, or BULB_PARTITION_DAYS) by the workers' partitions job (SPEC §12, docs/partitioning.md). */
  eventRetentionDays: number;
  /** Days one time partition spans (docs/partitioning.md): 1, a partition a day; more, fewer partitions per statement. */
  partitionDays: number;
  /** Hours without a successful attempt, while attempts keep failing, before a subscription is disabled. */
  webhookDisableAfterHours: number;
  logLevel: string;
  rateLimitPerSec: number;
  rateLimitBurst: number;
  /** Failed authentications a client address may make (a second, burst) before its next lookups are refused 429. */
  authFailuresPerSec: number;
  authFailuresBurst: number;
  /** BULB_METRICS_PORT: a listener of its own for /metrics and /health (a worker's; undefined: none). */
  metricsPort: number | undefined;
  /** Fastify's trustProxy: whose X-Forwarded-For names the client address (false: the peer is the client). */
  trustProxy: boolean | number | string[];
  /** How long a resolved token may be answered from memory (0: never). */
  authCacheMs: number;
  bodyLimitBytes: number;
  /** BULB_SECRET_KEY: seals secrets at rest (SPEC §15). */
  secretKey: Buffer | undefined;
  /** BULB_SECRET_KEY_PREVIOUS: still opens values sealed before a key rotation. */
  secretKeyPrevious: Buffer | undefined;
  /** BULB_SECRET_KEYS_LOST: key ids declared lost for good; a start does not refuse for values sealed under them. */
  secretKeysLost: string[];
  allowPlaintextSecrets: boolean;
  /** How long after a merge it may be undone (SPEC §13). */
  unmergeWindowDays: number;
  /** Region for phone numbers written without a country code (ISO 3166 alpha-2, SPEC §14). */
  defaultPhoneRegion: string;
  /** Imports (SPEC §12): largest file accepted, line numbers applied per committed chunk, worker lease. */
  importMaxBytes: number;
  importChunkRows: number;
  importLeaseMs: number;
  /** An upload that sends nothing for this long is ended (failed). */
  importIdleMs: number;
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  // Decimal digits only: Number() also read 0x4707, 1e3 and " 80 " (PORT=0x4707 listened on 18183; a probe).
  const n = /^-?[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer in ${min}..${max}, got "${raw}"`);
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/** base64 of exactly 32 bytes; the value itself never appears in an error. */
function secretKey(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw) || key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== raw.replace(/=+$/, '')) {
    throw new ConfigError(`${name} must be the base64 of 32 random bytes (make one with: openssl rand -base64 32); the value given is not (${raw.length} characters)`);
  }
  return key;
}

/** Comma-separated key ids as a refusal names them (16 hex digits each). */
function keyIds(env: NodeJS.ProcessEnv, name: string): string[] {
  const ids = (env[name] ?? '').split(',').map((x) => x.trim().toLowerCase()).filter((x) => x !== '');
  const bad = ids.find((x) => !/^[0-9a-f]{16}$/.test(x));
  if (bad !== undefined) throw new ConfigError(`${name} must list key ids (16 hex digits each, as a refused start names them), comma-separated; "${bad.slice(0, 40)}" is not one`);
  return ids;
}

export function parseRetrySchedule(raw: string): number[] {
  const parts = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  // Decimal seconds only (fractions allowed): Number() also read 0x10 and 1e2 (found by a probe), as int() refuses.
  const out = parts.map((p) => (/^[0-9]+(\.[0-9]+)?$/.test(p) ? Number(p) : NaN));
  if (out.length === 0 || out.some((n) => !Number.isFinite(n) || n < 0 || n > 86400 * 7)) {
    throw new ConfigError(`BULB_WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds (0..604800), got "${raw}"`);
  }
  return out;
}

/**
 * A PostgreSQL connection URL (postgres:// or postgresql://), or undefined when unset. Anything else was tried for
 * BULB_DATABASE_WAIT_MS as "database not reachable" (found by probing, 2026-11-28). The value, which may hold a
 * password, is never repeated in the message.
 */
function postgresUrl(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let ok = false;
  try {
    const u = new URL(raw);
    ok = u.protocol === 'postgres:' || u.protocol === 'postgresql:';
  } catch { /* not a URL */ }
  if (!ok) throw new ConfigError(`${name} must be a PostgreSQL URL: postgres://user[:password]@host[:port]/database; the value given is not (${raw.length} characters)`);
  return raw;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], dflt: T): T {
  const raw = env[name] || dflt;
  if (!values.includes(raw as T)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

/**
 * BULB_ADMIN_KEY: at least 24 visible characters (a short or guessable value is found again from its stored SHA-256 by
 * a dictionary), and not shaped like Bulb's access tokens or client secrets, which are looked up elsewhere and would
 * never sign in.
 */
function adminKey(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!/^[\x21-\x7e]{24,512}$/.test(raw)) throw new ConfigError('BULB_ADMIN_KEY must be 24 to 512 visible ASCII characters without spaces (e.g. `openssl rand -hex 24`)');
  if (/^bulb_(at|cs)_/.test(raw)) throw new ConfigError('BULB_ADMIN_KEY must not start with bulb_at_ or bulb_cs_ (access tokens and client secrets): use any other value, e.g. `openssl rand -hex 24`');
  return raw;
}

function phoneRegion(raw: string): string {
  const r = raw.trim().toUpperCase();
  // A code libphonenumber knows (ZZ passed the shape, and every number without a country code then failed to parse).
  if (!/^[A-Z]{2}$/.test(r) || !isSupportedCountry(r)) throw new ConfigError(`BULB_DEFAULT_PHONE_REGION must be a two-letter country code with a phone numbering plan, got "${raw}"`);
  return r;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const role = (env.BULB_ROLE || 'all') as Role;
  if (!['api', 'worker', 'all'].includes(role)) throw new ConfigError(`BULB_ROLE must be api, worker or all, got "${role}"`);
  const serviceName = (env.BULB_SERVICE_NAME || 'tulip').toLowerCase();
  if (!/^[a-z][a-z0-9]{0,31}$/.test(serviceName)) throw new ConfigError(`BULB_SERVICE_NAME must be lowercase letters/digits, got "${serviceName}"`);
  return {
    port: int(env, 'PORT', 8080, 0, 65535),
    host: env.HOST || '127.0.0.1',
    databaseUrl: postgresUrl(env, 'DATABASE_URL'),
    databaseDirectUrl: postgresUrl(env, 'BULB_DATABASE_DIRECT_URL'),
    databasePreparedStatements: oneOf(env, 'BULB_DATABASE_PREPARED_STATEMENTS', ['auto', 'on', 'off'] as const, 'auto'),
    databaseStatementDeadlineMs: int(env, 'BULB_DATABASE_STATEMENT_DEADLINE_MS', 60_000, 0, 3_600_000),
    databaseWaitMs: int(env, 'BULB_DATABASE_WAIT_MS', 60_000, 0, 3_600_000),
    dataDir: env.BULB_DATA_DIR || './data',
    adminKey: adminKey(env.BULB_ADMIN_KEY),
    serviceName,
    role,
    webhookRetrySchedule: parseRetrySchedule(env.BULB_WEBHOOK_RETRY_SCHEDULE || '5,20,125'),
    webhookRetryUnitMs: int(env, 'BULB_WEBHOOK_RETRY_UNIT_MS', 1000, 1, 1000),
    webhookTimeoutMs: int(env, 'BULB_WEBHOOK_TIMEOUT_MS', 20000, 1, 600000),
    webhookAllowPrivate: bool(env, 'BULB_WEBHOOK_ALLOW_PRIVATE', false),
    webhookProxy: webhookProxy(env.BULB_WEBHOOK_PROXY),
    publicUrl: publicUrl(env.BULB_PUBLIC_URL),
    webhookRetentionDays: int(env, 'BULB_WEBHOOK_RETENTION_DAYS', 30, 1, 3650),
    eventRetentionDays: int(env, 'BULB_EVENT_RETENTION_DAYS', 30, 1, 3650),
    partitionDays: int(env, 'BULB_PARTITION_DAYS', 1, 1, 31),
    webhookDisableAfterHours: int(env, 'BULB_WEBHOOK_DISABLE_AFTER_HOURS', 120, 1, 87600),
    logLevel: oneOf(env, 'BULB_LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    rateLimitPerSec: int(env, 'BULB_RATE_LIMIT_PER_SEC', 100, 1, 10_000_000),
    rateLimitBurst: int(env, 'BULB_RATE_LIMIT_BURST', 200, 1, 10_000_000),
    authFailuresPerSec: int(env, 'BULB_AUTH_FAILURES_PER_SEC', 10, 1, 10_000_000),
    authFailuresBurst: int(env, 'BULB_AUTH_FAILURES_BURST', 100, 1, 10_000_000),
    trustProxy: trustProxy(env.BULB_TRUST_PROXY),
    metricsPort: env.BULB_METRICS_PORT ? int(env, 'BULB_METRICS_PORT', 0, 0, 65535) : undefined,
    authCacheMs: int(env, 'BULB_AUTH_CACHE_MS', 60_000, 0, 600_000),
    bodyLimitBytes: 1024 * 1024,
    secretKey: secretKey(env, 'BULB_SECRET_KEY'),
    secretKeyPrevious: secretKey(env, 'BULB_SECRET_KEY_PREVIOUS'),
    secretKeysLost: keyIds(env, 'BULB_SECRET_KEYS_LOST'),
    allowPlaintextSecrets: bool(env, 'BULB_ALLOW_PLAINTEXT_SECRETS', false),
    unmergeWindowDays: int(env, 'BULB_UNMERGE_WINDOW_DAYS', 30, 0, 36500),
    defaultPhoneRegion: phoneRegion(env.BULB_DEFAULT_PHONE_REGION || 'US'),
    importMaxBytes: int(env, 'BULB_IMPORT_MAX_BYTES', 2 * 1024 ** 3, 1, 2 * 1024 ** 3),
    importChunkRows: int(env, 'BULB_IMPORT_CHUNK_ROWS', 5000, 1, 100_000),
    importLeaseMs: int(env, 'BULB_IMPORT_LEASE_MS', 30_000, 1000, 3_600_000),
    importIdleMs: int(env, 'BULB_IMPORT_IDLE_MS', 60_000, 100, 3_600_000),
  };
}

/**
 * BULB_TRUST_PROXY: unset or false (the peer is the client), true (every proxy), a number of proxy hops, or the proxies'
 * addresses and CIDR ranges, comma-separated.
 */
function trustProxy(raw: string | undefined): boolean | number | string[] {
  const v = raw?.trim() ?? '';
  if (v === '' || /^(0|false|no|off)$/i.test(v)) return false;
  if (/^(true|yes|on)$/i.test(v)) return true;
  if (/^[1-9][0-9]?$/.test(v)) return Number(v);
  const parts = v.split(',').map((x) => x.trim()).filter((x) => x !== '');
  const bad = parts.find((x) => {
    const [addr, bits, extra] = x.split('/');
    const kind = isIP(addr);
    return kind === 0 || extra !== undefined || (bits !== undefined && !(/^[0-9]{1,3}$/.test(bits) && Number(bits) <= (kind === 4 ? 32 : 128)));
  });
  if (parts.length === 0 || bad !== undefined) {
    throw new ConfigError(`BULB_TRUST_PROXY must be true, false, a number of proxy hops (1..99) or addresses and CIDR ranges separated by commas, got "${v.slice(0, 200)}"`);
  }
  return parts;
}

function webhookProxy(raw: string | undefined): URL | null {
  if (!raw) return null;
  try {
    return parseProxyUrl(raw);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/** BULB_PUBLIC_URL: an http(s) URL without query, fragment or credentials; a path is a prefix (a proxy's). */
function publicUrl(raw: string | undefined): string | null {
  if (!raw) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    // The value is not repeated: a URL with a password in it is what the check below refuses (found by a probe).
    throw new ConfigError('BULB_PUBLIC_URL must be a URL such as https://api.example.com (the value given does not parse as one)');
  }
  if (!['http:', 'https:'].includes(u.protocol) || u.search || u.hash || u.username || u.password) {
    const what = u.username || u.password ? 'credentials' : !['http:', 'https:'].includes(u.protocol) ? `scheme ${u.protocol}` : u.search ? 'a query' : 'a fragment';
    throw new ConfigError(`BULB_PUBLIC_URL must be an http or https URL without query, fragment or credentials (the value given has ${what})`);
  }
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/** Service-name derived wire names (SPEC preamble). */
export function wireNames(serviceName: string) {
  const cap = serviceName.charAt(0).toUpperCase() + serviceName.slice(1);
  return {
    legacyPrefix: `/${serviceName}_api/v2`,
    hmacHeader: `X-${cap}-Hmac-256`,
    sourceApi: `${serviceName.toUpperCase()}_API`,
    sourceApp: `${serviceName.toUpperCase()}_APP`,
  };
}
