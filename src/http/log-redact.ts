// What the request log says of a URL: never a credential (SPEC §15, docs/security.md). Tokens belong in the
// Authorization header (redacted from the log), but a client may put one in the query string (`?access_token=`, a
// token request's `client_secret=`), which Bulb refuses, and which the log line of the refused request would keep.
import type { FastifyRequest } from 'fastify';

/**
 * Query parameters whose values are credentials by their name (OAuth2's, and the usual API key names), in any case
 * and spelling: the name is compared with its `-`, `_` and `.` taken out (`x-api-key`, `accessToken`, `auth_token`
 * were logged in full until 2026-11-29; a key of `BULB_ADMIN_KEY` has no `bulb_` prefix to catch it by).
 */
const SECRET_PARAM = /token|secret|passw|apikey|privatekey|auth|bearer|credential|signature|signing|session|jwt|hmac|whsec|^(key|code|sig|pwd|pw|pass)$/;
const secretParam = (name: string) => SECRET_PARAM.test(name.toLowerCase().replace(/[-_.]/g, ''));
/** The userinfo of an absolute-form request target (`GET http://user:pass@host/…`), up to its last `@` as URL parsers read it. */
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i;
/**
 * Bulb's own secrets, wherever in the URL they are (a key pasted into a path segment or a filter), a webhook signing
 * secret (`whsec_<base64>`) included (logged in full under any other name until 2026-11-29).
 */
const BULB_SECRET = /bulb_(key|cs|at)_[A-Za-z0-9_-]+|whsec_[A-Za-z0-9+/=_-]+/g;

/** What stands for a credential in the log (the redacted headers too: app.ts). */
export const REDACTED_VALUE = '[redacted]';

/** The URL as logged: credential parameters' values and Bulb's secrets replaced, in whatever percent-encoding they came. */
export function redactUrl(url: string): string {
  url = url.replace(USERINFO, `$1${REDACTED_VALUE}@`);
  const q = url.indexOf('?');
  const path = (q < 0 ? url : url.slice(0, q)).split('/').map(redactPart).join('/');
  if (q < 0) return path;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    return eq >= 0 && secretParam(decoded(name)) ? `${name}=${REDACTED_VALUE}` : eq < 0 ? redactPart(pair) : `${redactPart(name)}=${redactPart(pair.slice(eq + 1))}`;
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
  // As the client sent it: the legacy prefix is rewritten to /api/2022-04/ before routing (logged rewritten until
  // 2026-11-29, so no log line named /tulip_api/v2/).
  return { method: req.method, url: redactUrl(req.originalUrl ?? req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}
