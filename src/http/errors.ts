// The one error shape of SPEC §3, and the mapping of every failure (ours and Fastify's) onto it.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { databaseUnavailable, isDiskFull, NO_CONNECTION_IN_TIME, noteDiskFull, statementDeadlinePassed } from '../db/unavailable.ts';

export interface ErrorEntry {
  message: string;
  errorCode: string;
  moreInfo: string;
}

/**
 * The longest path segment routed (find-my-way's maxParamLength, counted in UTF-16 code units of the decoded segment):
 * room for the longest id a path names, an externalId of 255 characters, each of which may be two units (an emoji).
 * At 500, a valid externalId of 251 emoji could not be named in a path.
 */
export const MAX_PARAM_LENGTH = 510;

const STATUS_OF: Record<string, number> = {
  InvalidParameterError: 400,
  InvalidJson: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  UnsupportedApiVersion: 404,
  EndpointNotInVersion: 404,
  MethodNotAllowed: 405,
  // A client that stopped sending its request's body (an import upload idle for BULB_IMPORT_IDLE_MS).
  RequestTimeout: 408,
  Conflict: 409,
  // Tulip answers 403 when "the resource … cannot be accessed due to its current state/status"
  // (https://docs.tulip.com/integrating/aerial/errors/troubleshooterrors): a disabled customer (SPEC §16: docs win).
  CustomerDisabled: 403,
  MergeNotUndoable: 409,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  RateLimited: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
};
/** Every errorCode of an error body, for the OpenAPI document's description of ErrorEntry.errorCode. */
export const ERROR_CODES = Object.keys(STATUS_OF);

export class ApiError extends Error {
  readonly status: number;
  readonly entries: ErrorEntry[];
  headers: Record<string, string> = {};
  constructor(errorCode: string, message: string, moreInfo = '', extra: ErrorEntry[] = []) {
    super(message);
    this.status = STATUS_OF[errorCode] ?? 400;
    this.entries = [{ message, errorCode, moreInfo }, ...extra];
  }
  /** One error carrying several problems of the same kind (e.g. one per invalid field). */
  static many(errorCode: string, entries: { message: string; moreInfo?: string }[]): ApiError {
    const [first, ...rest] = entries;
    return new ApiError(
      errorCode,
      first.message,
      first.moreInfo ?? '',
      rest.map((e) => ({ message: e.message, errorCode, moreInfo: e.moreInfo ?? '' })),
    );
  }
  withHeader(name: string, value: string): this {
    this.headers[name] = value;
    return this;
  }
}

export const invalid = (message: string, moreInfo = '') => new ApiError('InvalidParameterError', message, moreInfo);
export const notFound = (message: string, moreInfo = '') => new ApiError('NotFound', message, moreInfo);
export const conflict = (message: string, moreInfo = '') => new ApiError('Conflict', message, moreInfo);

/** Where every answer's contract is written: the interactive reference of each version. */
const REFERENCE = 'see the API reference at /docs (GET /api/versions lists the versions)';

/**
 * What an entry that names nothing more says in `moreInfo` (Tulip: "more information about the error and/or link to
 * documentation"). Until 2026-11-30 a 401, an unknown route's 404, a body too large and a 500 answered `""`.
 */
const MORE_INFO: Record<string, string> = {
  Unauthorized: 'send "Authorization: Bearer <API key>"; an admin key makes keys with POST /api/{version}/integrations/apiKeys',
  InvalidJson: 'send a JSON document with Content-Type: application/json',
  UnsupportedMediaType: 'send Content-Type: application/json',
  PayloadTooLarge: "send a smaller body (the message gives this route's limit), or split the request",
  RateLimited: 'wait for the seconds the Retry-After header gives',
  ServiceUnavailable: 'retry shortly (after the seconds of the Retry-After header, when the answer has one)',
  InternalError: "the server logged it under this answer's X-Request-Id",
};

/** The SPEC §3 body; an entry without `moreInfo` gets its code's (MORE_INFO) or the reference's. */
export function errorBody(entries: ErrorEntry[]) {
  return { errors: entries.map((e) => (e.moreInfo ? e : { ...e, moreInfo: MORE_INFO[e.errorCode] ?? REFERENCE })) };
}

/**
 * Turns an Ajv validation error list into one entry per problem, naming the field (`ctx`: the request part, e.g.
 * "body", used when the problem is the whole value). Routes' validation and item checks (bulk, imports) share it.
 */
export function validationEntries(errors: readonly unknown[], ctx?: string, fallback = `${ctx ?? 'value'} is invalid`): ErrorEntry[] {
  let list = errors as any[];
  // A value matching no branch of an anyOf yields one error per branch plus the anyOf itself: keep the anyOf, unless a
  // branch failed deeper inside the value (`emails: [{email: "x"}]` against array-or-null): that error says what is wrong.
  // The anyOf's message says what each branch wanted ("must be >= 1, or must be null").
  // Each read once (a path's branch messages, the paths with an error below them): a list of thousands of problems
  // was searched once per anyOf.
  const wantedAt = new Map<string, Set<string>>();
  const above = new Set<string>();
  for (const v of list) {
    if (v.keyword !== 'anyOf' && v.message) {
      const wanted = wantedAt.get(v.instancePath) ?? wantedAt.set(v.instancePath, new Set()).get(v.instancePath)!;
      wanted.add(v.keyword === 'enum' ? `must be one of: ${(v.params.allowedValues ?? []).join(', ')}` : v.message);
    }
    for (let i = v.instancePath.lastIndexOf('/'); i > 0; i = v.instancePath.lastIndexOf('/', i - 1)) above.add(v.instancePath.slice(0, i));
    if (v.instancePath.startsWith('/')) above.add('');
  }
  const branches = (path: string) => [...(wantedAt.get(path) ?? [])];
  const anyOfPaths = new Set(list.filter((v) => v.keyword === 'anyOf').map((v) => v.instancePath));
  list = list.filter((v) => (v.keyword === 'anyOf' ? !above.has(v.instancePath) : !anyOfPaths.has(v.instancePath)));
  const seen = new Set<string>();
  const out: ErrorEntry[] = [];
  for (const v of list) {
    let field = (v.instancePath || '').replace(/^\//, '').replace(/\//g, '.');
    let message: string;
    if (v.keyword === 'additionalProperties') {
      field = field ? `${field}.${v.params.additionalProperty}` : v.params.additionalProperty;
      message = `unknown field "${field}"`;
    } else if (v.keyword === 'required') {
      field = field ? `${field}.${v.params.missingProperty}` : v.params.missingProperty;
      message = `"${field}" is required`;
    } else if (v.keyword === 'enum') {
      message = `${field ? `"${field}"` : ctx ?? 'value'} must be one of: ${(v.params.allowedValues ?? []).join(', ')}`;
    } else if (v.keyword === 'anyOf') {
      const wanted = branches(v.instancePath);
      message = `${field ? `"${field}"` : ctx ?? 'value'} ${wanted.length ? wanted.join(', or ') : 'does not have an allowed type or value'}`;
    } else {
      message = `${field ? `"${field}"` : ctx ?? 'value'} ${v.message ?? 'is invalid'}`;
    }
    const where = ctx ? `${ctx}${field ? '.' + field : ''}` : field;
    const key = `${where}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ message, errorCode: 'InvalidParameterError', moreInfo: where });
  }
  if (out.length === 0) out.push({ message: fallback, errorCode: 'InvalidParameterError', moreInfo: ctx ?? '' });
  return out;
}

/** At most this many problems are listed in one answer (a body of 50,000 bad emails was a 6.9 MB answer). */
export const MAX_LISTED_PROBLEMS = 100;
/** The first MAX_LISTED_PROBLEMS problems, then one entry (`last` and a message) counting the others. */
export function capped<T extends { message: string }>(problems: T[], last: Omit<T, 'message'>): T[] {
  if (problems.length <= MAX_LISTED_PROBLEMS) return problems;
  const rest = problems.length - MAX_LISTED_PROBLEMS;
  return [...problems.slice(0, MAX_LISTED_PROBLEMS), { ...last, message: `and ${rest} more problem${rest === 1 ? '' : 's'} not listed` } as T];
}

/** A body limit in words: "1 MiB", "10 MiB", else bytes. */
const sizeOf = (bytes: number) => (bytes % 1048576 === 0 ? `${bytes / 1048576} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`);

/**
 * Maps any thrown error onto (status, entries). Unknown errors become a bare 500 with no internals. `bodyLimit`: the
 * route's, named by a 413 (Tulip's bulk takes 10 MiB, every other route 1 MiB).
 */
export function toApiError(err: unknown, bodyLimit = 1048576): { status: number; entries: ErrorEntry[]; headers: Record<string, string> } {
  if (err instanceof ApiError) return { status: err.status, entries: err.entries, headers: err.headers };
  const e = err as FastifyError;
  if (e && e.validation) return { status: 400, entries: capped(validationEntries(e.validation, (e as any).validationContext, e.message), { errorCode: 'InvalidParameterError', moreInfo: '' }), headers: {} };
  const code = e?.code;
  const simple = (errorCode: string, message: string, status = STATUS_OF[errorCode]) => ({
    status,
    entries: [{ message, errorCode, moreInfo: '' }],
    headers: {},
  });
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return simple('PayloadTooLarge', `request body exceeds ${sizeOf(bodyLimit)}`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return simple('UnsupportedMediaType', 'request body must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return simple('InvalidJson', 'request body is empty but Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return simple('InvalidParameterError', 'Content-Length does not match the body');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Also raised for valid JSON with a "__proto__" or "constructor.prototype" key (refused, never parsed).
      return simple('InvalidJson', 'request body is not valid JSON (or has a "__proto__"/"constructor" key)');
    case 'FST_ERR_BAD_URL':
      return simple('InvalidParameterError', 'the path is not valid percent-encoded UTF-8', 400);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return simple('InvalidParameterError', `a path segment is longer than ${MAX_PARAM_LENGTH} UTF-16 code units`, 400);
  }
  if (e instanceof SyntaxError || (e as any)?.name === 'SyntaxError') return simple('InvalidJson', 'request body is not valid JSON');
  if (statementDeadlinePassed(e)) {
    return { ...simple('ServiceUnavailable', 'the database did not answer within the statement deadline (BULB_DATABASE_STATEMENT_DEADLINE_MS): it is overloaded, waiting on a lock, unreachable or failing over; retry shortly'), headers: { 'retry-after': '1' } };
  }
  if (databaseUnavailable(e)) {
    if (isDiskFull(e)) {
      noteDiskFull(); // /ready says 503 for a while (DISK_FULL_UNREADY_MS)
      return { ...simple('ServiceUnavailable', 'the database\'s disk is full: nothing can be written until space is freed; retry later'), headers: { 'retry-after': '5' } };
    }
    // node-postgres says this both when no pooled connection came free in time and when a new one could not connect.
    const why = NO_CONNECTION_IN_TIME.test(String((e as any)?.message))
      ? 'no database connection came free in time (all busy, or the database is restarting or failing over); retry shortly'
      : (e as any)?.code === '53300'
        ? 'the database has no connection left for Bulb (too many clients: max_connections); retry shortly'
        : (e as any)?.code === '53200'
          ? 'the database is out of memory; retry shortly'
          : 'the database is unavailable (restarting or failing over); retry shortly';
    return { ...simple('ServiceUnavailable', why), headers: { 'retry-after': '1' } };
  }
  // Safety net for input the schemas let through but PostgreSQL refuses: a client error, never a 500.
  const sqlstate = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && 'severity' in (e as object) ? code : undefined;
  if (sqlstate?.startsWith('22') || sqlstate === '54000') return simple('InvalidParameterError', 'a value in the request is out of range or cannot be stored', 400);
  if (sqlstate === '23505') return simple('Conflict', 'a record with this identifier already exists', 409);
  const status = typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status === 413) return simple('PayloadTooLarge', `request body exceeds ${sizeOf(bodyLimit)}`, 413);
  if (status === 415) return simple('UnsupportedMediaType', 'unsupported Content-Type', 415);
  if (status >= 400 && status < 500) return simple('InvalidParameterError', e.message || 'bad request', 400);
  return simple('InternalError', 'internal error', 500);
}

export function sendError(reply: FastifyReply, status: number, entries: ErrorEntry[], headers: Record<string, string> = {}) {
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  // Set here too: errors raised before the onRequest hooks (bad URL, no Host) skip the hook that sets them.
  reply.header('content-language', 'en');
  reply.header('x-request-id', reply.request.id);
  return reply.code(status).type('application/json; charset=utf-8').send(errorBody(entries));
}

/**
 * What PostgreSQL cannot store in text or jsonb: the NUL character, and a UTF-16 surrogate without its pair (a JSON
 * escape such as "\ud800" alone parses into one; the driver would write U+FFFD in its place, silently). Both native
 * scans: the regular expression this was (a lookbehind and a lookahead at every character) cost twice the JSON.parse of
 * a body of 95,000 keys.
 */
const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

declare global {
  interface String {
    /** ES2024 (Node 20): false when the string holds a surrogate without its pair. */
    isWellFormed(): boolean;
  }
}

/**
 * Whether JSON text may parse into a string PostgreSQL cannot store: only through an escape, `\u0000` or one in
 * `\ud800`–`\udfff` (a raw control character is not JSON; text decoded from UTF-8 holds no lone surrogate, and the
 * body parser refuses bytes that are not UTF-8). False: no string of the parsed value needs the walk (firstUnstorable).
 * An escaped backslash before `u0000` (`\\u0000`, the six characters) says true too: the walk then finds nothing.
 */
export const mayHoldUnstorable = (jsonText: string) => /\\u(?:0000|[dD][89a-fA-F])/.test(jsonText);

/** How many strings (values and field names) firstUnstorable has read: the tests see a body without an escape unread. */
export const unstorableChecks = { strings: 0 };

/** Why a string cannot be stored, in words, for the error naming it. */
const unstorableWhat = (s: string) => (s.includes('\u0000') ? 'the NUL character (\\u0000)' : 'an unpaired UTF-16 surrogate (a \\ud800–\\udfff escape without its pair)');

/**
 * The first string in v (a value, or a field name: `key`) PostgreSQL cannot store (`storable`), with its dotted path ('' for
 * v itself; a field name's is its object's), objects below depth 64 not read. The path is built only when there is one
 * (imports check every line). Arrays by index, objects by for…in: no [key, value] pair is made per member (Object.entries
 * cost twice the JSON.parse of a body of 95,000 keys).
 */
export function firstUnstorable(v: unknown, depth = 0): { path: string; text: string; key: boolean } | undefined {
  if (typeof v === 'string') {
    unstorableChecks.strings++;
    return storable(v) ? undefined : { path: '', text: v, key: false };
  }
  if (v === null || typeof v !== 'object' || depth > 64) return undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x === null || (typeof x !== 'object' && typeof x !== 'string')) continue;
      const bad = firstUnstorable(x, depth + 1);
      if (bad) return { ...bad, path: bad.path === '' ? String(i) : `${i}.${bad.path}` };
    }
    return undefined;
  }
  // for…in: half the time of a walk over Object.keys (no array per object). A parsed body's objects inherit nothing
  // enumerable (their prototype is Object.prototype; "__proto__" keys are refused by the parser).
  for (const k in v) {
    unstorableChecks.strings++;
    if (!storable(k)) return { path: '', text: k, key: true };
    const x = (v as Record<string, unknown>)[k];
    if (x === null || (typeof x !== 'object' && typeof x !== 'string')) continue;
    const bad = firstUnstorable(x, depth + 1);
    if (bad) return { ...bad, path: bad.path === '' ? k : `${k}.${bad.path}` };
  }
  return undefined;
}

/** What a JSON value is, in words, for an error refusing a value that is not an object: "null", "an array", "a string". */
export const jsonKind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);

/** Throws InvalidParameterError naming the first string (value or key) PostgreSQL cannot store (`storable`). */
export function rejectUnstorable(where: string, value: unknown): void {
  const bad = firstUnstorable(value);
  if (!bad) return;
  if (bad.key) throw invalid(`a field name must not contain ${unstorableWhat(bad.text)}`, where);
  throw invalid(`${bad.path ? `"${bad.path}"` : where} must not contain ${unstorableWhat(bad.text)}`, bad.path ? `${where}.${bad.path}` : where);
}

/**
 * Node's HTTP parser rejected the request before Fastify saw it (malformed request line, headers over
 * 16 KiB, bad Content-Length…): answer in the error shape on the raw socket and close it.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) {
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || socket.destroyed) return;
  const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const message = timeout
    ? 'the request was not received in time'
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? 'the request line and headers exceed 16 KiB (is the query string too long?)'
      : 'malformed HTTP request';
  const body = JSON.stringify(errorBody([{ message, errorCode: 'InvalidParameterError', moreInfo: '' }]));
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Language: en\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * A request whose Expect is not 100-continue. Node answered it 417 with an empty body: now the error shape, 400 as the
 * other header errors (the SPEC maps InvalidParameterError to 400). The connection closes (the body was not read).
 */
export function expectationFailed(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, requestId: string) {
  const body = JSON.stringify(errorBody([{ message: `Expect: only "100-continue" is supported, not "${String(req.headers.expect).slice(0, 50)}"`, errorCode: 'InvalidParameterError', moreInfo: 'Expect' }]));
  res.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'content-language': 'en', 'cache-control': 'no-store', 'x-request-id': requestId, 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
}

/**
 * One line per `everyMs` for a cause every request meets at once: `take()` says how many were kept quiet since the
 * last line when it is time for the next (the first at once), else null.
 */
export class LogThrottle {
  private next = 0;
  private quiet = 0;
  constructor(private readonly everyMs: number, private readonly now: () => number = Date.now) {}
  take(): number | null {
    const t = this.now();
    if (t < this.next) {
      this.quiet++;
      return null;
    }
    const quiet = this.quiet;
    this.next = t + this.everyMs;
    this.quiet = 0;
    return quiet;
  }
}

/**
 * A 503 (the database unavailable or past the statement deadline) is one cause met by every request while it lasts:
 * logged at warn without a stack, one line per 5 s counting the others (an outage under load wrote ~900 error lines
 * with stacks a second per process; found by a probe). Other 5xx are logged each, with the error.
 */
const unavailableLog = new LogThrottle(5_000);

export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply) {
  const { status, entries, headers } = toApiError(err, request.routeOptions?.bodyLimit);
  if (status === 503) {
    const quiet = unavailableLog.take();
    if (quiet !== null) request.log.warn({ cause: String((err as any)?.message ?? err), code: (err as any)?.code, alsoAnswered503: quiet }, `answered 503: ${entries[0].message}`);
  } else if (status >= 500) request.log.error({ err }, 'request failed');
  return sendError(reply, status, entries, headers);
}
