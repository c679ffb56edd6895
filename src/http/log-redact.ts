// What the request log says of a URL: never a credential (SPEC §15, docs/security.md). Tokens belong in the
// Authorization header (redacted from the log), but a client may put one in the query string (`?access_token=`, a
// token request's `client_secret=`), which Bulb refuses, and which the log line of the refused request would keep.
import type { FastifyRequest } from 'fastify';

/** Query parameters whose values are credentials by their name (OAuth2's, and the usual API key names). */
const SECRET_PARAM = /^(access_token|refresh_token|id_token|token|client_secret|secret|password|passwd|api_?key|key|code|signature|sig)$/i;
/** Bulb's own secrets, wherever in the URL they are (a key pasted into a path segment or a filter). */
const BULB_SECRET = /bulb_(key|cs|at)_[A-Za-z0-9_-]+/g;

/** What stands for a credential in the log (the redacted headers too: app.ts). */
export const REDACTED_VALUE = '[redacted]';

/** The URL as logged: credential parameters' values and Bulb's secrets replaced, in whatever percent-encoding they came. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = (q < 0 ? url : url.slice(0, q)).split('/').map(redactPart).join('/');
  if (q < 0) return path;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    return eq >= 0 && SECRET_PARAM.test(decoded(name)) ? `${name}=${REDACTED_VALUE}` : eq < 0 ? redactPart(pair) : `${redactPart(name)}=${redactPart(pair.slice(eq + 1))}`;
  });
  return `${path}?${query.join('&')}`;
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    return part; // malformed: compared as sent
  }
}

/**
 * A path segment, query name or value with Bulb's secrets replaced. One that holds a secret only once decoded
 * (`bulb%5Fkey%5F…`, `%2D` inside one) is replaced whole: redacting its encoded form would miss part of it.
 */
function redactPart(part: string): string {
  const plain = part.replace(BULB_SECRET, REDACTED_VALUE);
  const d = decoded(part);
  return d !== part && d.replace(BULB_SECRET, '') !== d ? REDACTED_VALUE : plain;
}

/** Fastify's request serializer with the URL redacted (the fields of its default one). */
export function requestForLog(req: FastifyRequest) {
  return { method: req.method, url: redactUrl(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}
