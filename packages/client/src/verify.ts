// '@bulb/client/verify': checks that a webhook request came from Bulb, over the raw body bytes, then returns the
// parsed event. Two signatures (SPEC §7, §16):
//  - Standard Webhooks: webhook-signature = space-separated "v1,<base64 HMAC-SHA256 of '{id}.{timestamp}.{body}'>",
//    one per valid secret during a rotation, keyed with the base64-decoded part after "whsec_"; webhook-timestamp
//    must be within the tolerance of now (no replay of old requests);
//  - X-{Service}-Hmac-256 (e.g. X-Tulip-Hmac-256): lowercase hex HMAC-SHA256 of the body keyed with the signing
//    secret string exactly as shown (the UTF-8 bytes of the whole "whsec_…"), as docs.tulip.com describes it.
// Synchronous and dependency-free: HMAC-SHA256 in plain TypeScript (./hmac-sha256.ts); the runtime needs only
// TextEncoder, TextDecoder, atob and btoa (Node 16+, browsers, Deno, Bun, workers). No Node types at compile time.
import { hmacSha256 } from './hmac-sha256.js';

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

export interface VerifyOptions {
  /** Largest accepted distance between webhook-timestamp and now, in seconds (default 300). */
  toleranceSec?: number;
  /** "Now" in unix seconds (tests). */
  nowSec?: number;
}

/** The body of every Bulb webhook. */
export interface WebhookEvent {
  uuid: string;
  subscription: string;
  createdAt: string;
  eventType: string;
  resourceType: string;
  resource: { uuid: string; externalId: string | null };
  source: string;
}

/** A Fetch `Headers` object, or a plain record such as Node's `req.headers` (names in any case). */
export type WebhookHeaders =
  | { get(name: string): string | null; forEach(cb: (value: string, name: string) => void): void }
  | Readonly<Record<string, string | readonly string[] | undefined | null>>;

// The few runtime globals used, typed here so that no lib beyond ES2022 is needed.
interface Codecs {
  TextEncoder: new () => { encode(s: string): Uint8Array };
  TextDecoder: new (label: string, opts: { fatal: boolean }) => { decode(b: Uint8Array): string };
  atob(s: string): string;
  btoa(s: string): string;
}
const g = globalThis as unknown as Codecs;
const SECRET_PREFIX = 'whsec_';

/** Header values by lowercase name (the first value of a repeated header). */
function headerMap(h: WebhookHeaders): Map<string, string> {
  const out = new Map<string, string>();
  if (typeof h.get === 'function' && typeof h.forEach === 'function') {
    (h as Extract<WebhookHeaders, { get: unknown }>).forEach((v, k) => out.set(k.toLowerCase(), v));
    return out;
  }
  for (const [k, v] of Object.entries(h as Record<string, string | readonly string[] | undefined | null>)) {
    const value = typeof v === 'string' ? v : v?.[0];
    if (value !== undefined && !out.has(k.toLowerCase())) out.set(k.toLowerCase(), value);
  }
  return out;
}

/**
 * The body's bytes; anything else (an array of chunks not concatenated, a parsed object) is a TypeError, a setup
 * mistake: an ArrayBuffer was a RangeError from deep inside, and an array of chunks read as a forged request.
 */
function bytesOf(raw: unknown): Uint8Array {
  if (typeof raw === 'string') return utf8(raw);
  if (raw instanceof Uint8Array) return raw;
  if (raw instanceof ArrayBuffer) return new Uint8Array(raw);
  if (ArrayBuffer.isView(raw)) return new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  throw new TypeError('rawBody: expected the body as received, as a string, a Buffer or Uint8Array, or an ArrayBuffer (concatenate chunks first)');
}

function utf8(s: string): Uint8Array {
  return new g.TextEncoder().encode(s);
}

function base64(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return g.btoa(bin);
}

function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += (b < 16 ? '0' : '') + b.toString(16);
  return s;
}

/**
 * The Standard Webhooks key: base64-decode of what follows whsec_. Strict: atob would skip whitespace (a secret
 * pasted with a newline), and the hex header is keyed with the string as given, so such a secret would pass one
 * check and fail the other with a message pointing away from the cause; an empty key is no key.
 */
function standardKey(secret: string): Uint8Array {
  const b64 = secret.slice(SECRET_PREFIX.length);
  let bin = '';
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) {
    try {
      bin = g.atob(b64);
    } catch {
      bin = '';
    }
  }
  if (!bin) throw new TypeError('signing secret: expected "whsec_" followed by base64, as Bulb shows it');
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** A finite number ≥ 0 or undefined: NaN would make the timestamp check pass whatever the timestamp. */
function finiteOption(name: string, v: number | undefined): void {
  if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) throw new TypeError(`${name}: expected a finite number ≥ 0`);
}

/** Equal strings, in time independent of where they differ. */
function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Throws WebhookVerificationError unless the request was signed with `secret` (or one of `secrets`, e.g. the new
 * and the old one during a rotation) within the tolerance; returns the parsed event. `rawBody` must be the body
 * exactly as received (a Buffer is a Uint8Array; `await request.arrayBuffer()`'s ArrayBuffer, or any view of the bytes,
 * will do); `secret` is the signing secret as Bulb shows it ("whsec_…").
 */
export function verifyWebhook(rawBody: string | Uint8Array | ArrayBuffer | ArrayBufferView, headers: WebhookHeaders, secret: string | readonly string[], opts: VerifyOptions = {}): WebhookEvent {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (!secrets.length) throw new TypeError('no signing secret given');
  for (const s of secrets) if (typeof s !== 'string' || !s.startsWith(SECRET_PREFIX)) throw new TypeError('signing secret: expected "whsec_…" as Bulb shows it');
  // Setup mistakes are TypeErrors whatever the request: checked before anything is read from it.
  const keys = secrets.map(standardKey);
  finiteOption('toleranceSec', opts.toleranceSec);
  finiteOption('nowSec', opts.nowSec);
  const body = bytesOf(rawBody);
  const h = headerMap(headers);
  const id = h.get('webhook-id');
  const ts = h.get('webhook-timestamp');
  const sigs = h.get('webhook-signature');
  if (!id || !ts || !sigs) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  if (!/^\d{1,12}$/.test(ts)) throw new WebhookVerificationError('invalid webhook-timestamp');
  const now = opts.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(ts)) > (opts.toleranceSec ?? 300)) throw new WebhookVerificationError('webhook-timestamp outside the tolerance');

  const offered = sigs.split(' ').filter((s) => s.startsWith('v1,')).map((s) => s.slice(3));
  const signedPrefix = utf8(`${id}.${ts}.`);
  const standardOk = keys.some((key) => {
    const mine = base64(hmacSha256(key, signedPrefix, body));
    return offered.some((o) => same(o, mine));
  });
  if (!standardOk) throw new WebhookVerificationError('no matching webhook-signature');

  // The hex header is keyed with the oldest still-valid secret (SPEC §7): during a rotation (several v1
  // signatures) a receiver that already holds only the new secret cannot check it, and needs not: the
  // Standard Webhooks signature above already authenticated the body. With one signature it must match.
  const hexName = [...h.keys()].find((n) => /^x-[a-z0-9]+-hmac-256$/.test(n));
  if (hexName && offered.length <= 1) {
    const got = h.get(hexName) ?? '';
    if (!secrets.some((s) => same(got, hex(hmacSha256(utf8(s), body))))) throw new WebhookVerificationError(`${hexName} does not match`);
  }

  let text: string;
  try {
    text = typeof rawBody === 'string' ? rawBody : new g.TextDecoder('utf-8', { fatal: true }).decode(body);
    return JSON.parse(text) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('body is not JSON');
  }
}
