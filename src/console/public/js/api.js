// The console's only way to the server: the public JSON API, with the signed-in admin key.
// Every call sends X-Bulb-Client: console so that changes made here are tagged {SERVICE}_APP.

export const API_VERSION = '2026-11';
const STORAGE_KEY = 'bulb.console.adminKey';

/** The admin key lives in sessionStorage only (gone when the tab closes), never in a URL. */
export const session = {
  get key() {
    return sessionStorage.getItem(STORAGE_KEY);
  },
  set(key) {
    sessionStorage.setItem(STORAGE_KEY, key);
  },
  clear() {
    sessionStorage.removeItem(STORAGE_KEY);
  },
};

/** An API answer with a 4xx/5xx status (or no answer at all: status 0), carrying the API's own messages. */
export class ApiError extends Error {
  constructor(status, errors) {
    super(errors.map((e) => e.message).join('; '));
    this.name = 'ApiError';
    this.status = status;
    this.errors = errors;
  }
}

function urlOf(path, query) {
  let url = path.startsWith('/api/') ? path : `/api/${API_VERSION}${path}`;
  if (query) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === '') continue;
      p.append(k, String(v));
    }
    const qs = p.toString();
    if (qs) url += `?${qs}`;
  }
  return url;
}

/**
 * request('GET', '/crm/customers', { query: { email } }) → parsed JSON body.
 * Options: query, body (sent as JSON), headers, signal, key (use this key instead of the session's: sign-in check).
 */
export async function request(method, path, opts = {}) {
  const key = opts.key ?? session.key;
  const headers = { ...opts.headers, accept: 'application/json', 'x-bulb-client': 'console' };
  if (key) headers.authorization = `Bearer ${key}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(urlOf(path, opts.query), {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError(0, [{ message: 'The server could not be reached. Check that Bulb is running, then try again.', errorCode: 'NetworkError', moreInfo: String(err && err.message) }]);
  }
  const text = await res.text();
  let data;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = text;
  }
  if (!res.ok) {
    const errors = data && Array.isArray(data.errors) && data.errors.length > 0
      ? data.errors
      : [{ message: `The server answered ${res.status} ${res.statusText}`.trim(), errorCode: `HTTP${res.status}`, moreInfo: '' }];
    throw refusal(res.status, errors, opts.key === undefined);
  }
  return data;
}

export const get = (path, query, opts = {}) => request('GET', path, { ...opts, query });
export const post = (path, body, opts = {}) => request('POST', path, { ...opts, body });
export const patch = (path, body, opts = {}) => request('PATCH', path, { ...opts, body });
export const del = (path, opts = {}) => request('DELETE', path, opts);

/** Follows nextCursor up to maxPages pages; returns { data, more, cursor } (cursor: where to go on from, or null). */
export async function getPages(path, query, maxPages, opts = {}) {
  const data = [];
  let cursor;
  for (let i = 0; i < maxPages; i++) {
    const page = await get(path, { ...query, cursor }, opts);
    data.push(...page.data);
    cursor = page.nextCursor;
    if (!cursor) return { data, more: false, cursor: null };
  }
  return { data, more: true, cursor };
}

let openapiDoc;
/** The server's OpenAPI document for our version (no auth), fetched once: tells which optional filters exist. */
export function openapi() {
  openapiDoc ??= fetch(`/api/${API_VERSION}/openapi.json`, { cache: 'no-store' })
    .then((r) => (r.ok ? r.json() : {}))
    .catch(() => ({}));
  return openapiDoc;
}

/** Whether GET {path} takes a query parameter {name}, per the server's OpenAPI document. */
export async function supportsQueryParam(path, name) {
  const doc = await openapi();
  const paths = doc.paths || {};
  const op = (paths[`/api/${API_VERSION}${path}`] || paths[path] || {}).get;
  return !!(op && (op.parameters || []).some((p) => p.in === 'query' && p.name === name));
}

/**
 * A fresh Idempotency-Key (a random uuid). crypto.randomUUID exists only in secure contexts (https or localhost); the
 * console opened over http on another address (HOST=0.0.0.0) builds one from crypto.getRandomValues, which exists there.
 */
export function idempotencyKey() {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The error of a refused request of the session; a 401 means the session's key stopped working (revoked, expired):
 * the console goes back to sign-in. Also for the requests that call fetch themselves (the import's upload).
 */
export function refusal(status, errors, ofSession = true) {
  const err = new ApiError(status, errors);
  if (status === 401 && ofSession) window.dispatchEvent(new CustomEvent('bulb:unauthorized', { detail: err }));
  return err;
}
