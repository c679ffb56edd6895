// The OpenAPI 3.1 document of exactly one version, generated from the declared routes.
import type { Registry } from './registry.ts';
import { versionInfo } from './versions.ts';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['errors'],
  properties: {
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['message', 'errorCode', 'moreInfo'],
        properties: { message: { type: 'string' }, errorCode: { type: 'string' }, moreInfo: { type: 'string' } },
      },
    },
  },
};

/** Strips TypeBox's symbol keys and turns Fastify ":param" paths into OpenAPI "{param}". */
function clean<T>(schema: T): T {
  return schema === undefined ? schema : JSON.parse(JSON.stringify(schema));
}

function parameters(where: 'path' | 'query', schema: any): any[] {
  if (!schema?.properties) return [];
  const required: string[] = schema.required ?? [];
  return Object.entries(schema.properties).map(([name, s]: [string, any]) => ({
    name,
    in: where,
    required: where === 'path' || required.includes(name),
    description: s.description,
    schema: clean(s),
  }));
}

export function openApiDocument(registry: Registry, version: string, serviceName: string) {
  const info = versionInfo(version)!;
  const paths: Record<string, any> = {};
  for (const vr of registry.byVersion.get(version) ?? []) {
    const p = `/api/${version}${vr.def.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
    const responses: Record<string, any> = {};
    for (const [status, schema] of Object.entries(vr.schema.response ?? {})) {
      responses[status] = { description: Number(status) < 300 ? 'success' : 'error', content: { 'application/json': { schema: clean(schema) } } };
    }
    if (Object.keys(responses).length === 0) responses['200'] = { description: 'success' };
    responses['default'] = { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    (paths[p] ??= {})[vr.def.method.toLowerCase()] = {
      operationId: vr.def.id,
      summary: vr.def.summary,
      tags: [vr.def.tag],
      security: [{ bearer: [] }],
      'x-scope': vr.def.scope,
      parameters: [...parameters('path', vr.schema.params), ...parameters('query', vr.schema.querystring)],
      ...(vr.schema.body ? { requestBody: { required: true, content: { 'application/json': { schema: clean(vr.schema.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: `Bulb Core API ${version}`,
      version,
      description: `Core API version ${version}${info.deprecatedOn ? ` (deprecated since ${info.deprecatedOn})` : ''}. ` +
        `The legacy prefix /${serviceName}_api/v2/ serves version 2022-04.`,
    },
    paths,
    components: {
      schemas: { Error: ERROR_SCHEMA },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key or OAuth 2.0 client-credentials access token' } },
    },
  };
}
