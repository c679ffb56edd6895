// What a broker publisher (amqp.ts, nats.ts) offers the registry, the outcomes of a publish and their errorCodes,
// and the address guard for broker hosts (the same rule as HTTP: SPEC §7, unless BULB_WEBHOOK_ALLOW_PRIVATE).
import dns from 'node:dns';
import { blockedReason, BlockedAddressError, isIpLiteral } from '../address.ts';

/**
 * BROKER_UNREACHABLE: no connection (refused, reset, DNS, closed under the publish); BROKER_REFUSED: the broker
 * answered no (credentials, vhost, missing exchange, a nack, a JetStream error); BROKER_TIMEOUT: no confirm or
 * acknowledgement within the deadline; NO_ROUTE: nothing takes the message (amqp: the mandatory publish came back
 * unroutable; nats: no stream is bound to the subject).
 */
export type BrokerErrorCode = 'BROKER_UNREACHABLE' | 'BROKER_REFUSED' | 'BROKER_TIMEOUT' | 'NO_ROUTE';
export const BROKER_ERROR_CODES: readonly BrokerErrorCode[] = ['BROKER_UNREACHABLE', 'BROKER_REFUSED', 'BROKER_TIMEOUT', 'NO_ROUTE'];

/** One event for one subscription: the exact body of an HTTP delivery and its headers (as message headers). */
export interface BrokerMessage {
  /** The event uuid (webhook-id): the message id, by which a JetStream stream drops a duplicate publish. */
  id: string;
  body: string;
  headers: Record<string, string>;
}

export type PublishOutcome = { ok: true } | { ok: false; errorCode: BrokerErrorCode | 'BLOCKED_ADDRESS'; message: string };

export const OK: PublishOutcome = { ok: true };

export function failure(errorCode: BrokerErrorCode | 'BLOCKED_ADDRESS', message: string): PublishOutcome {
  return { ok: false, errorCode, message };
}

/** One subscription's connection to its broker: opened on the first publish, used by nobody else. */
export interface Publisher {
  /** Resolves (never rejects) once the broker confirmed or refused, or the connection failed. */
  publish(msg: BrokerMessage): Promise<PublishOutcome>;
  /** The connection is gone or unusable: the registry opens a new publisher for the next attempt. */
  readonly broken: boolean;
  close(): Promise<void>;
}

export interface PublisherOptions {
  /** BULB_WEBHOOK_TIMEOUT_MS: bounds a connection's opening (and the registry bounds each publish with it). */
  timeoutMs: number;
  allowPrivate: boolean;
  /** A name the broker shows for the connection (its management UI), e.g. "bulb subscription <uuid>". */
  name: string;
}

const UNREACHABLE = /^(ECONNREFUSED|ECONNRESET|ECONNABORTED|EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN|EPIPE|ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME|ENODATA)$/;

/** The errorCode of a failure to connect or of a lost connection, from a socket error. */
export function socketFailure(err: any, fallback: BrokerErrorCode = 'BROKER_UNREACHABLE'): PublishOutcome {
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = `${code ? `${code}: ` : ''}${err?.message ?? err}`;
  if (code === 'EBLOCKEDADDRESS') return failure('BLOCKED_ADDRESS', String(err.message));
  if (code === 'ETIMEDOUT' || /ETIMEDOUT|timed? ?out/i.test(String(err?.message))) return failure('BROKER_TIMEOUT', message);
  if (UNREACHABLE.test(code)) return failure('BROKER_UNREACHABLE', message);
  return failure(fallback, message);
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
    return h;
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
