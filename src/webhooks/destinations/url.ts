// Broker destinations' URLs (docs/destinations.md): which kind a subscription URL names (http, amqp, nats), what a
// broker URL must carry (an exchange, a subject), and its credential split off for sealing: the stored and shown URL
// has the password replaced by REDACTED_PASSWORD, the password itself is sealed in its own column.
import { invalid } from '../../http/errors.ts';

export type DestinationKind = 'http' | 'amqp' | 'nats';

/** What a broker URL shows in place of its password (API answers, attempt rows, logs). */
export const REDACTED_PASSWORD = '***';

const KIND_OF: Record<string, DestinationKind> = { 'http:': 'http', 'https:': 'http', 'amqp:': 'amqp', 'amqps:': 'amqp', 'nats:': 'nats' };

/** The kind of destination a URL's scheme names; undefined: not one Bulb delivers to. */
export function kindOfScheme(protocol: string): DestinationKind | undefined {
  return KIND_OF[protocol];
}

/** The kind of a stored subscription URL (valid by construction): anything that is not a broker is HTTP. */
export function destinationKind(url: string): DestinationKind {
  // The scheme in any case, as the URL parser reads it (AMQP:// was validated as amqp, then stored and sent as an HTTP
  // URL with its password in clear; found by a probe). Broker URLs are stored with it lower-cased (splitCredential).
  const colon = url.indexOf(':');
  const kind = colon > 0 ? kindOfScheme(url.slice(0, colon + 1).toLowerCase()) : undefined;
  return kind === 'amqp' || kind === 'nats' ? kind : 'http';
}

/** The query parameters each broker URL takes (anything else is refused: a typo would otherwise be ignored). */
const PARAMS: Record<'amqp' | 'nats', { required: string; allowed: string[] }> = {
  amqp: { required: 'exchange', allowed: ['exchange', 'routingKey'] },
  nats: { required: 'subject', allowed: ['subject'] },
};

/**
 * A broker URL's query parameters, each name with its values in order, percent-decoded only (a malformed escape is
 * taken as written, as the vhost is). AMQP and NATS URIs use percent-encoding alone: URLSearchParams' form decoding
 * read a "+" as a space, so `routingKey=a+b` published to "a b" (until 2026-11-30; migration 080 rewrites the "+" of
 * URLs stored before as %20, which they meant).
 */
export function queryParams(u: URL): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const pair of u.search.slice(1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decoded(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : decoded(pair.slice(eq + 1));
    out.set(name, [...(out.get(name) ?? []), value]);
  }
  return out;
}

/** A broker URL's query parameter (its first value, percent-decoded only: queryParams), or null. */
export function queryParam(u: URL, name: string): string | null {
  return queryParams(u).get(name)?.[0] ?? null;
}

/** NATS subjects: tokens of visible ASCII separated by dots, no wildcard (a publish names one subject). */
const NATS_SUBJECT = /^[!-)+-\-/-=?-~]+(\.[!-)+-\-/-=?-~]+)*$/;

/**
 * Checks what a broker URL must carry beyond a host (400 naming "url", nothing changed): the exchange (amqp) or
 * subject (nats), no unknown parameter, no fragment; a NATS URL has no path (a subject is not a path).
 */
export function checkBrokerUrl(u: URL, kind: 'amqp' | 'nats'): void {
  const { required, allowed } = PARAMS[kind];
  if (!u.hostname) throw invalid(`"url" must name the ${kind} broker's host`, 'url');
  const params = queryParams(u);
  for (const [k, values] of params) {
    if (!allowed.includes(k)) throw invalid(`"url" has an unknown ${kind} parameter "${k}" (allowed: ${allowed.join(', ')})`, 'url');
    if (values.length > 1) throw invalid(`"url" names "${k}" more than once`, 'url');
  }
  // Percent-decoded, each value must decode: a malformed escape was taken as written, so `routingKey=%zz+` published to
  // "%zz+" until its plus was stored as %2B, and to "%zz%2B" after (a review, 2026-11-30). What it means is a guess.
  for (const pair of u.search.slice(1).split('&')) {
    if (!wellEncoded(pair)) throw invalid('"url" has a query with an invalid percent-encoding: write "%" as %25', 'url');
  }
  const value = params.get(required)?.[0];
  if (!value) throw invalid(`"url" must name the ${required} to publish to (a ${kind} URL needs ?${required}=…)`, 'url');
  if (u.hash) throw invalid('"url" must not have a fragment', 'url');
  if (kind === 'amqp') {
    // AMQP 0-9-1 sends these as short strings (at most 255 bytes): longer, every publish failed, as BROKER_UNREACHABLE.
    const vhost = decoded(u.pathname.slice(1));
    for (const [name, v] of [['exchange', value], ['routingKey', params.get('routingKey')?.[0] ?? ''], ['vhost (the path)', vhost]] as const) {
      if (Buffer.byteLength(v) > 255) throw invalid(`"url" has an AMQP ${name} of ${Buffer.byteLength(v)} bytes: at most 255 (UTF-8)`, 'url');
    }
  }
  if (kind === 'nats') {
    if (u.pathname !== '' && u.pathname !== '/') throw invalid('"url" of a nats destination has no path: the subject goes in ?subject=…', 'url');
    if (!NATS_SUBJECT.test(value)) throw invalid('"url" has an invalid NATS subject: dot-separated tokens of visible ASCII, no wildcards (* or >)', 'url');
  }
  if (u.password && !u.username) throw invalid('"url" has a password without a user name', 'url');
  // The publishers percent-decode them, each leniently in its own way (amqplib, nats.ts: a malformed escape is sent as
  // written): what such a credential means is a guess, refused here rather than sent.
  for (const [part, v] of [['user name', u.username], ['password', u.password]] as const) {
    if (!wellEncoded(v)) throw invalid(`"url" has a ${part} with an invalid percent-encoding: write "%" as %25`, 'url');
  }
}

/** Whether every "%" of a URL part starts an escape that decodes (UTF-8 included). */
function wellEncoded(s: string): boolean {
  try {
    decodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * A broker URL as stored and shown (its password replaced by REDACTED_PASSWORD, a "+" of its query written %2B), and
 * the password to seal (null: none). An HTTP URL carries no credentials (validation refuses them) and is stored as given.
 */
export function splitCredential(raw: string): { url: string; password: string | null } {
  if (destinationKind(raw) === 'http') return { url: raw, password: null };
  const u = new URL(raw); // its href has the scheme lower-cased
  // A plus in the query is stored as %2B, which this release and the one before 080 both read as a plus: the older one
  // read a "+" as a space, and may still run during an upgrade (migration 083).
  if (u.search.includes('+')) u.search = u.search.replaceAll('+', '%2B');
  if (!u.password) return { url: u.href, password: null };
  const password = u.password; // percent-encoded as written: put back as is (withPassword)
  u.password = REDACTED_PASSWORD;
  return { url: u.href, password };
}

/**
 * A URL as the logs show it: a broker URL's password, if it still carries one, replaced by REDACTED_PASSWORD. An
 * attempt stored whole before migration 051 kept the URL it was sent to, with the password of a broker URL written
 * with an upper-case scheme (migration 073 moved it out of the subscriptions, not out of those rows).
 */
export function shownUrl(url: string): string {
  if (destinationKind(url) === 'http') return url;
  const at = url.indexOf('@');
  if (at < 0) return url;
  try {
    const u = new URL(url);
    if (!u.password || u.password === REDACTED_PASSWORD) return url;
    u.password = REDACTED_PASSWORD;
    return u.href;
  } catch {
    return url.replace(/^([A-Za-z]+:\/\/[^/?#:@]*):[^/?#]*@/, `$1:${REDACTED_PASSWORD}@`);
  }
}

/** The stored URL with its password put back, to connect with (never stored, logged or shown). */
export function withPassword(url: string, password: string | null): URL {
  const u = new URL(url);
  if (password !== null) u.password = password;
  else if (u.password === REDACTED_PASSWORD) u.password = '';
  return u;
}

/** An AMQP URL's user name and password, decoded as UTF-8; neither given: RabbitMQ's default guest/guest (as amqplib). */
export function userAndPassword(u: URL): [string, string] {
  if (u.username === '' && u.password === '') return ['guest', 'guest'];
  return [decoded(u.username), decoded(u.password)];
}

/** A percent-encoded URL part, decoded (a malformed escape is taken as written). */
export function decoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Spaces and control characters (CR, LF, TAB…) in a URL: the URL parser drops or encodes them, so what is requested
 * would not be the URL stored and shown (found by probing, 2026-11-28: a URL with a CR LF was stored as typed).
 */
export const URL_UNSAFE = /[\s\u0000-\u001f\u007f]/;
