// Egress through an HTTP CONNECT proxy (BULB_WEBHOOK_PROXY, docs/receiver-auth.md): an undici connector that
// resolves the target itself through the address guard, asks the proxy to CONNECT to the checked IP address (so the
// proxy never resolves the name: no DNS-rebinding window), and speaks TLS through the tunnel with the target's name
// as SNI and for the certificate check (the Host header stays the URL's, undici writes it from the origin). Mutual
// TLS options (client certificate, key, CA) apply to that TLS session.
import net from 'node:net';
import tls from 'node:tls';
import type { buildConnector } from 'undici';
import { BlockedAddressError, blockedReason, guardedLookup, urlHost } from './address.ts';
import { redactCredentials } from './redact.ts';

export interface TunnelTls {
  cert?: string;
  key?: string;
  ca?: string;
}

/** Largest CONNECT answer head read (status line and headers). */
const MAX_HEAD = 16 * 1024;

/** A failure's message as an attempt's log shows it when it came of the proxy, not of the target. */
export const throughProxy = (why: string) => `through BULB_WEBHOOK_PROXY: ${why}`;

/** What a tunnel the proxy left unanswered past the deadline says (an HTTP attempt, a broker publish, a token request). */
export const connectUnanswered = (authority: string, timeoutMs: number) => `the proxy did not answer CONNECT ${authority} within ${timeoutMs} ms`;

export class ProxyError extends Error {
  constructor(message: string, readonly code = 'EPROXY') {
    super(message);
  }
}

/** The connector, and what it knows of the tunnels it is still asking the proxy for. */
export interface ProxyConnector extends buildConnector.connector {
  /**
   * For a target as the URL names it (host, port): the CONNECT target ("<ip>:<port>") of a tunnel to it that the proxy
   * has not answered yet (or not been reached for), if any. An exchange whose deadline passes while one is pending
   * timed out waiting for the proxy, not for the receiver (sender.ts).
   */
  unanswered(host: string, port: number): string | undefined;
}

/** The key of a target: its host without brackets, lower case, and its port. */
const targetKey = (host: string, port: number) => `${host.replace(/^\[|\]$/g, '').toLowerCase()}:${port}`;

/** Parses and checks BULB_WEBHOOK_PROXY: an http:// URL (a CONNECT proxy), optionally with user:password. */
export function parseProxyUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    // Its password, if any, is not repeated in the message (start logs are collected): a value with an "@" is not
    // shown at all (masks missed a password ended by a "/", a value without "//", a line break before the "@").
    throw new Error(`BULB_WEBHOOK_PROXY is not a URL: ${raw.includes('@') ? `${raw.length} characters, not shown (it may hold a password)` : `"${raw}"`}`);
  }
  // Decoded for the Proxy-Authorization header of every tunnel: bad percent-encoding refuses the start (each tunnel
  // threw, and an HTTP attempt crashed without an attempt row).
  try {
    decodeURIComponent(u.username);
    decodeURIComponent(u.password);
  } catch {
    throw new Error('BULB_WEBHOOK_PROXY: its user or password is not valid percent-encoding (write a "%" as %25)');
  }
  if (u.protocol !== 'http:') throw new Error(`BULB_WEBHOOK_PROXY must be an http:// URL of a CONNECT proxy, got "${u.protocol}"`);
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) throw new Error('BULB_WEBHOOK_PROXY must be scheme://[user:password@]host[:port] only');
  if (u.port === '0') throw new Error('BULB_WEBHOOK_PROXY must not name port 0 (nothing can be reached there)');
  return u;
}

function resolveTarget(host: string, allowPrivate: boolean, cb: (err: Error | null, ip: string) => void): void {
  if (net.isIP(host)) {
    const reason = allowPrivate ? undefined : blockedReason(host);
    return cb(reason ? new BlockedAddressError(host, host, reason) : null, host);
  }
  guardedLookup(allowPrivate)(host, { all: false }, (err, address) => cb(err, String(address)));
}

/**
 * The connector (undici's `connect` option) for every socket to a receiver or a token endpoint, and for a broker's
 * tunnel (tunnel.ts). `signal`: aborting it ends every tunnel still being asked for, its socket to the proxy closed (a
 * closed broker publisher's tunnel kept it until the proxy answered or the deadline passed).
 */
export function proxyConnector(proxy: URL, opts: { allowPrivate: boolean; timeoutMs: number; tls?: TunnelTls; signal?: AbortSignal }): ProxyConnector {
  const proxyPort = Number(proxy.port || 80);
  const user = decodeURIComponent(proxy.username);
  const password = decodeURIComponent(proxy.password);
  const proxyAuth = proxy.username ? `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` : null;
  // The proxy's own credentials, redacted from its answers (its status line goes into an attempt's error text, which
  // admins read in the logs API: a proxy that names the credentials it refused would show them).
  const own = password ? [password, `${user}:${password}`] : [];
  /** Tunnels asked of the proxy and not yet answered: the target's key and the CONNECT target. */
  const pending = new Set<{ key: string; authority: string }>();
  const connector = (o: buildConnector.Options, callback: buildConnector.Callback) => {
    const host = o.hostname.replace(/^\[|\]$/g, '');
    const secure = o.protocol === 'https:';
    const port = Number(o.port || (secure ? 443 : 80));
    let sock: net.Socket | undefined;
    let asked: { key: string; authority: string } | undefined;
    let done = false;
    const finish = (err: Error | null, s?: net.Socket) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (asked) pending.delete(asked);
      if (err) {
        sock?.destroy();
        callback(err, null);
      } else callback(null, s!);
    };
    // Named as the broker path names it (tunnelStall), once the CONNECT target is known.
    const timer = setTimeout(() => finish(new ProxyError(asked && pending.has(asked) ? connectUnanswered(asked.authority, opts.timeoutMs) : `no tunnel through the proxy within ${opts.timeoutMs} ms`, 'UND_ERR_CONNECT_TIMEOUT')), opts.timeoutMs);
    const onAbort = () => finish(new ProxyError('the tunnel was closed before the proxy answered'));
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort);
    resolveTarget(host, opts.allowPrivate, (err, ip) => {
      if (err) return finish(err);
      if (done) return;
      const authority = `${urlHost(ip)}:${port}`;
      asked = { key: targetKey(host, port), authority };
      pending.add(asked);
      sock = net.connect(proxyPort, proxy.hostname.replace(/^\[|\]$/g, ''));
      const s = sock;
      let head = Buffer.alloc(0);
      let tunnelled = false;
      // Until the proxy has answered, a socket error is the proxy's (its own address alone said "connect ECONNREFUSED
      // 127.0.0.1:3128", which read as the receiver's): named so, with its code kept for the attempt's errorCode.
      const onError = (e: Error) => finish(tunnelled ? e : new ProxyError(`could not reach the proxy (BULB_WEBHOOK_PROXY): ${e.message}`, (e as NodeJS.ErrnoException).code ?? 'EPROXY'));
      const onClose = () => finish(new ProxyError(`the proxy closed the connection before answering CONNECT ${authority}`));
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) {
          if (head.length > MAX_HEAD) finish(new ProxyError('the proxy sent an over-long answer to CONNECT'));
          return;
        }
        s.off('data', onData);
        s.off('close', onClose);
        pending.delete(asked!); // answered: what follows (a refusal, the TLS handshake) is no longer the proxy's wait
        const status = /^HTTP\/1\.[01] (\d{3})([^\r\n]*)/.exec(head.subarray(0, end).toString('latin1'));
        if (!status || status[1][0] !== '2') {
          return finish(new ProxyError(`the proxy refused CONNECT ${authority}: ${status ? redactCredentials(`${status[1]}${status[2]}`, own) : 'not an HTTP answer'}`));
        }
        tunnelled = true;
        const rest = head.subarray(end + 4);
        if (rest.length) s.unshift(rest);
        if (!secure) {
          s.off('error', onError);
          return finish(null, s);
        }
        const t = tls.connect({
          socket: s,
          host, // the name (or address) the certificate is checked against
          servername: net.isIP(host) ? undefined : host,
          ALPNProtocols: ['http/1.1'],
          ...(opts.tls ?? {}),
        });
        t.once('secureConnect', () => {
          s.off('error', onError);
          t.off('error', onError);
          finish(null, t);
        });
        t.once('error', onError);
      };
      s.on('error', onError);
      s.on('close', onClose);
      s.on('data', onData);
      s.once('connect', () => {
        s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${proxyAuth ? `Proxy-Authorization: ${proxyAuth}\r\n` : ''}\r\n`);
      });
    });
  };
  return Object.assign(connector, {
    unanswered(host: string, port: number): string | undefined {
      const key = targetKey(host, port);
      for (const p of pending) if (p.key === key) return p.authority;
      return undefined;
    },
  });
}
