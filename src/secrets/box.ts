// AES-256-GCM sealing of secret column values (SPEC §15): "v1:<keyid>:<nonce>:<ciphertext+tag>", a random
// 96-bit nonce per value, the key id (first 8 bytes of the key's SHA-256, hex) stored beside the ciphertext.
// A value stored in clear (plaintext mode) is "clear:<value>", so that no clear value is ever read as sealed
// (a credential may itself look like "v1:…"); anything else is clear text written by a Bulb before migration 035.
import crypto from 'node:crypto';

/** Strict shape of a sealed value; anything else in a secret column is clear text (CLEAR_PREFIX, or an older Bulb). */
export const SEALED_RE = /^v1:([0-9a-f]{16}):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22,})$/;
/** The same shape for SQL (`col ~ SEALED_SQL`). */
export const SEALED_SQL = '^v1:[0-9a-f]{16}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22,}$';

export const KEY_BYTES = 32;

/** What a clear value is stored behind in plaintext mode (BULB_ALLOW_PLAINTEXT_SECRETS): never mistaken for a sealed one. */
export const CLEAR_PREFIX = 'clear:';

/** A stored value that is not sealed, as clear text: behind CLEAR_PREFIX, or as written by a Bulb before migration 035. */
function clearText(stored: string): string {
  return stored.startsWith(CLEAR_PREFIX) ? stored.slice(CLEAR_PREFIX.length) : stored;
}

export function keyId(key: Buffer): string {
  return crypto.createHash('sha256').update(key).digest('hex').slice(0, 16);
}

export function isSealed(value: string): boolean {
  return SEALED_RE.test(value);
}

/** The key id a sealed value names (undefined for clear text). */
export function sealedKeyId(value: string): string | undefined {
  return SEALED_RE.exec(value)?.[1];
}

export class SecretError extends Error {}

/** Seals and opens secret values. `plaintext` boxes (BULB_ALLOW_PLAINTEXT_SECRETS) store values as given. */
export interface SecretBox {
  readonly plaintext: boolean;
  /** Key id new values are sealed under (undefined in plaintext mode). */
  readonly currentKeyId: string | undefined;
  /** Key ids this box can open. */
  readonly keyIds: string[];
  seal(clear: string): string;
  open(stored: string): string;
}

export class AesGcmBox implements SecretBox {
  readonly plaintext = false;
  readonly currentKeyId: string;
  private readonly keys = new Map<string, Buffer>();

  /** current: seals and opens; previous: opens only (key rotation). */
  constructor(private readonly current: Buffer, previous: Buffer[] = []) {
    for (const k of [current, ...previous]) {
      if (k.length !== KEY_BYTES) throw new SecretError(`a secret key must be ${KEY_BYTES} bytes`);
      this.keys.set(keyId(k), k);
    }
    this.currentKeyId = keyId(current);
  }

  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  seal(clear: string): string {
    const nonce = crypto.randomBytes(12);
    const c = crypto.createCipheriv('aes-256-gcm', this.current, nonce);
    const ct = Buffer.concat([c.update(clear, 'utf8'), c.final(), c.getAuthTag()]);
    return `v1:${this.currentKeyId}:${nonce.toString('base64url')}:${ct.toString('base64url')}`;
  }

  open(stored: string): string {
    const m = SEALED_RE.exec(stored);
    if (!m) return clearText(stored); // clear text (plaintext mode, or an older Bulb), sealed by the first start
    const key = this.keys.get(m[1]);
    if (!key) throw new SecretError(`a secret is sealed under key id ${m[1]}, which is neither BULB_SECRET_KEY nor BULB_SECRET_KEY_PREVIOUS`);
    const nonce = Buffer.from(m[2], 'base64url');
    const all = Buffer.from(m[3], 'base64url');
    const d = crypto.createDecipheriv('aes-256-gcm', key, nonce);
    d.setAuthTag(all.subarray(all.length - 16));
    try {
      return Buffer.concat([d.update(all.subarray(0, all.length - 16)), d.final()]).toString('utf8');
    } catch {
      throw new SecretError(`a secret sealed under key id ${m[1]} failed authentication (altered or truncated)`);
    }
  }
}

/**
 * BULB_ALLOW_PLAINTEXT_SECRETS=true with no key: values are stored in clear behind CLEAR_PREFIX (a credential shaped like
 * a sealed value stays clear text); a sealed value cannot be opened.
 */
export class PlaintextBox implements SecretBox {
  readonly plaintext = true;
  readonly currentKeyId = undefined;
  readonly keyIds: string[] = [];
  seal(clear: string): string {
    return CLEAR_PREFIX + clear;
  }
  open(stored: string): string {
    const kid = sealedKeyId(stored);
    if (kid) throw new SecretError(`a secret is sealed under key id ${kid} but no BULB_SECRET_KEY is set`);
    return clearText(stored);
  }
}
