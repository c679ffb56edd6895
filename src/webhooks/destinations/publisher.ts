// What a broker publisher (amqp.ts, nats.ts) offers the registry, the outcomes of a publish and their errorCodes,
// and the address guard for broker hosts (the same rule as HTTP: SPEC §7, unless BULB_WEBHOOK_ALLOW_PRIVATE).
import dns from 'node:dns';
import net from 'node:net';
import tls from 'node:tls';
import { blockedReason, BlockedAddressError, isIpLiteral, parseLegacyIPv4 } from '../address.ts';
import { tlsFailure, type ClientTls } from '../sender.ts';
import type { BrokerErrorCode } from '../outcome.ts';
import { openTunnel, type Tunnel } from './tunnel.ts';
import { connectUnanswered, throughProxy } from '../proxy.ts';


/** One event for one subscription: the exact body of an HTTP delivery and its headers (as message headers). */
export interface BrokerMessage {
  /** The event uuid (webhook-id): the message id, by which a JetStream stream drops a duplicate publish. */
  id: string;
  body: string;
  headers: Record<string, string>;
}

export type PublishOutcome = { ok: true } | { ok: false; errorCode: BrokerErrorCode | 'BLOCKED_ADDRESS' | 'TLS'; message: string };

export const OK: PublishOutcome = { ok: true };

export function failure(errorCode: BrokerErrorCode | 'BLOCKED_ADDRESS' | 'TLS', message: string): PublishOutcome {
  return { ok: false, errorCode, message };
}

/** One subscription's connection to its broker: opened on the first publish, used by nobody else. */
export interface Publisher {
  /** Resolves (never rejects) once the broker confirmed or refused, or the connection failed. */
  publish(msg: BrokerMessage): Promise<PublishOutcome>;
  /** The connection is gone or unusable: the registry opens a new publisher for the next attempt. */
  readonly broken: boolean;
  /** What a publish that missed its deadline came to, when the publisher knows better than "no confirm" (tunnelStall). */
  stalled?(): PublishOutcome | undefined;
  close(): Promise<void>;
}

export interface PublisherOptions {
  /** BULB_WEBHOOK_TIMEOUT_MS: bounds a connection's opening (and the registry bounds each publish with it). */
  timeoutMs: number;
  allowPrivate: boolean;
  /** A name the broker shows for the connection (its management UI), e.g. "bulb subscription <uuid>". */
  name: string;
  /** The subscription's uuid: with the event's, a JetStream message id (nats.ts). */
  subscription: string;
  /** The subscription's mutual TLS (`tls`, docs/receiver-auth.md): the client certificate and key presented, and the CA trusted. */
  tls?: ClientTls;
  /** BULB_WEBHOOK_PROXY: connections go through this CONNECT proxy (tunnel.ts). */
  proxy?: URL | null;
}

/**
 * The options node:tls takes for a broker's TLS: the broker's certificate checked for the URL's host `name` (the
 * client dials the checked address, or a loopback tunnel), sent as SNI when it is a name; with the subscription's
 * mutual TLS, its client certificate and key, and its CA trusted in place of the public roots.
 */
export function tlsOptions(mutual: ClientTls | undefined, name: string): tls.ConnectionOptions {
  return {
    ...(isIpLiteral(name) ? {} : { servername: name }),
    checkServerIdentity: (_dialled, cert) => tls.checkServerIdentity(name, cert),
    ...(mutual ? { cert: mutual.cert, key: mutual.key, ...(mutual.ca ? { ca: mutual.ca } : {}) } : {}),
  };
}

/**
 * Where a broker client dials for `host:port`: the address the guard checked (throws BlockedAddressError), or, with
 * BULB_WEBHOOK_PROXY, a loopback tunnel to it through the proxy.
 */
export async function dialFor(host: string, port: number, opts: PublisherOptions): Promise<Dial> {
  return dialTo(await guardedAddress(host, opts.allowPrivate), port, opts);
}

export interface Dial {
  host: string;
  port: number;
  tunnel?: Tunnel;
}

/** Where a broker client dials for an address the guard checked: it, or a new loopback tunnel to it (one connection each). */
export async function dialTo(address: string, port: number, opts: PublisherOptions): Promise<Dial> {
  if (!opts.proxy) return { host: address, port };
  const tunnel = await openTunnel(opts.proxy, address, port, opts);
  return { host: '127.0.0.1', port: tunnel.port, tunnel };
}

/** A connection that could not open because its tunnel through the proxy failed: unreachable (or a timeout), saying why. */
export function tunnelFailure(tunnel: Tunnel | undefined): PublishOutcome | undefined {
  const err = tunnel?.failure;
  if (!err) return undefined;
  if (err.code === 'EBLOCKEDADDRESS') return failure('BLOCKED_ADDRESS', String(err.message));
  return failure(err.code === 'UND_ERR_CONNECT_TIMEOUT' ? 'BROKER_TIMEOUT' : 'BROKER_UNREACHABLE', throughProxy(err.message));
}

/**
 * A deadline passed while the tunnel still waited for the proxy: the proxy's timeout (BROKER_TIMEOUT, as TIMEOUT is for
 * an HTTP delivery through a hanging proxy) saying so, not "no confirm from the broker", which was never reached.
 */
export function tunnelStall(tunnel: Tunnel | undefined, timeoutMs: number): PublishOutcome | undefined {
  if (!tunnel?.waiting) return undefined;
  return failure('BROKER_TIMEOUT', throughProxy(connectUnanswered(tunnel.waiting, timeoutMs)));
}

const UNREACHABLE = /^(ECONNREFUSED|ECONNRESET|ECONNABORTED|EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN|EPIPE|ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME|ENODATA)$/;

/** The errorCode of a failure to connect or of a lost connection, from a socket error. */
export function socketFailure(err: any, fallback: BrokerErrorCode = 'BROKER_UNREACHABLE'): PublishOutcome {
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = `${code ? `${code}: ` : ''}${err?.message ?? err}`;
  if (code === 'EBLOCKEDADDRESS') return failure('BLOCKED_ADDRESS', String(err.message));
  if (tlsFailure(err)) return failure('TLS', message);
  if (code === 'ETIMEDOUT' || /ETIMEDOUT|timed? ?out/i.test(String(err?.message))) return failure('BROKER_TIMEOUT', message);
  if (UNREACHABLE.test(code)) return failure('BROKER_UNREACHABLE', message);
  return failure(fallback, message);
}

/**
 * A connection opening with the subscription's client certificate that the broker closed before its own handshake
 * (ECONNRESET, amqplib's "Socket closed abruptly"): TLS 1.3 checks the client certificate after the client's
 * handshake ends, and a broker (or TLS endpoint) refusing it closes the connection without an alert, which is all the
 * client sees. Reported as TLS with that explanation, as the HTTPS sender does (sender.ts); undefined otherwise.
 */
export function refusedCertificate(mutual: ClientTls | undefined, err: any): PublishOutcome | undefined {
  const message = String(err?.message ?? err);
  if (!mutual || !(err?.code === 'ECONNRESET' || /closed abruptly|socket hang up|ECONNRESET/i.test(message))) return undefined;
  return failure('TLS', `${message}: the broker closed the connection during its opening after a TLS handshake in which Bulb presented the subscription's client certificate (most often the broker refusing that certificate: check tls.clientCertificate)`);
}

/**
 * The address to connect to for a broker host: an IP literal the guard allows, or the first address of a name whose
 * every address it allows (connecting to the address checked, not to a second lookup). Throws BlockedAddressError.
 */
export async function guardedAddress(host: string, allowPrivate: boolean): Promise<string> {
  const h = host.replace(/^\[|\]$/g, '');
  if (isIpLiteral(h)) {
    const reason = allowPrivate ? undefined : blockedReason(h);
    if (reason) throw new BlockedAddressError(host, h, reason);
    // The address as checked, dotted: a legacy form ("1.0x", "0x7f.1") given to the client as written was looked up
    // again by the system resolver, which reads such forms otherwise (or as a name: DNS), past the guard (a probe,
    // 2026-11-29: "1.0x" checked as 1.0.0.0 and dialled as whatever a DNS answer said).
    return net.isIP(h) !== 0 ? h : parseLegacyIPv4(h)!;
  }
  const all = await dns.promises.lookup(h, { all: true });
  if (!allowPrivate) {
    for (const a of all) {
      const reason = blockedReason(a.address);
      if (reason) throw new BlockedAddressError(host, a.address, reason);
    }
  }
  return all[0].address;
}

/** How long a publisher's close may wait for the broker's goodbye before the socket is simply dropped. */
export const CLOSE_WAIT_MS = 1_000;

/** `close` bounded by CLOSE_WAIT_MS: resolves false when it did not finish in time (the caller then drops the socket). */
export async function closeWithin(close: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    close().then(() => true, () => true),
    new Promise<boolean>((r) => (timer = setTimeout(r, CLOSE_WAIT_MS, false))),
  ]);
  clearTimeout(timer);
  return done;
}

/** What a connection's opening came to, waiting at most CLOSE_WAIT_MS for it (undefined: failed, or still opening). */
export async function openedWithin<T>(opening: Promise<T> | undefined): Promise<T | undefined> {
  if (!opening) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const o = await Promise.race([opening.catch(() => undefined), new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), CLOSE_WAIT_MS)))]);
  clearTimeout(timer);
  return o;
}
