// Sends one webhook request with undici over the subscription's own keep-alive pool: one deadline for the
// whole exchange (from dispatch: the pool is as large as the lane's ceiling, so nothing waits for a socket),
// at most 4 KiB of the response kept, no redirects, Retry-After read, the address guard applied at connect time.
import { Agent, type Dispatcher } from 'undici';
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

/** Lets its owner end an exchange under way (shutdown): the attempt then settles as a CONNECTION error. */
export class Abort {
  reason: Error | undefined;
  private fn: ((reason: Error) => void) | undefined;

  abort(reason: Error): void {
    if (this.reason) return;
    this.reason = reason;
    this.fn?.(reason);
  }

  /** While an exchange runs: how to end it. */
  bind(fn: ((reason: Error) => void) | undefined): void {
    this.fn = fn;
    if (fn && this.reason) fn(this.reason);
  }
}

interface Target {
  origin: string;
  path: string;
  /** Why the address is refused (an IP literal the guard blocks), or null. */
  blocked: string | null;
}

/** Parsed URLs, by URL (a handful per subscription over its life; emptied when it grows large). */
const TARGETS_KEPT = 10_000;

export class Sender {
  private targets = new Map<string, Target | null>();

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

  private target(url: string): Target | null {
    let t = this.targets.get(url);
    if (t !== undefined) return t;
    try {
      const u = new URL(url);
      // net.connect skips the lookup for IP literals: check those here.
      const host = u.hostname;
      const reason = !this.opts.allowPrivate && isIpLiteral(host) ? blockedReason(host) : null;
      t = { origin: u.origin, path: `${u.pathname}${u.search}`, blocked: reason ? `${host} is a ${reason} address: refused` : null };
    } catch {
      t = null;
    }
    if (this.targets.size >= TARGETS_KEPT) this.targets.clear();
    this.targets.set(url, t);
    return t;
  }

  /**
   * One POST through undici's dispatcher interface (no response stream: the first RESPONSE_KEEP_BYTES of the
   * body are kept, and the connection is dropped rather than drained beyond that).
   */
  send(pool: Dispatcher, url: string, headers: Record<string, string>, body: string, abort?: Abort): Promise<SendResult> {
    const t0 = performance.now();
    const done = (r: Omit<SendResult, 'durationMs' | 'retryAfterMs'>, retryAfterMs: number | null = null): SendResult =>
      ({ ...r, retryAfterMs, durationMs: Math.round(performance.now() - t0) });
    const target = this.target(url);
    if (!target) return Promise.resolve(done({ ok: false, statusCode: null, errorCode: 'CONNECTION', responseBody: 'invalid URL' }));
    if (target.blocked) return Promise.resolve(done({ ok: false, statusCode: null, errorCode: 'BLOCKED_ADDRESS', responseBody: target.blocked }));
    const timeoutMs = this.opts.timeoutMs;
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      let timedOut = false;
      let statusCode: number | null = null;
      let retryAfter: string | undefined;
      const chunks: Buffer[] = [];
      let n = 0;
      // Before undici hands the request a socket there is nothing to abort yet: the reason waits for onConnect.
      let pendingReason: Error | undefined;
      let abortNow: (reason: Error) => void = (reason) => (pendingReason ??= reason);
      const settle = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        abort?.bind(undefined);
        resolve(r);
      };
      const fail = (err: any) => {
        const errorCode = classify(err, timedOut);
        const msg = errorCode === 'TIMEOUT' ? `no complete response within ${timeoutMs} ms` : `${codeOf(err) || 'error'}: ${err?.message ?? err}`;
        settle(done({ ok: false, statusCode, errorCode, responseBody: msg.slice(0, RESPONSE_KEEP_BYTES) }));
      };
      const complete = () => {
        const ok = statusCode! >= 200 && statusCode! < 300;
        const ms = statusCode === 429 || statusCode === 503 ? parseRetryAfter(retryAfter) : null;
        settle(done({ ok, statusCode, errorCode: ok ? null : 'HTTP_STATUS', responseBody: Buffer.concat(chunks).toString('utf8') }, ms));
      };
      const timer = setTimeout(() => {
        timedOut = true;
        abortNow(new Error('deadline'));
      }, timeoutMs);
      abort?.bind((reason) => abortNow(reason));
      pool.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, {
        onConnect(abortFn: (err?: Error) => void) {
          abortNow = abortFn;
          if (pendingReason) abortFn(pendingReason);
        },
        onHeaders(status: number, rawHeaders: Buffer[]) {
          if (status < 200) return true; // informational
          statusCode = status;
          if (status === 429 || status === 503) {
            for (let i = 0; i < rawHeaders.length; i += 2) {
              if (rawHeaders[i].length === 11 && rawHeaders[i].toString('latin1').toLowerCase() === 'retry-after') {
                retryAfter = rawHeaders[i + 1].toString('latin1');
                break;
              }
            }
          }
          return true;
        },
        onData(chunk: Buffer) {
          if (n < RESPONSE_KEEP_BYTES) chunks.push(chunk.subarray(0, RESPONSE_KEEP_BYTES - n));
          n += chunk.length;
          if (n >= RESPONSE_KEEP_BYTES) {
            complete(); // enough kept: drop the connection instead of reading the rest
            abortNow(new Error('response body beyond the kept bytes'));
            return false;
          }
          return true;
        },
        onComplete() {
          complete();
        },
        onError(err: Error) {
          fail(err);
        },
      } as any);
    });
  }
}
