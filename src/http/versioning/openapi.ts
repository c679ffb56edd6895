// The OpenAPI 3.1 document of exactly one version, generated from the declared routes. Schemas carrying a
// `title` are lifted into components.schemas and referred to by $ref (see src/http/schema.ts); error
// responses are declared per status with examples; the OAuth token endpoint and its security scheme too.
import type { Registry, VersionedRoute } from './registry.ts';
import { versionInfo } from './versions.ts';
import { ErrorBody } from '../schema.ts';
import { errorBody } from '../errors.ts';
import { DESCRIPTIONS, RETRY_AFTER_HEADER, TAGS, TOKEN_PATH, tokenOperation } from './openapi-extras.ts';
import { WEBHOOK_EVENTS_TAG, webhooksSection } from './openapi-webhooks.ts';

type Json = any;
type Components = Record<string, Json>;

const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions']);
const SCHEMA_ONE = new Set(['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else', 'unevaluatedProperties', 'unevaluatedItems']);
const SCHEMA_LIST = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);

/**
 * Copies a schema without TypeBox's symbol keys, replacing every subschema that has a `title` by a $ref to
 * components.schemas[title] (registered there once; two different schemas under one name is an error).
 */
export function lift(schema: Json, components: Components): Json {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(k) && v && typeof v === 'object') out[k] = Object.fromEntries(Object.entries(v).map(([n, s]) => [n, lift(s, components)]));
    else if (SCHEMA_ONE.has(k) && v && typeof v === 'object') out[k] = lift(v, components);
    else if (SCHEMA_LIST.has(k) && Array.isArray(v)) out[k] = v.map((s) => lift(s, components));
    else out[k] = JSON.parse(JSON.stringify(v));
  }
  const name = (schema as { title?: unknown }).title;
  if (typeof name !== 'string') return out;
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`schema title "${name}" is not a valid component name (a schema's title names its component: letters, digits, . _ -)`);
  const known = components[name];
  if (known && JSON.stringify(known) !== JSON.stringify(out)) throw new Error(`two different schemas are named "${name}" in one OpenAPI document`);
  components[name] = out;
  return { $ref: `#/components/schemas/${name}` };
}

/** "customers.orders.list" → "customersOrdersList". */
export function operationId(routeId: string): string {
  return routeId
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((p, i) => (i === 0 ? p[0].toLowerCase() + p.slice(1) : p[0].toUpperCase() + p.slice(1)))
    .join('');
}

const ERROR_EXAMPLES: Record<number, [string, string, string, string]> = {
  400: ['Invalid input', '"externalId" must NOT have fewer than 1 characters', 'InvalidParameterError', 'body.externalId'],
  401: ['Missing, unknown, revoked or expired token', 'an Authorization: Bearer token is required', 'Unauthorized', ''],
  403: ['The token lacks the scope (Forbidden), or the resource\'s state refuses the request (CustomerDisabled: the customer is disabled)', 'this route needs the "write" scope', 'Forbidden', 'token scopes: read'],
  404: ['Not found', 'customer "ext-404" not found', 'NotFound', 'id'],
  409: ['Conflict with the current state', 'a record with this identifier already exists', 'Conflict', 'externalId'],
  413: ['Body over 1 MiB', 'request body exceeds 1 MiB', 'PayloadTooLarge', ''],
  415: ['Body is not JSON', 'request body must be application/json', 'UnsupportedMediaType', ''],
  429: ['Rate limit reached', 'too many requests for this token', 'RateLimited', 'retry after 1 s'],
  500: ['Internal error (no internals are disclosed)', 'internal error', 'InternalError', ''],
  503: ['The database is unavailable (restarting or failing over): retry after Retry-After; a write cut off at its commit may have landed: retry creates, merges, undos and replays with the same Idempotency-Key, customers also as an upsert (PUT, bulk)', 'the database is unavailable (restarting or failing over); retry shortly', 'ServiceUnavailable', ''],
};

function errorResponse(status: number, components: Components, description?: string): Json {
  const [title, message, errorCode, moreInfo] = ERROR_EXAMPLES[status] ?? ['Error', 'request failed', 'InvalidParameterError', ''];
  const res: Json = {
    description: description ?? title,
    content: { 'application/json': { schema: lift(ErrorBody, components), example: errorBody([{ message, errorCode, moreInfo }]) } },
  };
  if (status === 401) res.headers = { 'WWW-Authenticate': { description: 'Bearer realm="bulb"', schema: { type: 'string' } } };
  if (status === 429 || status === 503) res.headers = RETRY_AFTER_HEADER;
  return res;
}

const isErrorSchema = (schema: Json) => schema && (schema.title === 'Error' || schema === ErrorBody);

function parameters(where: 'path' | 'query', schema: Json, components: Components): Json[] {
  if (!schema?.properties) return [];
  const required: string[] = schema.required ?? [];
  return Object.entries(schema.properties).map(([name, s]: [string, Json]) => ({
    name,
    in: where,
    required: where === 'path' || required.includes(name),
    description: s.description ?? (where === 'path' ? `the ${name} of the resource` : name),
    schema: lift(s, components),
  }));
}

const REQUEST_ID_PARAM = {
  name: 'X-Request-Id', in: 'header', required: false, schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  description: "the caller's id for this request, answered in X-Request-Id and logged with it (another value: a new UUID is used)",
};
const IDEMPOTENCY_PARAM = {
  name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 },
  description: 'the first answer to this key (per token) is replayed for 24 h, marked Idempotent-Replayed: true; the same key with another request is a 409',
};

/** The headers every answer of this version carries (and an idempotent route's replay marker), for a 2xx. */
function answerHeaders(deprecated: boolean, idempotent: boolean): Json {
  return {
    'X-Api-Version': { description: 'the version that served the request', schema: { type: 'string' } },
    'X-Request-Id': { description: 'the id of this request in the logs', schema: { type: 'string' } },
    ...(deprecated ? {
      Deprecation: { description: 'RFC 9745: when this version was deprecated (@epoch seconds)', schema: { type: 'string' } },
      Link: { description: 'rel="deprecation": the versions document', schema: { type: 'string' } },
    } : {}),
    ...(idempotent ? { 'Idempotent-Replayed': { description: 'true when this answer is the replay of an earlier one to the same Idempotency-Key', schema: { type: 'string', enum: ['true'] } } } : {}),
  };
}

function operation(vr: VersionedRoute, components: Components, deprecated: boolean): Json {
  const { def, schema } = vr;
  const responses: Record<string, Json> = {};
  for (const [status, s] of Object.entries(schema.response ?? {})) {
    const code = Number(status);
    if (code === 204) responses[status] = { description: 'Done; no body' };
    else if (code >= 400 || isErrorSchema(s)) responses[status] = errorResponse(code, components);
    else if ((s as Json).contentMediaType) responses[status] = { description: (s as Json).description ?? 'Success', content: { [(s as Json).contentMediaType]: { schema: { type: 'string' } } } };
    else responses[status] = { description: (s as Json).description ?? 'Success', content: { 'application/json': { schema: lift(s, components) } } };
  }
  for (const [status, r] of Object.entries(responses)) if (status.startsWith('2')) r.headers = answerHeaders(deprecated, def.idempotencyKey === true);
  // A route that declares no 2xx is documented as answering 200 without a body: the contract test then
  // fails on that route alone (it sends a body the document does not declare), naming it.
  if (!Object.keys(responses).some((s) => s.startsWith('2'))) responses['200'] = { description: 'Success (no response schema declared)' };
  const hasBody = def.method !== 'GET';
  const generic = [400, 401, ...(def.scope === 'read' ? [] : [403]), ...(def.path.includes(':') ? [404] : []), ...(hasBody ? [413, 415] : []), ...(def.idempotencyKey ? [409] : []), 429, 500, 503];
  // A route whose body may be larger in this version (Tulip's bulk of 1,000: 10 MiB) says its own limit.
  if (hasBody && schema.bodyLimitScale) responses['413'] ??= errorResponse(413, components, `Body over ${schema.bodyLimitScale} MiB`);
  for (const code of generic) responses[String(code)] ??= errorResponse(code, components);
  const body = schema.documentedBody ?? schema.body;
  const scopes = def.scope === 'read' ? ['read'] : def.scope === 'write' ? ['write'] : ['admin'];
  return {
    operationId: operationId(def.id),
    summary: def.summary,
    description: def.description ?? DESCRIPTIONS[def.id] ?? def.summary,
    tags: [def.tag],
    security: [{ bearer: [] }, { oauth2: scopes }],
    'x-scope': def.scope,
    ...(deprecated ? { deprecated: true } : {}),
    parameters: [
      ...parameters('path', schema.params, components), ...parameters('query', schema.querystring, components),
      ...(def.idempotencyKey ? [IDEMPOTENCY_PARAM] : []), REQUEST_ID_PARAM,
    ],
    ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: lift(body, components) } } } } : {}),
    ...(schema.rawBodyTypes
      ? { requestBody: { required: true, content: Object.fromEntries(Object.entries(schema.rawBodyTypes).map(([type, description]) => [type, { schema: { type: 'string', description } }])) } }
      : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b))),
  };
}

export function openApiDocument(registry: Registry, version: string, serviceName: string) {
  const info = versionInfo(version)!;
  const components: Components = {};
  const paths: Record<string, Json> = {};
  const tags = new Set<string>();
  for (const vr of registry.byVersion.get(version) ?? []) {
    const p = `/api/${version}${vr.def.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
    (paths[p] ??= {})[vr.def.method.toLowerCase()] = operation(vr, components, info.deprecatedOn !== undefined);
    tags.add(vr.def.tag);
  }
  paths[TOKEN_PATH] = { post: tokenOperation((s) => lift(s, components), (status) => errorResponse(status, components)) };
  tags.add('OAuth');
  const webhooks = webhooksSection(registry, version, serviceName, (s) => lift(s, components));
  tags.add(WEBHOOK_EVENTS_TAG);
  return {
    openapi: '3.1.0',
    info: {
      title: `Bulb Core API ${version}`,
      version,
      summary: 'Customers, merge, signed webhooks, date-versioned endpoints',
      description:
        `Core API version ${version}${info.deprecatedOn ? ` (deprecated since ${info.deprecatedOn})` : ''}. ` +
        `Every path names its version (/api/${version}/…); the legacy prefix /${serviceName}_api/v2/ serves version 2022-04. ` +
        'Authenticate with an API key or an OAuth 2.0 client-credentials access token (POST /auth/oauth2/token) as ' +
        '`Authorization: Bearer <token>`. Errors always answer `{"errors":[{"message","errorCode","moreInfo"}]}`, one entry per problem. ' +
        'Lists answer `{"data":[…],"nextCursor":string|null}`; pass nextCursor as `cursor` for the next page.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'this Bulb server (every path carries its version)' }],
    'x-legacy-prefix': `/${serviceName}_api/v2`,
    tags: [...tags].sort().map((name) => ({ name, description: TAGS[name] ?? `${name} routes` })),
    paths,
    webhooks,
    components: {
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key (bulb_key_…) or an OAuth 2.0 access token (bulb_at_…)' },
        clientBasic: { type: 'http', scheme: 'basic', description: 'OAuth client id and secret (token endpoint only)' },
        oauth2: {
          type: 'oauth2',
          description: 'OAuth 2.0 client credentials (RFC 6749 §4.4): client id and secret by HTTP Basic or form fields',
          flows: { clientCredentials: { tokenUrl: TOKEN_PATH, scopes: { read: 'read CRM data', write: 'read and change CRM data', admin: 'everything, including /integrations' } } },
        },
      },
    },
  };
}
