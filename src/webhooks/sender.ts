// Sends one webhook request with undici: keep-alive pools, one deadline for the whole exchange, at most
// 4 KiB of the response kept, no redirects, and the address guard applied at connect time.
import { Agent, request } from 'undici';
import { blockedReason, guardedLookup, isIpLiteral } from './address.ts';

export type ErrorCode = 'TIMEOUT' | 'CONNECTION' | 'DNS' | 'TLS' | 'HTTP_STATUS' | 'BLOCKED_ADDRESS';

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  errorCode: ErrorCode | null;
  /** First 4 KiB of the response body (UTF-8, lossy), or an error description. */
  responseBody: string | null;
  durationMs: number;
}

export const RESPONSE_KEEP_BYTES = 4096;

export interface SenderOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Connections per origin. */
  connections?: number;
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
  private agent: Agent;
  constructor(private opts: SenderOptions) {
    this.agent = new Agent({
      connections: opts.connections ?? 64,
      pipelining: 1,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 60_000,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connect: { timeout: opts.timeoutMs, lookup: guardedLookup(opts.allowPrivate) as any },
    } as any);
  }

  async send(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<SendResult> {
    const t0 = performance.now();
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({ ...r, durationMs: Math.round(performance.now() - t0) });
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
      const res = await request(url, { method: 'POST', headers, body, dispatcher: this.agent, signal: ac.signal });
      statusCode = res.statusCode;
      const kept = await readCapped(res.body, RESPONSE_KEEP_BYTES);
      const ok = statusCode >= 200 && statusCode < 300;
      return done({ ok, statusCode, errorCode: ok ? null : 'HTTP_STATUS', responseBody: kept });
    } catch (err: any) {
      const errorCode = classify(err, timedOut);
      const msg = errorCode === 'TIMEOUT' ? `no complete response within ${this.opts.timeoutMs} ms` : `${codeOf(err) || 'error'}: ${err?.message ?? err}`;
      return done({ ok: false, statusCode, errorCode, responseBody: msg.slice(0, RESPONSE_KEEP_BYTES) });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onOuterAbort);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
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
