// The contract check: every response a test receives is checked against the OpenAPI document the server
// serves for the request's version (GET /api/{v}/openapi.json). A request that matches an operation must
// answer a status the operation declares, with a body matching the declared schema (or no body when none
// is declared, e.g. 204). Anything else that answers 4xx/5xx must be in the Error shape. A mismatch throws
// (the test making the call fails) with the route, status and the path inside the body that mismatched.
// Used by Client.req (test/helpers/server.ts) and app.inject users through checkContract.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { LATEST, LEGACY_VERSION, VERSION_IDS } from '../../src/http/versioning/versions.ts';

type Json = any;

interface Operation {
  template: string;
  regex: RegExp;
  params: number;
  method: string;
  responses: Record<string, Json>;
}

interface Checker {
  /** "/tulip_api/v2": served as /api/2022-04. */
  legacyPrefix: string;
  operations: Operation[];
  validator(op: Operation, status: string): ValidateFunction | null;
  error: ValidateFunction;
}

const checkers = new Map<string, Promise<Checker>>(); // base + version → checker
const byText = new Map<string, Checker>(); // document text → checker: servers with the same document share one

function ajvFor(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, logger: false });
  addFormats.default(ajv);
  const wrap = (schema: Json) => ajv.compile({ ...schema, components: doc.components });
  return wrap;
}

async function loadChecker(fetchDoc: () => Promise<Json>): Promise<Checker> {
  const doc = await fetchDoc();
  const text = JSON.stringify(doc);
  const known = byText.get(text);
  if (known) return known;
  const compile = ajvFor(doc);
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries<Json>(doc.paths ?? {})) {
    const params = (template.match(/\{[^}]+\}/g) ?? []).length;
    const regex = new RegExp('^' + template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+') + '/?$');
    for (const [method, op] of Object.entries<Json>(item)) {
      if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) operations.push({ template, regex, params, method: method.toUpperCase(), responses: op.responses ?? {} });
    }
  }
  operations.sort((a, b) => a.params - b.params); // static segments win, as in the router
  const cache = new Map<string, ValidateFunction | null>();
  const checker: Checker = {
    legacyPrefix: doc['x-legacy-prefix'],
    operations,
    error: compile({ $ref: '#/components/schemas/Error' }),
    validator(op, status) {
      const key = `${op.method} ${op.template} ${status}`;
      if (!cache.has(key)) {
        const schema = op.responses[status]?.content?.['application/json']?.schema;
        cache.set(key, schema ? compile(schema) : null);
      }
      return cache.get(key)!;
    },
  };
  // Compiled now rather than on first use, so the check adds no compile time between a test's requests
  // (rate-limit tests count on requests following each other closely).
  for (const op of operations) for (const status of Object.keys(op.responses)) checker.validator(op, status);
  byText.set(text, checker);
  return checker;
}

/** The document's version and path for a request path, or undefined when no document covers it. */
function locate(path: string, legacyPrefix: string): { version: string; path: string } | undefined {
  if (path.startsWith(legacyPrefix + '/')) return { version: LEGACY_VERSION, path: `/api/${LEGACY_VERSION}${path.slice(legacyPrefix.length)}` };
  if (path === '/auth/oauth2/token') return { version: LATEST, path };
  const m = /^\/api\/([^/]+)\//.exec(path);
  if (m && VERSION_IDS.includes(m[1]) && !/^\/api\/[^/]+\/openapi\.json$/.test(path)) return { version: m[1], path };
  return undefined;
}

function describeErrors(v: ValidateFunction): string {
  return (v.errors ?? [])
    .slice(0, 5)
    .map((e) => `body${e.instancePath || ''} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${e.params.additionalProperty})` : ''}`)
    .join('; ');
}

export interface Answer {
  method: string;
  /** Request URL (absolute) or path with query. */
  url: string;
  status: number;
  contentType: string | null;
  text: string;
}

/**
 * Checks one answer of the server at `base` against its served document. `fetchDoc(version)` may be given
 * (app.inject users); by default the document is fetched from base.
 */
export async function checkContract(base: string, a: Answer, fetchDoc?: (version: string) => Promise<Json>): Promise<void> {
  const path = new URL(a.url, base).pathname;
  const load = (version: string) => {
    const key = `${base} ${version}`;
    if (!checkers.has(key)) {
      const p = loadChecker(async () => {
        if (fetchDoc) return fetchDoc(version);
        const r = await fetch(`${base}/api/${version}/openapi.json`);
        if (r.status !== 200) throw new Error(`contract: cannot load the ${version} document from ${base}: ${r.status}`);
        return r.json();
      });
      checkers.set(key, p);
      p.catch(() => checkers.delete(key));
    }
    return checkers.get(key)!;
  };
  const where = locate(path, /^\/[a-z0-9]+_api\/v2\//.test(path) ? (await load(LATEST)).legacyPrefix : '/\0');
  const isJsonType = /^application\/json\b/.test(a.contentType ?? '');
  if (!where && (a.status < 400 || a.method === 'HEAD' || !isJsonType)) return; // outside every document
  const label = `${a.method} ${path} → ${a.status}`;
  const isJson = isJsonType;
  const parse = () => {
    try {
      return JSON.parse(a.text);
    } catch {
      throw new Error(`contract: ${label}: the body is not JSON: ${a.text.slice(0, 200)}`);
    }
  };
  const version = where?.version ?? LATEST;
  const checker = await load(version);
  const method = a.method === 'HEAD' ? 'GET' : a.method;
  const op = where ? checker.operations.find((o) => o.method === method && o.regex.test(where.path)) : undefined;
  if (!op) {
    // No operation (other path, unknown version, method not allowed…): errors still have the one shape.
    if (a.status >= 400 && a.method !== 'HEAD' && (isJson || where)) {
      if (!isJson) throw new Error(`contract: ${label}: an error answered ${a.contentType}, not JSON`);
      if (!checker.error(parse())) throw new Error(`contract: ${label}: not the Error shape: ${describeErrors(checker.error)}`);
    }
    return;
  }
  const route = `${op.method} ${op.template}`;
  const declared = op.responses[String(a.status)];
  if (!declared) {
    throw new Error(`contract: ${route} answered ${a.status} (${path}), which its document (${version}) does not declare; declared: ${Object.keys(op.responses).join(', ')}. Body: ${a.text.slice(0, 200)}`);
  }
  if (a.method === 'HEAD') return;
  const media = Object.keys(declared.content ?? {});
  if (media.length > 0 && !media.includes('application/json')) {
    // A non-JSON answer (NDJSON download…): the Content-Type must be the declared one.
    if (!media.some((m) => (a.contentType ?? '').startsWith(m))) throw new Error(`contract: ${route} → ${a.status}: Content-Type ${a.contentType}, the document says ${media.join(' or ')}`);
    return;
  }
  const validate = checker.validator(op, String(a.status));
  if (!validate) {
    if (a.text !== '') throw new Error(`contract: ${route} → ${a.status} declares no body but sent: ${a.text.slice(0, 200)}`);
    return;
  }
  if (!isJson) throw new Error(`contract: ${route} → ${a.status}: Content-Type ${a.contentType}, the document says application/json`);
  if (!validate(parse())) throw new Error(`contract: ${route} → ${a.status} (${path}): ${describeErrors(validate)}. Body: ${a.text.slice(0, 300)}`);
}
