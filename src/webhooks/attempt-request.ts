// What an attempt row holds of its request, and the request rebuilt from it for the logs API (docs/delivery.md,
// "What an attempt row holds"). A request's body is its event's (eventBody), and its logged headers are its
// subscription's sending config (a version: URL, webhookVersion, the hex HMAC header's name, the constant headers,
// credentials redacted) plus four values of the attempt: the hex HMAC, webhook-id (the event's uuid),
// webhook-timestamp and webhook-signature. The row keeps the signatures as bytes and the timestamp as its distance
// from the attempt's start second; anything that would not rebuild exactly is stored whole instead.
import crypto from 'node:crypto';
import { eventBody } from './request.ts';

/** The headers an attempt signs, which no version holds. */
const SIGNED = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/** A subscription's sending config as one request used it: immutable, stored once (webhook_subscription_versions). */
export interface SendingConfig {
  subscriptionId: string;
  url: string;
  webhookVersion: string;
  hmacHeader: string;
  headers: Record<string, string>;
}

/** What identifies a config's content (the unique key with its subscription). */
export function digestOf(c: SendingConfig): string {
  const headers = Object.entries(c.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return crypto.createHash('sha256').update(JSON.stringify([c.url, c.webhookVersion, c.hmacHeader, headers])).digest('base64url');
}

/** An attempt's own part of its request: the signatures (hex; null: nothing signed, no headers) and the timestamp's skew (s). */
export interface SignedPart {
  signatures: string | null;
  timestampSkew: number | null;
}

/** The event fields and subscription uuid the body is built from (request.ts eventBody). */
export type BodySource = Parameters<typeof eventBody>[0];

/**
 * The lean form of a request as logged: its config and its signed part, or null when those would not rebuild it
 * exactly (then the attempt stores the request whole, as before migration 051).
 */
export function leanRequest(
  logHeaders: Record<string, string>, body: string, src: BodySource, sub: { subscriptionId: string; url: string; webhookVersion: string },
  hmacHeader: string, startedAtMs: number,
): { config: SendingConfig; signed: SignedPart } | null {
  const headers = { ...logHeaders };
  let signed: SignedPart = { signatures: null, timestampSkew: null };
  if (Object.keys(logHeaders).length > 0) {
    const hex = logHeaders[hmacHeader];
    const sigs = (logHeaders['webhook-signature'] ?? '').split(' ').map((s) => (s.startsWith('v1,') ? Buffer.from(s.slice(3), 'base64') : Buffer.alloc(0)));
    const ts = Number(logHeaders['webhook-timestamp']);
    if (hex === undefined || !/^[0-9a-f]{64}$/.test(hex) || sigs.some((s) => s.length !== 32) || !Number.isSafeInteger(ts)) return null;
    const skew = ts - Math.floor(startedAtMs / 1000);
    signed = { signatures: hex + Buffer.concat(sigs).toString('hex'), timestampSkew: skew === 0 ? null : skew };
    delete headers[hmacHeader];
    for (const h of SIGNED) delete headers[h];
  }
  const config: SendingConfig = { subscriptionId: sub.subscriptionId, url: sub.url, webhookVersion: sub.webhookVersion, hmacHeader, headers };
  const startSecond = Math.floor(startedAtMs / 1000);
  if (body !== eventBody(src) || !sameHeaders(headersOf(config, signed, src.event_uuid, startSecond), logHeaders)) return null;
  return { config, signed };
}

/**
 * The lean form of requests buildRequest made (request.ts: their signed part given as bytes), per subscription: whether
 * a config rebuilds its requests exactly is checked by leanRequest once, on the first request of that config (its URL,
 * webhookVersion, hex HMAC header and logged headers other than the signed ones), and the config kept for the next
 * ones, instead of parsing each request's signatures back and rebuilding its body and headers to compare. What a
 * request adds to its config (webhook-id, the timestamp, the signatures) is made by buildRequest in the form the
 * rebuild reads, so a config that rebuilt one request rebuilds them all. A config that did not is checked again each
 * time (its requests are stored whole).
 */
export class LeanConfigs {
  private readonly kept = new Map<string, { shape: string; config: SendingConfig }>();

  of(
    logHeaders: Record<string, string>, body: string, src: BodySource, sub: { subscriptionId: string; url: string; webhookVersion: string },
    hmacHeader: string, startedAtMs: number, signed: { signatures: string; timestamp: number } | undefined,
  ): { config: SendingConfig; signed: SignedPart } | null {
    if (signed === undefined) return leanRequest(logHeaders, body, src, sub, hmacHeader, startedAtMs);
    let shape = `${sub.url}\u0000${sub.webhookVersion}\u0000${hmacHeader}`;
    for (const k in logHeaders) {
      if (k !== hmacHeader && k !== 'webhook-id' && k !== 'webhook-timestamp' && k !== 'webhook-signature') shape += `\u0000${k}\u0000${logHeaders[k]}`;
    }
    const k = this.kept.get(sub.subscriptionId);
    if (k !== undefined && k.shape === shape) {
      const skew = signed.timestamp - Math.floor(startedAtMs / 1000);
      return { config: k.config, signed: { signatures: signed.signatures, timestampSkew: skew === 0 ? null : skew } };
    }
    const lean = leanRequest(logHeaders, body, src, sub, hmacHeader, startedAtMs);
    if (lean !== null) {
      if (this.kept.size >= 10_000) this.kept.clear();
      this.kept.set(sub.subscriptionId, { shape, config: lean.config });
    }
    return lean;
  }
}

/** The logged request of a lean attempt: its body, and its headers in the order jsonb gave them (before migration 051). */
export function rebuildRequest(config: Pick<SendingConfig, 'hmacHeader' | 'headers'>, signed: SignedPart, src: BodySource, startSecond: number): {
  headers: Record<string, string>; body: string;
} {
  return { headers: jsonbOrder(headersOf(config, signed, src.event_uuid, startSecond)), body: eventBody(src) };
}

/** The headers of a lean attempt, in no particular order. */
function headersOf(config: Pick<SendingConfig, 'hmacHeader' | 'headers'>, signed: SignedPart, eventUuid: string, startSecond: number): Record<string, string> {
  if (signed.signatures === null) return {};
  const bytes = Buffer.from(signed.signatures, 'hex');
  const sigs: string[] = [];
  for (let i = 32; i < bytes.length; i += 32) sigs.push(`v1,${bytes.toString('base64', i, i + 32)}`);
  return {
    ...config.headers,
    [config.hmacHeader]: bytes.toString('hex', 0, 32),
    'webhook-id': eventUuid,
    'webhook-timestamp': String(startSecond + (signed.timestampSkew ?? 0)),
    'webhook-signature': sigs.join(' '),
  };
}

/** The object's keys as jsonb orders them: shorter (in bytes) first, then by their bytes. */
export function jsonbOrder(o: Record<string, string>): Record<string, string> {
  const keys = Object.keys(o).map((k) => Buffer.from(k));
  keys.sort((x, y) => x.length - y.length || Buffer.compare(x, y));
  const out: Record<string, string> = {};
  for (const k of keys) {
    const key = k.toString();
    out[key] = o[key];
  }
  return out;
}

function sameHeaders(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
