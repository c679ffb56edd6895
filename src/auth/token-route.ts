// POST /auth/oauth2/token: OAuth 2.0 client credentials (RFC 6749 §4.4), errors per §5.2.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Services } from '../services.ts';
import { issueAccessToken } from './service.ts';
import { RateLimiter, type AuthFailures } from '../http/ratelimit.ts';
import { jsonKind } from '../http/errors.ts';
import { oauthErrorCode } from '../http/versioning/openapi-extras.ts';

function oauthError(reply: FastifyReply, status: number, error: string, description: string) {
  if (status === 401) reply.header('WWW-Authenticate', 'Basic realm="bulb"');
  // RFC 6749 fields for OAuth clients, plus the SPEC's error list for everyone else.
  return reply.code(status).header('cache-control', 'no-store').send({
    error,
    error_description: description,
    errors: [{ message: description, errorCode: oauthErrorCode(status), moreInfo: error }],
  });
}

const CONTROL = /[\u0000-\u001f\u007f]/;

function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const m = header ? /^Basic[ ]+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (!m) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return undefined;
  // RFC 6749 §2.3.1: both parts are form-urlencoded before Basic encoding.
  const dec = (x: string) => {
    try {
      return decodeURIComponent(x.replace(/\+/g, ' '));
    } catch {
      return x;
    }
  };
  return { id: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)) };
}

/**
 * Tokens issued per client (a second; a burst), per process: every token is a stored row (kept until a day after it
 * expires), and a client that asks one per call (a common bug) filled the table unchecked. Taken before the lookup
 * (concurrent requests each see what the others took) and given back when no token was issued, so another's bad
 * secrets never use up a client's tokens.
 */
export const TOKENS_PER_SEC = 1;
export const TOKENS_BURST = 30;

export function tokenRoutes(app: FastifyInstance, s: Services, failures: AuthFailures) {
  const issued = new RateLimiter(TOKENS_PER_SEC, TOKENS_BURST);
  app.post('/auth/oauth2/token', { config: { bodyTypes: 'application/x-www-form-urlencoded (RFC 6749) or application/json' } }, async (req, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    // A JSON body must be an object of the parameters: an array was read as one with keys "0", "1"… (`[[]]` answered
    // "0 must not be included more than once"), a string or number as none ("grant_type is required").
    if (req.body !== undefined && (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body))) {
      return oauthError(reply, 400, 'invalid_request', `the request body must be an object of the request's parameters (grant_type, client_id, client_secret, scope), not ${jsonKind(req.body)}`);
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    const str = (k: string) => (typeof body[k] === 'string' ? (body[k] as string) : undefined);
    // RFC 6749 §3.2: "Request and response parameters MUST NOT be included more than once" (a repeated one was read as
    // missing: "grant_type is required").
    const repeated = Object.keys(body).find((k) => Array.isArray(body[k]));
    if (repeated !== undefined) return oauthError(reply, 400, 'invalid_request', `${repeated.slice(0, 50)} must not be included more than once`);
    const grant = str('grant_type');
    if (!grant) return oauthError(reply, 400, 'invalid_request', 'grant_type is required');
    if (grant !== 'client_credentials') return oauthError(reply, 400, 'unsupported_grant_type', 'only client_credentials is supported');
    const basic = basicCredentials(req.headers.authorization);
    const formId = str('client_id');
    const formSecret = str('client_secret');
    // RFC 6749 §3.2.1: a client may name itself with client_id beside HTTP Basic (OAuth libraries do); only a second
    // authentication (client_secret in the form too) or another client's id is refused.
    if (basic && (formSecret !== undefined || (formId !== undefined && formId !== basic.id))) {
      return oauthError(reply, 400, 'invalid_request', formSecret !== undefined ? 'use either HTTP Basic or form credentials, not both' : 'client_id differs from the HTTP Basic client');
    }
    const id = basic?.id ?? formId;
    const secret = basic?.secret ?? formSecret;
    // Every bad credential is invalid_client (RFC 6749 §5.2), including ones no client can have (control characters, NUL).
    if (!id || !secret || id.length > 200 || secret.length > 200 || CONTROL.test(id) || CONTROL.test(secret)) {
      return oauthError(reply, 401, 'invalid_client', 'client authentication failed');
    }
    const scope = str('scope');
    // A client id and secret cost a database lookup: refused without one while this address has failed too often.
    const wait = failures.begin(req.ip);
    if (wait > 0) {
      reply.header('Retry-After', String(wait));
      return oauthError(reply, 429, 'temporarily_unavailable', `too many failed client authentications from this address; retry after ${wait} s`);
    }
    const busy = issued.take(id);
    if (busy > 0) {
      failures.end(req.ip, false);
      reply.header('Retry-After', String(busy));
      return oauthError(reply, 429, 'temporarily_unavailable', `too many tokens issued to this client: reuse a token until it expires (expires_in); retry after ${busy} s`);
    }
    const result = await issueAccessToken(s.db, id, secret, scope ? [...new Set(scope.split(' ').filter(Boolean))] : undefined) // a scope named twice is granted once
      .catch((err) => {
        failures.end(req.ip, false);
        issued.give(id);
        throw err;
      });
    failures.end(req.ip, !result.ok && result.error === 'invalid_client');
    if (!result.ok) issued.give(id);
    if (!result.ok) return oauthError(reply, result.error === 'invalid_client' ? 401 : 400, result.error, result.description);
    return { access_token: result.accessToken, token_type: 'Bearer', expires_in: result.expiresIn, scope: result.scopes.join(' ') };
  });
}
