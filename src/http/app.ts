// Builds the Fastify application: error shape, versioned routes, auth, rate limit, docs, operations.
import crypto from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Services } from '../services.ts';
import { allows, type Principal } from '../auth/principal.ts';
import { bindCursors } from './cursor-scope.ts';
import { diskFullRecently } from '../db/unavailable.ts';
import { ApiError, clientErrorHandler, errorBody, errorHandler, expectationFailed, invalid, MAX_PARAM_LENGTH, mayHoldUnstorable, rejectUnstorable, sendError, toApiError } from './errors.ts';
import { AuthFailures, RateLimiter, tooManyFailures } from './ratelimit.ts';
import { httpRequests, registry as metricsRegistry } from './metrics.ts';
import { Registry } from './versioning/registry.ts';
import { openApiDocument } from './versioning/openapi.ts';
import { LATEST, LEGACY_VERSION, VERSION_IDS, deprecationHeaders, isDeprecated, isVersion, versionsDocument } from './versioning/versions.ts';
import { allRoutes, allChanges } from '../wiring.ts';
import { tokenRoutes } from '../auth/token-route.ts';
import './context.ts';
import { consolePlugin } from '../console/plugin.ts';
import { IMPORT_TYPES } from '../imports/routes.ts';
import { coercingAjv, strictAjv } from './validator.ts';
import { REDACTED_VALUE, requestForLog } from './log-redact.ts';

/** How long `GET /ready` waits for the database's answer before saying 503. */
export const READY_DEADLINE_MS = 2000;

export interface AppOptions {
  /** false: no request log (the tests' servers); a stream: the log written there instead of stdout. */
  logger?: false | { stream: { write(line: string): void } };
}

/**
 * Where the client reached this server, for absolute links: BULB_PUBLIC_URL, else the request's scheme and host (as
 * BULB_TRUST_PROXY lets a proxy say them). A Host that is not a host name, address and port is not echoed: the link is
 * then relative to the request (RFC 8288 §3.2 resolves it), so no header value a client sends reaches another's links.
 */
function baseUrl(req: FastifyRequest, publicUrl: string | null) {
  if (publicUrl) return publicUrl;
  return /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(req.host) ? `${req.protocol}://${req.host}` : '';
}

/**
 * A query string that is not percent-encoded UTF-8 is a 400, as such a path is (FST_ERR_BAD_URL). The query parser
 * keeps a sequence it cannot decode as typed, so `?email=%ff` looked for the text "%ff" and answered an empty page.
 */
function rejectMisencodedQuery(url: string): void {
  const q = url.indexOf('?');
  if (q < 0 || url.indexOf('%', q) < 0) return;
  try {
    decodeURIComponent(url.slice(q + 1));
  } catch {
    throw new ApiError('InvalidParameterError', 'the query string is not valid percent-encoded UTF-8', 'querystring');
  }
}

/** A number as a query string writes one: decimal digits, a sign, a fraction, an exponent. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A numeric query parameter must be written as a number: Ajv's coercion reads a string as `+value`, so a blank one
 * (`minScore=%20`) was 0 and a hexadecimal one (`limit=0x10`) 16 (a probe, 2026-11-29).
 */
function rejectLooseNumbers(schema: unknown, query: unknown): void {
  const props = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties;
  if (!props || typeof query !== 'object' || query === null) return;
  for (const [key, value] of Object.entries(query as Record<string, unknown>)) {
    const type = props[key]?.type;
    if ((type === 'integer' || type === 'number') && typeof value === 'string' && !DECIMAL.test(value)) {
      throw new ApiError('InvalidParameterError', `"${key}" must be ${type === 'integer' ? 'an integer' : 'a number'} written in decimal digits`, `querystring.${key}`);
    }
  }
}

/** The token endpoint's form body limit (a client id, a secret, a scope). */
const TOKEN_FORM_LIMIT = 64 * 1024;

/** The caller's X-Request-Id when it is a token of up to 128 safe characters, else a new UUID. */
function requestIdOf(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : crypto.randomUUID();
}

/** The `request completed` line and the request metric of an answer no Fastify hook saw (Fastify's own line's shape). */
function completed(log: FastifyBaseLogger, method: string, statusCode: number, elapsedMs: number): void {
  log.info({ res: { statusCode }, responseTime: elapsedMs }, 'request completed');
  httpRequests.observe({ method, route: 'unmatched', status: String(statusCode) }, elapsedMs / 1000);
}

/** Trusts the first `n` proxies counted from the server (proxy-addr's hop rule, as Fastify's own number form). */
const hopsOf = (n: number) => (_address: string, hop: number) => hop < n;

export async function buildApp(s: Services, opts: AppOptions = {}): Promise<FastifyInstance> {
  const legacyPrefix = s.names.legacyPrefix + '/';
  const app = Fastify({
    logger: opts.logger === false ? false : {
      level: s.config.logLevel,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: REDACTED_VALUE },
      serializers: { req: requestForLog },
      ...opts.logger,
    },
    bodyLimit: s.config.bodyLimitBytes,
    // Every request has an id, logged with each of its lines and answered in X-Request-Id: the caller's own (a proxy's
    // or client's X-Request-Id, when it is a short token) or a new UUID (ids were req-1, req-2… in each process).
    requestIdHeader: false,
    genReqId: requestIdOf,
    // req.ip: the client address, from X-Forwarded-For only through the proxies BULB_TRUST_PROXY names.
    trustProxy: typeof s.config.trustProxy === 'number' ? hopsOf(s.config.trustProxy) : s.config.trustProxy,
    // While draining (SIGTERM), requests still arriving on open connections are served (with Connection:
    // close) rather than answered by Fastify's own 503, which is not in the error shape.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Errors Fastify raises before routing (bad percent-encoding, over-long segment): no hook runs for them, so their
    // completion is logged and counted here (they went unlogged and uncounted until 2026-11-29).
    frameworkErrors: (err, req, reply) => {
      reply.raw.once('finish', () => completed(req.log, req.method, reply.statusCode, reply.elapsedTime));
      return errorHandler(err, req, reply);
    },
    clientErrorHandler,
    rewriteUrl: (req) => (req.url!.startsWith(legacyPrefix) ? `/api/${LEGACY_VERSION}/` + req.url!.slice(legacyPrefix.length) : req.url!),
    // Node answers an HTTP/1.1 request without Host, and an Expect it does not know, itself with an empty body: both
    // are answered in the error shape instead (the hook below, expectationFailed).
    http: { requireHostHeader: false } as object,
  });
  // Answered by Node's server before Fastify sees the request: logged and counted as Fastify would.
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const reqId = requestIdOf(req);
    const log = app.log.child({ reqId });
    // In the shape requestForLog reads of a Fastify request (the `req` serializer), so the line carries the client.
    log.info({ req: { method: req.method, originalUrl: req.url ?? '', host: req.headers.host, ip: req.socket.remoteAddress, socket: req.socket } }, 'incoming request');
    res.once('finish', () => completed(log, req.method ?? '', res.statusCode, performance.now() - started));
    expectationFailed(req, res, reqId);
  });
  app.addHook('onRequest', (req, _reply, done) =>
    done(req.raw.httpVersion === '1.1' && req.headers.host === undefined ? invalid('an HTTP/1.1 request must have a Host header (RFC 9112 §3.2)', 'Host') : undefined));
  app.setErrorHandler(errorHandler);
  // Query strings and path parameters arrive as text and are coerced ("limit=5" → 5); JSON bodies are
  // typed already and are not ({"firstName":5} and {"ids":"x"} are 400s, not "5" and ["x"]).
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema));
  // Bodies are JSON (the token endpoint adds form bodies in its own scope); anything else is a 415.
  app.removeContentTypeParser('text/plain');
  // A request that says Content-Type: application/json but sends no body (many HTTP clients set the header
  // on every call) is served when its route takes no body (DELETE, POST …/test, …/rotateSecret, …/retry);
  // on a route that takes a body, an empty JSON body is InvalidJson.
  // Bytes that are not UTF-8 are an encoding error, 400 as Tulip documents it ("Encoding errors will generally
  // return the 400 error code", https://docs.tulip.com/integrating/aerial/gettingstartedwithaerial), never text
  // silently stored with U+FFFD in their place.
  const json = app.getDefaultJsonParser('error', 'error');
  const JSON_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);
  const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    if ((body as Buffer).length === 0 && (!req.routeOptions.schema?.body || req.routeOptions.config.noBody)) return done(null, undefined);
    // JSON is UTF-8 (RFC 8259 §8.1): a body declared in another charset would be read as UTF-8 and its text changed.
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(String(req.headers['content-type']))?.[1].toLowerCase();
    if (charset !== undefined && !JSON_CHARSETS.has(charset)) {
      return done(new ApiError('UnsupportedMediaType', `request body must be JSON in UTF-8, not charset ${charset.slice(0, 40)}`, 'Content-Type'), undefined);
    }
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      return done(new ApiError('InvalidJson', 'Request body JSON couldn\'t be parsed: it is not valid UTF-8', 'send the body encoded as UTF-8 (Content-Type: application/json; charset=UTF-8)'), undefined);
    }
    // NUL and lone surrogates reach a parsed string only through escapes: a body without one is not walked (preValidation).
    req.bodyMayHoldUnstorable = mayHoldUnstorable(text);
    return json(req, text, done);
  });
  // Import files (NDJSON, CSV) are streamed by their route (rawBody), never buffered; other routes refuse them. Any other
  // type, or none, reaches the catch-all: a rawBody route is handed the body unread, to refuse with the types it takes.
  const rawOrRefuse = (req: FastifyRequest, _payload: unknown, done: (err: Error | null, body?: unknown) => void) => {
    // Unknown routes pass through unread, to be answered 404 (EndpointNotInVersion…) by the not-found handler.
    if (req.routeOptions.config.rawBody || req.routeOptions.url === undefined) return done(null, undefined);
    done(new ApiError('UnsupportedMediaType', `request body must be ${req.routeOptions.config.bodyTypes ?? 'application/json'}, not ${String(req.headers['content-type'] ?? 'none').slice(0, 100)}`, 'Content-Type'), undefined);
  };
  app.addContentTypeParser(Object.keys(IMPORT_TYPES), rawOrRefuse);
  app.addContentTypeParser('*', rawOrRefuse);

  const registry = new Registry(allRoutes(s), allChanges);
  const openapi = new Map(VERSION_IDS.map((v) => [v, openApiDocument(registry, v, s.config.serviceName)]));
  const limiter = new RateLimiter(s.config.rateLimitPerSec, s.config.rateLimitBurst);
  const failures = new AuthFailures(s.config.authFailuresPerSec, s.config.authFailuresBurst);

  /** The path of a versioned request after /api/{version}, without its query ('' for any other). */
  const versionedRest = (url: string): string => {
    const m = /^\/api\/[^/]+(\/[^?]*)/.exec(url);
    return m ? m[1].replace(/\/$/, '') : '';
  };
  // What a request no route matches is answered: decided from its method and path alone. Given in preParsing, before
  // its body is read, so that a body a route would refuse (bad JSON, a charset, a Content-Encoding, over the limit)
  // does not hide the 404 EndpointNotInVersion naming the versions that serve it (a probe, 2026-11-29).
  const unmatched = (req: FastifyRequest): ApiError => {
    const path = req.url.split('?')[0];
    if (/^\/api\/?$/.test(path)) {
      return new ApiError('NotFound', `no route ${req.method} ${path}: name a version, /api/{version}/…`, 'see /api/versions');
    }
    // The documents and probes outside the versioned API are read-only: another method is a 405 (POST /api/versions
    // was read as version "versions", 404 UnsupportedApiVersion; found by probing).
    const doc = /^\/api\/([^/]+)\/openapi\.json$/.exec(path);
    if (['/api/versions', '/health', '/ready', '/metrics'].includes(path) || (doc && isVersion(doc[1]))) {
      return new ApiError('MethodNotAllowed', `${req.method} is not allowed on ${path}`, 'allowed: GET, HEAD').withHeader('Allow', 'GET, HEAD');
    }
    const m = /^\/api\/([^/]+)(\/.*)?$/.exec(path);
    if (m) {
      const [, v, rest = '/'] = m;
      if (!isVersion(v)) return unsupportedVersion(v);
      const { versionsForMethod, methodsInVersion } = registry.lookup(req.method, rest, v);
      // A route whose {id} segment was left empty ("PUT /crm/customers/", "GET /crm/customerNotes/"): Tulip's
      // documented answer is 400 InvalidParameterError "Could not get resource: Missing UUID in path"
      // (https://docs.tulip.com/integrating/aerial/errors/errors), not a 404 or a 405.
      if (rest.endsWith('/') && registry.lookup(req.method, `${rest}-`, v).methodsInVersion.includes(req.method === 'HEAD' ? 'GET' : req.method)) {
        return new ApiError('InvalidParameterError', `Could not get resource: missing id in path ${req.method} ${rest}`, 'name the resource by its uuid or externalId in the path');
      }
      if (versionsForMethod.length > 0 && !versionsForMethod.includes(v)) {
        return new ApiError('EndpointNotInVersion', `${req.method} ${rest} is not part of version ${v}`, `served by versions: ${versionsForMethod.join(', ')}`);
      }
      if (methodsInVersion.length > 0) {
        const allow = methodsInVersion.includes('GET') ? [...methodsInVersion, 'HEAD'] : methodsInVersion;
        return new ApiError('MethodNotAllowed', `${req.method} is not allowed on ${rest}`, `allowed: ${allow.join(', ')}`).withHeader('Allow', allow.join(', '));
      }
    }
    if (path === '/auth/oauth2/token' && req.method !== 'POST') {
      return new ApiError('MethodNotAllowed', `${req.method} is not allowed on ${path}`, 'allowed: POST').withHeader('Allow', 'POST');
    }
    // As the client wrote it (the legacy prefix is rewritten to /api/2022-04/ before routing).
    return new ApiError('NotFound', `no route ${req.method} ${req.originalUrl.split('?')[0].slice(0, 200)}`);
  };

  // The hooks every request runs take Fastify's callback form (no promise and microtask hop per hook);
  // one that throws is answered as an async one that rejects.
  // Every answer: Content-Language; versioned ones: X-Api-Version (+ deprecation headers). API answers (the legacy path
  // is rewritten to /api/ before this) carry customer data and one-time secrets (a new API key, a signing secret):
  // no cache, shared or private, may keep them (Cache-Control: no-store; a route may set its own).
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    reply.header('content-language', 'en');
    if (req.url.startsWith('/api/')) {
      reply.header('cache-control', 'no-store');
      const v = req.url.slice(5, req.url.indexOf('/', 5) >>> 0);
      if (isVersion(v)) {
        reply.header('x-api-version', v);
        if (isDeprecated(v)) for (const [k, val] of Object.entries(deprecationHeaders(v, baseUrl(req, s.config.publicUrl)))) reply.header(k, val);
      }
    }
    done();
  });
  // A compressed request body is not decoded (RFC 9110 §8.4.1: 415 for a content coding the server does not take):
  // read as it is, a body labelled gzip was parsed as sent, and a gzipped one refused as bad JSON or not text. Checked
  // before the body is read, after the route's authentication (onRequest): a caller without a valid token learns 401.
  app.addHook('preParsing', (req, _reply, payload, done) => {
    if (req.routeOptions.url === undefined) {
      try {
        rejectUnstorableUrl(req);
      } catch (err) {
        return done(err as Error);
      }
      return done(unmatched(req));
    }
    // A path another version serves as a route of its own (`/crm/customers/bulk`, `…/export`) is that route, not an
    // {id} of this version's: answered as unmatched (404 EndpointNotInVersion naming the versions), not "customer
    // "export" not found" or, for a bulk array, "body must be object" (found by a probe).
    if (req.routeOptions.url.includes(':') && registry.staticPaths.has(versionedRest(req.url))) {
      const answer = unmatched(req);
      if (answer.entries[0].errorCode === 'EndpointNotInVersion') return done(answer);
    }
    const coding = req.headers['content-encoding'];
    if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') {
      return done(new ApiError('UnsupportedMediaType', `request bodies are not decoded: Content-Encoding ${coding.slice(0, 40)} is not supported; send the body uncompressed`, 'Content-Encoding'));
    }
    // A body that stops arriving for BULB_IMPORT_IDLE_MS ends its connection (the socket's idle timer, which Node's
    // server destroys it on; reset once the body is in, preValidation). Fastify leaves requests without a deadline: a
    // client, authenticated or not (the token endpoint), held a socket for ever with a body it never finished (a probe,
    // 2026-11-29). Import uploads have their own idle guard, which does not count the server's own waits.
    if (!req.routeOptions.config.rawBody) req.raw.socket?.setTimeout(s.config.importIdleMs);
    done(null, payload);
  });
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    httpRequests.observe({ method: req.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });
  // Draining: answers sent after close() began say Connection: close, so that a keep-alive client whose
  // request was in flight does not hold the server (and SIGTERM's exit) open until its idle timeout.
  let draining = false;
  app.decorate('drain', () => {
    draining = true;
  });
  app.addHook('preClose', async () => {
    draining = true;
  });
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    done(null, payload);
  });
  // PostgreSQL cannot store NUL nor a lone surrogate in text or jsonb: refuse them in any input with a 400 naming the field.
  app.addHook('preValidation', (req, _reply, done) => {
    req.raw.socket?.setTimeout(0); // the body is in (preParsing's idle timer); 0 is the server's own (Fastify's connectionTimeout)
    if (req.routeOptions.url === '/auth/oauth2/token') return done(); // answers RFC 6749 errors itself (a NUL credential: invalid_client)
    rejectUnstorableUrl(req);
    rejectLooseNumbers(req.routeOptions.schema?.querystring, req.query);
    if (req.routeOptions.config.routeId && !req.routeOptions.config.checksItems && req.bodyMayHoldUnstorable !== false) rejectUnstorable('body', req.body); // bulk: each item's own result
    done();
  });
  bindCursors(app); // every nextCursor bound to its list (cursor-scope.ts)

  // Who calls, within their rate and scope (throws the error answered otherwise).
  const admit = (req: FastifyRequest, header: string | undefined, principal: Principal | undefined, bearer = true) => {
    if (!principal) {
      // RFC 6750 §3.1: no error code without credentials; invalid_request for a malformed header, invalid_token for a
      // token that is unknown, revoked or expired.
      const challenge = header === undefined ? 'Bearer realm="bulb"' : `Bearer realm="bulb", error="${bearer ? 'invalid_token' : 'invalid_request'}"`;
      throw new ApiError('Unauthorized', header ? 'the bearer token is invalid, revoked or expired' : 'an Authorization: Bearer token is required')
        .withHeader('WWW-Authenticate', challenge);
    }
    const wait = limiter.take(principal.uuid);
    if (wait > 0) throw new ApiError('RateLimited', 'too many requests for this token', `retry after ${wait} s`).withHeader('Retry-After', String(wait));
    const scope = req.routeOptions.config.scope!;
    if (!allows(principal, scope)) throw new ApiError('Forbidden', `this route needs the "${scope}" scope`, `token scopes: ${principal.scopes.join(', ')}`);
    s.auth.used(principal); // only an admitted call counts as a use of its key (lastUsedAt)
    req.principal = principal;
  };
  // A token in the cache (most requests) is admitted at once, without a promise; others are looked up.
  const auth = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer[ ]+([^\s]+)\s*$/i.exec(header) : null;
    const hit = m ? s.auth.cached(m[1]) : undefined;
    if (!m || hit) {
      admit(req, header, hit, m !== null);
      return done();
    }
    // A token not in the cache costs a database lookup: refused without one while its address has failed too often.
    const wait = failures.begin(req.ip);
    if (wait > 0) return done(tooManyFailures(wait));
    s.auth.authenticate(m[1]).then((principal) => {
      failures.end(req.ip, !principal);
      try {
        admit(req, header, principal);
      } catch (err) {
        return done(err as Error);
      }
      done();
    }, (err) => {
      failures.end(req.ip, false);
      done(err);
    });
  };
  registry.register(app, { auth });

  app.get('/api/versions', async () => versionsDocument());
  app.get('/api/:version/openapi.json', async (req) => {
    const v = (req.params as any).version as string;
    const doc = openapi.get(v);
    if (!doc) throw unsupportedVersion(v);
    return doc;
  });

  await app.register(async (scope) => {
    await scope.register(formbody, { bodyLimit: TOKEN_FORM_LIMIT });
    // Body errors at the token endpoint (bad JSON, too large, wrong type) answer RFC 6749's shape too.
    scope.setErrorHandler((err, req, reply) => {
      const { status, headers, ...answer } = toApiError(err);
      let entries = answer.entries;
      // A form body has its own, smaller limit (a JSON one the API's).
      if (status === 413 && /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] ?? '')) entries = [{ ...entries[0], message: `request body exceeds ${TOKEN_FORM_LIMIT / 1024} KiB` }];
      if (status >= 500) return errorHandler(err, req, reply);
      for (const [k, v] of Object.entries(headers)) reply.header(k, v);
      return reply.code(status).header('cache-control', 'no-store').send({ error: 'invalid_request', error_description: entries[0].message, ...errorBody(entries) });
    });
    tokenRoutes(scope, s, failures);
  });

  app.get('/health', async () => ({ status: 'ok' }));
  // Ready while the database answers, within READY_DEADLINE_MS: one that stops answering with its connections left open
  // (a network partition, a stalled server) held the probe as long as that lasted, then said 200 (found by probing).
  app.get('/ready', async (_req, reply) => {
    // Draining (SIGTERM): not ready, so that a load balancer stops sending new work here while the open connections
    // are answered (it said 200 through the drain's grace; found by a probe).
    if (draining) return sendError(reply, 503, [{ message: 'draining: this process is shutting down', errorCode: 'ServiceUnavailable', moreInfo: '' }]);
    // A full disk answers SELECT 1 but refuses every write: not ready while writes keep failing for it.
    const full = diskFullRecently();
    if (full !== null) return sendError(reply, 503, [{ message: `the database's disk is full (a write failed for it ${Math.round(full / 1000)} s ago)`, errorCode: 'ServiceUnavailable', moreInfo: '' }]);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), READY_DEADLINE_MS)));
    try {
      const answer = await Promise.race([s.db.query('SELECT 1').then(() => 'ready' as const), deadline]);
      if (answer === 'late') return sendError(reply, 503, [{ message: `the database did not answer within ${READY_DEADLINE_MS} ms`, errorCode: 'ServiceUnavailable', moreInfo: '' }]);
      return { status: 'ready' };
    } catch {
      return sendError(reply, 503, [{ message: 'database unreachable', errorCode: 'ServiceUnavailable', moreInfo: '' }]);
    } finally {
      clearTimeout(timer);
    }
  });
  app.get('/metrics', async (_req, reply) => {
    reply.type(metricsRegistry.contentType);
    return metricsRegistry.metrics();
  });

  await app.register(swagger, { mode: 'static', specification: { document: openapi.get(LATEST) as any } });
  // /docs: Bulb's logo instead of Fastify's, and the console's security headers (no framing, no inline
  // script; Swagger UI sets styles through the CSSOM, which style-src 'self' allows).
  const logo = { type: 'image/svg+xml', content: await readFile(new URL('../console/public/favicon.svg', import.meta.url)) };
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    logo: { ...logo, href: '/docs', target: '_self' },
    theme: { title: 'Bulb API reference', favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: logo.type, content: logo.content }] },
    uiConfig: { urls: [...VERSION_IDS].reverse().map((v) => ({ url: `/api/${v}/openapi.json`, name: v })) } as any,
  });
  app.addHook('onSend', (req, reply, payload, done) => {
    if (req.url === '/docs' || req.url.startsWith('/docs/') || req.url.startsWith('/docs?')) {
      reply.header('content-security-policy', DOCS_CSP);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      reply.header('x-frame-options', 'DENY');
    }
    done(null, payload);
  });
  await app.register(consolePlugin);

  app.setNotFoundHandler(async (req) => {
    throw unmatched(req);
  });

  return app;
}

/**
 * As the console's, plus data: images (the logo is inlined by Swagger UI) and the one inline <style> that
 * Swagger UI injects, allowed by its hash (test/console/docs.test.ts fails on any CSP violation, so a new
 * Swagger UI whose style differs shows up there).
 */
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * A path or query PostgreSQL could not store, or a query not percent-encoded as UTF-8: a 400 naming it. A path no
 * route has is matched by a wildcard ("*"): named as the path.
 */
function rejectUnstorableUrl(req: FastifyRequest) {
  const { '*': rest, ...params } = (req.params ?? {}) as Record<string, unknown>;
  rejectUnstorable('params', params);
  if (rest !== undefined) rejectUnstorable('path', rest);
  rejectMisencodedQuery(req.url);
  rejectUnstorable('querystring', req.query);
}

function unsupportedVersion(v: string) {
  return new ApiError('UnsupportedApiVersion', `API version "${v.slice(0, 40)}" is not supported; supported versions: ${VERSION_IDS.join(', ')}`, `see /api/versions`);
}
