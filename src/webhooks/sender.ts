// Sends one webhook request with undici over the subscription's own keep-alive pool: one deadline for the
// whole exchange (from dispatch: the pool is as large as the lane's ceiling, so nothing waits for a socket),
// at most 4 KiB of the response kept, no redirects, Retry-After read, the address guard applied at connect time;
// the subscription's client certificate on its pool (mutual TLS), and every socket through BULB_WEBHOOK_PROXY when
// set (proxy.ts).
import { StringDecoder } from 'node:string_decoder';
import { Agent, type Dispatcher } from 'undici';
import { blockedReason, guardedLookup, isIpLiteral } from './address.ts';
import { connectUnanswered, ProxyError, proxyConnector, throughProxy, type ProxyConnector, type TunnelTls } from './proxy.ts';
import { memoize } from '../memo.ts';
import type { ErrorCode, SendResult } from './outcome.ts';
import type { Claimed } from './claimed.ts';


/** A subscription's mutual TLS: the client certificate (chain) and key it presents, and the CA it trusts instead of the public roots. */
export interface ClientTls {
  cert: string;
  key: string;
  ca: string | null;
}

/** A claimed subscription's mutual TLS, as its lane's pool or its broker publisher presents it (null: none). */
export function clientTlsOf(row: Pick<Claimed, 'tls_client_certificate' | 'tls_client_key' | 'tls_ca_certificate'>): ClientTls | null {
  return row.tls_client_certificate && row.tls_client_key
    ? { cert: row.tls_client_certificate, key: row.tls_client_key, ca: row.tls_ca_certificate }
    : null;
}


export const RESPONSE_KEEP_BYTES = 4096;

/**
 * How many informational (1xx) responses an exchange reads before its status: one more fails it as CONNECTION, the
 * connection dropped. A receiver writing `102 Processing` in a loop and never a status cost ~0.19 of a core for the whole
 * deadline (a probe), where an endless body is cut after RESPONSE_KEEP_BYTES. RFC 9110 allows several (103 Early Hints
 * may come more than once); none sends dozens.
 */
export const INFORMATIONAL_MAX = 10;

export interface SenderOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** BULB_WEBHOOK_PROXY: every connection is a CONNECT tunnel through it (null: direct). */
  proxy?: URL | null;
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

/** A failed TLS handshake or certificate check (node:tls, OpenSSL), for HTTPS receivers and TLS brokers alike. */
export function tlsFailure(err: any): boolean {
  return TLS_CODES.test(codeOf(err)) || /certificate|ssl|tls/i.test(String(err?.message ?? ''));
}

/** Maps a thrown error onto the SPEC's errorCodes. */
export function classify(err: any, timedOut: boolean): ErrorCode {
  const code = codeOf(err);
  if (code === 'EBLOCKEDADDRESS') return 'BLOCKED_ADDRESS';
  if (timedOut || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT') return 'TIMEOUT';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NONAME' || code === 'ENODATA') return 'DNS';
  if (tlsFailure(err)) return 'TLS';
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
  /** The host and port the URL names (as the proxy connector knows its tunnels). */
  host: string;
  port: number;
  /** Why the address is refused (an IP literal the guard blocks), or null. */
  blocked: string | null;
}

export class Sender {
  /** Parsed URLs, by URL (a handful per subscription over its life); null: not a URL. */
  private readonly target = memoize((url: string): Target | null => {
    try {
      const u = new URL(url);
      // net.connect skips the lookup for IP literals: check those here.
      const host = u.hostname;
      const reason = !this.opts.allowPrivate && isIpLiteral(host) ? blockedReason(host) : null;
      const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
      return { origin: u.origin, path: `${u.pathname}${u.search}`, host, port, blocked: reason ? `${host} is a ${reason} address: refused` : null };
    } catch {
      return null;
    }
  });

  /** The proxy connector of each pool (with BULB_WEBHOOK_PROXY): what an exchange timed out waiting for. */
  private readonly connectors = new WeakMap<Dispatcher, ProxyConnector>();

  constructor(private opts: SenderOptions) {}

  /**
   * A keep-alive pool for one subscription: `connections` sockets per origin, used by nobody else, presenting its
   * client certificate when it has one.
   */
  pool(connections: number, clientTls: ClientTls | null = null): Agent {
    const connect = this.connectOptions(clientTls);
    return this.withConnector(new Agent({
      connections,
      pipelining: 1,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 60_000,
      headersTimeout: this.opts.timeoutMs,
      bodyTimeout: this.opts.timeoutMs,
      connect,
    } as any), connect);
  }

  private withConnector(pool: Agent, connect: unknown): Agent {
    if (typeof connect === 'function') this.connectors.set(pool, connect as ProxyConnector);
    return pool;
  }

  /** How sockets are opened: directly with the guarded lookup, or through the proxy's CONNECT tunnel. */
  private connectOptions(clientTls: ClientTls | null): any {
    const t: TunnelTls = clientTls ? { cert: clientTls.cert, key: clientTls.key, ...(clientTls.ca ? { ca: clientTls.ca } : {}) } : {};
    if (this.opts.proxy) return proxyConnector(this.opts.proxy, { allowPrivate: this.opts.allowPrivate, timeoutMs: this.opts.timeoutMs, tls: t });
    return { timeout: this.opts.timeoutMs, lookup: guardedLookup(this.opts.allowPrivate), ...t };
  }

  private tokenAgent: Agent | undefined;

  /**
   * The pool OAuth2 token requests go through (every subscription's; no client certificate): the same address guard,
   * deadline and proxy as deliveries. Unbounded sockets per origin, so a hanging token endpoint holds no one else's.
   */
  tokenPool(): Agent {
    if (this.tokenAgent) return this.tokenAgent;
    const connect = this.connectOptions(null);
    return (this.tokenAgent = this.withConnector(new Agent({
      keepAliveTimeout: 4_000,
      headersTimeout: this.opts.timeoutMs,
      bodyTimeout: this.opts.timeoutMs,
      connect,
    } as any), connect));
  }

  /**
   * Through BULB_WEBHOOK_PROXY: the CONNECT target of a tunnel to this token URL that the proxy has not answered yet, if
   * any (what a token request that timed out was waiting for).
   */
  tokenProxyWait(url: string): string | undefined {
    const t = this.target(url);
    const connector = this.tokenAgent && this.connectors.get(this.tokenAgent);
    return t && connector ? connector.unanswered(t.host, t.port) : undefined;
  }

  /**
   * Why an OAuth2 token URL may not be used, or null: an invalid URL, an IP literal the guard blocks (net.connect skips
   * the lookup; `blocked`: the attempt is BLOCKED_ADDRESS, as for a receiver), and plain http unless private addresses are allowed (the rule
   * checkTokenUrl applies when it is written holds when it is used: one stored while they were allowed sent the client
   * secret in clear after the setting was turned off; found by a probe).
   */
  tokenRefusal(url: string): { reason: string; blocked: boolean } | null {
    const t = this.target(url);
    if (!t) return { reason: 'invalid URL', blocked: false };
    if (t.blocked) return { reason: t.blocked, blocked: true };
    if (this.opts.allowPrivate || url.slice(0, 6).toLowerCase() === 'https:') return null;
    return { reason: 'must use https (http only with BULB_WEBHOOK_ALLOW_PRIVATE=true): the client secret is not sent in clear', blocked: false };
  }

  async close(): Promise<void> {
    const a = this.tokenAgent;
    this.tokenAgent = undefined;
    await a?.close().catch(() => {});
  }

  /**
   * One POST through undici's dispatcher interface (no response stream: the first RESPONSE_KEEP_BYTES of the
   * body are kept, and the connection is dropped rather than drained beyond that).
   */
  /** timeoutMs: a shorter deadline for this exchange (what is left of an OAuth2 attempt's budget); the pool's still bounds it. */
  send(pool: Dispatcher, url: string, headers: Record<string, string>, body: string, abort?: Abort, clientCert = false, timeoutMs = this.opts.timeoutMs): Promise<SendResult> {
    const t0 = performance.now();
    const target = this.target(url);
    if (!target || target.blocked) {
      const responseBody = target ? target.blocked : 'invalid URL';
      const errorCode: ErrorCode = target ? 'BLOCKED_ADDRESS' : 'CONNECTION';
      return Promise.resolve({ ok: false, statusCode: null, errorCode, responseBody, retryAfterMs: null, durationMs: Math.round(performance.now() - t0) });
    }
    return new Promise<SendResult>((resolve) => {
      const connector = this.connectors.get(pool);
      const proxyWait = connector && (() => connector.unanswered(target.host, target.port));
      const x = new Exchange(resolve, t0, Math.min(timeoutMs, this.opts.timeoutMs), abort, clientCert, proxyWait);
      pool.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, x as any);
    });
  }
}

/**
 * One exchange, as undici's dispatch handler: one deadline for the whole of it, the status, Retry-After of a
 * 429/503 and the first RESPONSE_KEEP_BYTES of the body, settled once. (A class rather than closures: nothing is
 * allocated or named per request beyond this object.)
 */
class Exchange {
  private settled = false;
  private timedOut = false;
  private statusCode: number | null = null;
  private retryAfter: string | undefined;
  private chunks: Buffer[] = [];
  private n = 0;
  /** Informational (1xx) responses read so far. */
  private informational = 0;
  /** undici's abort for this request, once it has a socket (before that there is nothing to abort yet). */
  private abortFn: ((err?: Error) => void) | undefined;
  private pendingReason: Error | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly resolve: (r: SendResult) => void,
    private readonly t0: number,
    private readonly timeoutMs: number,
    private readonly abort: Abort | undefined,
    /** The pool presents a client certificate (mutual TLS). */
    private readonly clientCert = false,
    /** Through BULB_WEBHOOK_PROXY: the CONNECT target ("<ip>:<port>") of a tunnel to this exchange's target the proxy has not answered yet. */
    private readonly proxyWait?: () => string | undefined,
  ) {
    this.timer = setTimeout(onDeadline, timeoutMs, this);
    abort?.bind((reason) => this.abortNow(reason));
  }

  abortNow(reason: Error): void {
    if (this.abortFn) return this.abortFn(reason);
    // No socket yet (a connection or TLS handshake under way): the exchange ends now, as the deadline or the shutdown
    // says, not when the pool's connect timeout fires; the connection, if it comes, is dropped as it arrives.
    this.pendingReason ??= reason;
    this.onError(reason);
  }

  private settle(ok: boolean, errorCode: ErrorCode | null, responseBody: string | null, retryAfterMs: number | null = null): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.abort?.bind(undefined);
    this.resolve({ ok, statusCode: this.statusCode, errorCode, responseBody, retryAfterMs, durationMs: Math.round(performance.now() - this.t0) });
  }

  private complete(): void {
    const status = this.statusCode!;
    const ok = status >= 200 && status < 300;
    const ms = status === 429 || status === 503 ? parseRetryAfter(this.retryAfter) : null;
    const kept = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    // Cut at RESPONSE_KEEP_BYTES: a character the cut split is left out (the decoder keeps an incomplete one back),
    // not stored as U+FFFD, which the receiver never sent (found by a probe).
    const body = this.n >= RESPONSE_KEEP_BYTES ? new StringDecoder('utf8').write(kept) : kept.toString('utf8');
    this.settle(ok, ok ? null : 'HTTP_STATUS', body, ms);
  }

  onConnect(abortFn: (err?: Error) => void): void {
    this.abortFn = abortFn;
    if (this.pendingReason) abortFn(this.pendingReason);
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    if (status < 200) {
      // Informational: skipped, up to INFORMATIONAL_MAX (a flood of them ends the attempt, as an endless body is cut).
      if (++this.informational <= INFORMATIONAL_MAX) return true;
      const msg = `informational flood: more than ${INFORMATIONAL_MAX} informational (1xx) responses and no final status; the connection was dropped`;
      this.settle(false, 'CONNECTION', msg);
      this.abortNow(new Error(msg));
      return false;
    }
    this.statusCode = status;
    if (status === 429 || status === 503) {
      for (let i = 0; i < rawHeaders.length; i += 2) {
        if (rawHeaders[i].length === 11 && rawHeaders[i].toString('latin1').toLowerCase() === 'retry-after') {
          this.retryAfter = rawHeaders[i + 1].toString('latin1');
          break;
        }
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.n < RESPONSE_KEEP_BYTES) this.chunks.push(chunk.subarray(0, RESPONSE_KEEP_BYTES - this.n));
    this.n += chunk.length;
    if (this.n >= RESPONSE_KEEP_BYTES) {
      this.complete(); // enough kept: drop the connection instead of reading the rest
      this.abortNow(new Error('response body beyond the kept bytes'));
      return false;
    }
    return true;
  }

  onComplete(): void {
    this.complete();
  }

  onError(err: Error): void {
    // The status arrived, then the body did not end (the deadline, a reset): the status decides, as SPEC §7 says ("a 2xx
    // status arrives within the deadline"), with the body that came. A 2xx was a TIMEOUT or CONNECTION failure, sent
    // again, unless its body had passed the 4 KiB kept (found by probing, 2026-11-28).
    if (this.statusCode !== null) return this.complete();
    let errorCode = classify(err, this.timedOut);
    let msg = errorCode === 'TIMEOUT' ? this.timeoutMessage(err) : `${codeOf(err) || 'error'}: ${err?.message ?? err}`;
    if (errorCode === 'CONNECTION' && this.clientCert && this.statusCode === null && codeOf(err) === 'UND_ERR_SOCKET') {
      // TLS 1.3 checks the client certificate after the client's handshake ends: a receiver refusing it (Node, many
      // proxies) closes the connection with no alert and no answer, which is all the client sees.
      errorCode = 'TLS';
      msg += ': the receiver closed the connection without answering after a TLS handshake in which Bulb presented the subscription\'s client certificate (most often the receiver refusing that certificate: check tls.clientCertificate)';
    }
    this.settle(false, errorCode, msg.slice(0, RESPONSE_KEEP_BYTES));
  }

  /**
   * A timeout with no socket yet, while the proxy has not answered the CONNECT for it, is the proxy's, said as the broker
   * path says it (publisher.ts, tunnelStall): "no complete response" blamed the receiver, never reached (until 2026-11-30).
   */
  private timeoutMessage(err: any): string {
    if (!this.abortFn) {
      const waiting = this.proxyWait?.();
      if (waiting) return throughProxy(connectUnanswered(waiting, this.timeoutMs));
      // The connector's own deadline passed first (it says what it waited for).
      if (err instanceof ProxyError) return throughProxy(err.message);
    }
    return `no complete response within ${this.timeoutMs} ms`;
  }

  deadline(): void {
    this.timedOut = true;
    this.abortNow(new Error('deadline'));
  }
}

function onDeadline(x: Exchange): void {
  x.deadline();
}
