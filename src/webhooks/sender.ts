// Sends one webhook request with undici over the subscription's own keep-alive pool: one deadline for the
// whole exchange (from dispatch: the pool is as large as the lane's ceiling, so nothing waits for a socket),
// at most 4 KiB of the response kept, no redirects, Retry-After read, the address guard applied at connect time.
import { Agent, request, type Dispatcher } from 'undici';
import { blockedReason, guardedLookup, isIpLiteral } from './address.ts';

export type ErrorCode = 'TIMEOUT' | 'CONNECTION' | 'DNS' | 'TLS' | 'HTTP_STATUS' | 'BLOCKED_ADDRESS';

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  errorCode: ErrorCode | null;
  /** First 4 KiB of the response body (UTF-8, lossy), or an error description. */
  responseBody: string | null;
  /** A 429/503 with a valid Retry-After: how long the receiver asks us to wait (ms, at most 1 h). */
  retryAfterMs: number | null;
  durationMs: number;
}

export const RESPONSE_KEEP_BYTES = 4096;

export interface SenderOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

export const RETRY_AFTER_CAP_MS = 3_600_000;

/** Retry-After (delay-seconds or an HTTP date) in ms from `now`, capped at 1 h; null when absent or invalid. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return null;
  let ms: number;
  if (/^\d+$/.test(v)) ms = Number(v) * 1000;
  else {
    const at = Date.parse(v);
    if (Number.isNaN(at) || !/\d{1,2}:\d{2}:\d{2}/.test(v)) return null; // an HTTP date always has a time
    ms = at - now;
  }
  return Math.min(RETRY_AFTER_CAP_MS, Math.max(0, Math.round(ms)));
}

const TLS_CODES = /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH|ERR_OSSL)/;

function codeOf(err: any): string {
  for (let e = err, i = 0; e && i < 5; e = e.cause, i++) if (typeof e.code === 'string') return e.code;
  return '';
}

/** Maps a thrown error onto the SPEC's errorCodes. */
export function classify(err: any, timedOut: boolean): ErrorCode {
  const code = codeOf(err);
  if (code === 'EBLOCKEDADDRESS') return 'BLOCKED_ADDRESS';
  if (timedOut || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT') return 'TIMEOUT';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NONAME' || code === 'ENODATA') return 'DNS';
  if (TLS_CODES.test(code) || /certificate|ssl|tls/i.test(String(err?.message ?? ''))) return 'TLS';
  return 'CONNECTION';
}

export class Sender {
  constructor(private opts: SenderOptions) {}

  /** A keep-alive pool for one subscription: `connections` sockets per origin, used by nobody else. */
  pool(connections: number): Agent {
    return new Agent({
      connections,
      pipelining: 1,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 60_000,
      headersTimeout: this.opts.timeoutMs,
      bodyTimeout: this.opts.timeoutMs,
      connect: { timeout: this.opts.timeoutMs, lookup: guardedLookup(this.opts.allowPrivate) as any },
    } as any);
  }

  async send(pool: Dispatcher, url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<SendResult> {
    const t0 = performance.now();
    const done = (r: Omit<SendResult, 'durationMs' | 'retryAfterMs'>, retryAfterMs: number | null = null): SendResult =>
      ({ ...r, retryAfterMs, durationMs: Math.round(performance.now() - t0) });
    let host: string;
    try {
      host = new URL(url).hostname;
    } catch {
      return done({ ok: false, statusCode: null, errorCode: 'CONNECTION', responseBody: 'invalid URL' });
    }
    // net.connect skips the lookup for IP literals: check those here.
    if (!this.opts.allowPrivate && isIpLiteral(host)) {
      const reason = blockedReason(host);
      if (reason) return done({ ok: false, statusCode: null, errorCode: 'BLOCKED_ADDRESS', responseBody: `${host} is a ${reason} address: refused` });
    }
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new Error('deadline'));
    }, this.opts.timeoutMs);
    const onOuterAbort = () => ac.abort(signal!.reason);
    signal?.addEventListener('abort', onOuterAbort, { once: true });
    let statusCode: number | null = null;
    try {
      const res = await request(url, { method: 'POST', headers, body, dispatcher: pool, signal: ac.signal });
      statusCode = res.statusCode;
      const kept = await readCapped(res.body, RESPONSE_KEEP_BYTES);
      const ok = statusCode >= 200 && statusCode < 300;
      const retryAfter = statusCode === 429 || statusCode === 503 ? parseRetryAfter(res.headers['retry-after']) : null;
      return done({ ok, statusCode, errorCode: ok ? null : 'HTTP_STATUS', responseBody: kept }, retryAfter);
    } catch (err: any) {
      const errorCode = classify(err, timedOut);
      const msg = errorCode === 'TIMEOUT' ? `no complete response within ${this.opts.timeoutMs} ms` : `${codeOf(err) || 'error'}: ${err?.message ?? err}`;
      return done({ ok: false, statusCode, errorCode, responseBody: msg.slice(0, RESPONSE_KEEP_BYTES) });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onOuterAbort);
    }
  }

}

/** Reads up to `max` bytes; beyond that the stream is destroyed (the connection is dropped, not drained). */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(err?: Error): void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    if (n < max) chunks.push(chunk.subarray(0, max - n));
    n += chunk.length;
    if (n >= max) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}
