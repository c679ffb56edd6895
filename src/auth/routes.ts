// /integrations/apiKeys and /integrations/authClients (admin): create (secret shown once), list, revoke.
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { NoContent, StringEnum } from '../http/schema.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import { invalid, notFound } from '../http/errors.ts';
import { UUID } from '../http/formats.ts';
import { Page, PageQuery, decodeCursor, pageOf } from '../http/pagination.ts';
import { isoNN, iso } from '../http/time.ts';
import { auditOf } from '../audit/record.ts';
import { createApiKey, createAuthClient } from './service.ts';
import * as store from './store.ts';

const ScopeT = StringEnum(['read', 'write', 'admin'], { title: 'Scope', description: 'read (GET), write (read + CRM changes), admin (everything)' });
const CreateBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), scopes: Type.Array(ScopeT, { minItems: 1, maxItems: 3, uniqueItems: true }) },
  { additionalProperties: false, title: 'CredentialCreate', description: 'A name and the scopes (read ⊂ write ⊂ admin)' },
);
const UuidParams = Type.Object({ uuid: Type.String({ format: 'uuid' }) });
const ApiKey = Type.Object({
  uuid: Type.String(), name: Type.String(), prefix: Type.String(), scopes: Type.Array(ScopeT),
  createdAt: Type.String({ format: 'date-time' }), lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
}, { title: 'ApiKey', description: 'An API key, without its secret' });
const AuthClient = Type.Object(
  { uuid: Type.String(), name: Type.String(), clientId: Type.String(), scopes: Type.Array(ScopeT), createdAt: Type.String({ format: 'date-time' }) },
  { title: 'AuthClient', description: 'An OAuth 2.0 client, without its secret' },
);
const ApiKeyCreated = Type.Composite([ApiKey, Type.Object({ key: Type.String({ description: 'the secret, shown only in this answer' }) })], { title: 'ApiKeyCreated' });
const AuthClientCreated = Type.Composite([AuthClient, Type.Object({ clientSecret: Type.String({ description: 'the secret, shown only in this answer' }) })], { title: 'AuthClientCreated' });

/**
 * A key's or client's name is how the audit log's `actor=` filter finds its acts: "system" and a uuid already mean
 * something there (the system's acts, a key or client by uuid), so a key so named could not be found by its name,
 * and one named as another's uuid was listed under that other (found by a probe).
 */
function checkName(name: string): void {
  if (name === 'system' || UUID.test(name)) throw invalid(`"name" must not be "system" nor a uuid: the audit log's actor filter reads those as the system's acts or a key's uuid`, 'name');
}

const shapeKey = (r: store.ApiKeyRow) => ({ uuid: r.uuid, name: r.name, prefix: r.prefix, scopes: r.scopes, createdAt: isoNN(r.created_at), lastUsedAt: iso(r.last_used_at) });
const shapeClient = (r: store.AuthClientRow) => ({ uuid: r.uuid, name: r.name, clientId: r.client_id, scopes: r.scopes, createdAt: isoNN(r.created_at) });

type Q = { limit: number; cursor?: string };

export function credentialRoutes(s: Services): RouteDef[] {
  const base = { scope: 'admin' as const, since: '2022-08', tag: 'Integrations' };
  return [
    {
      ...base, id: 'apiKeys.create', method: 'POST', path: '/integrations/apiKeys', summary: 'Create an API key (the key is shown only in this answer)',
      audit: { action: 'apiKey.created', target: (_req, b) => ({ type: 'ApiKey', id: b.uuid, details: { name: b.name, scopes: b.scopes } }) },
      schema: { body: CreateBody, response: { 201: ApiKeyCreated } },
      handler: async (req: FastifyRequest, reply) => {
        const b = req.body as { name: string; scopes: any[] };
        checkName(b.name);
        const out = await s.db.transaction(async (tx) => {
          const { row, key } = await createApiKey(tx, b.name, b.scopes);
          const answer = { ...shapeKey(row), key };
          await auditOf(req)(tx, answer);
          return answer;
        });
        reply.code(201);
        return out;
      },
    },
    {
      ...base, id: 'apiKeys.list', method: 'GET', path: '/integrations/apiKeys', summary: 'List active API keys',
      schema: { querystring: Type.Object(PageQuery), response: { 200: Page(ApiKey) } },
      handler: async (req) => {
        const q = req.query as Q;
        return pageOf(await store.listApiKeys(s.db, decodeCursor(q.cursor), q.limit + 1), q.limit, shapeKey);
      },
    },
    {
      ...base, id: 'apiKeys.revoke', method: 'DELETE', path: '/integrations/apiKeys/:uuid', summary: 'Revoke an API key',
      audit: { action: 'apiKey.revoked', target: (req, b) => ({ type: 'ApiKey', id: (req.params as any).uuid, details: b }) },
      schema: { params: UuidParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await s.db.transaction(async (tx) => {
          const name = await store.revokeApiKey(tx, (req.params as any).uuid);
          if (name === undefined) throw notFound('API key not found');
          await auditOf(req)(tx, { name }); // which key, by name: a revoked key is listed nowhere else
        });
        s.auth.forget();
        reply.code(204);
        return undefined;
      },
    },
    {
      ...base, id: 'authClients.create', method: 'POST', path: '/integrations/authClients', summary: 'Create an OAuth client (the secret is shown only in this answer)',
      audit: { action: 'authClient.created', target: (_req, b) => ({ type: 'AuthClient', id: b.uuid, details: { name: b.name, scopes: b.scopes, clientId: b.clientId } }) },
      schema: { body: CreateBody, response: { 201: AuthClientCreated } },
      handler: async (req, reply) => {
        const b = req.body as { name: string; scopes: any[] };
        checkName(b.name);
        const out = await s.db.transaction(async (tx) => {
          const { row, clientSecret } = await createAuthClient(tx, b.name, b.scopes);
          const answer = { ...shapeClient(row), clientSecret };
          await auditOf(req)(tx, answer);
          return answer;
        });
        reply.code(201);
        return out;
      },
    },
    {
      ...base, id: 'authClients.list', method: 'GET', path: '/integrations/authClients', summary: 'List active OAuth clients',
      schema: { querystring: Type.Object(PageQuery), response: { 200: Page(AuthClient) } },
      handler: async (req) => {
        const q = req.query as Q;
        return pageOf(await store.listAuthClients(s.db, decodeCursor(q.cursor), q.limit + 1), q.limit, shapeClient);
      },
    },
    {
      ...base, id: 'authClients.revoke', method: 'DELETE', path: '/integrations/authClients/:uuid', summary: 'Revoke an OAuth client and its tokens',
      audit: { action: 'authClient.revoked', target: (req, b) => ({ type: 'AuthClient', id: (req.params as any).uuid, details: b }) },
      schema: { params: UuidParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await s.db.transaction(async (tx) => {
          const name = await store.revokeAuthClient(tx, (req.params as any).uuid);
          if (name === undefined) throw notFound('auth client not found');
          await auditOf(req)(tx, { name });
        });
        s.auth.forget();
        reply.code(204);
        return undefined;
      },
    },
  ];
}
