// What a route and a version change declare. Handlers speak only the newest shapes; version changes
// translate requests up and responses down for older versions (Cadwyn/Stripe style).
import type { TSchema } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditDecl } from '../../audit/actions.ts';

export type Scope = 'read' | 'write' | 'admin';
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteSchema {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  /**
   * The body as the OpenAPI document shows it, when the handler checks it itself and `body` is
   * deliberately looser (bulk: items are validated one by one, so one bad item does not fail the call).
   */
  documentedBody?: TSchema;
  /**
   * The route's body limit as a multiple of the server's (1 MiB); absent: the server's. For a version
   * whose bulk takes 10× the items (changes/2026-11-bulk-limit.ts).
   */
  bodyLimitScale?: number;
  /** A route that reads its body raw (RouteDef.rawBody): media type → what such a body holds, for the document. */
  rawBodyTypes?: Record<string, string>;
  /**
   * status → schema of every status the route answers (2xx and route-specific errors such as
   * `404: ErrorBody`, `409: ErrorBody`), used for the OpenAPI document and checked by the contract test
   * (responses are not re-serialised through it). 400, 401, 403 (write/admin), 404 (paths with
   * parameters), 413/415 (methods with a body) and 429 are added by the document itself.
   * A 204 is declared as `204: NoContent`.
   */
  response?: Record<number, TSchema>;
}

export interface RouteDef {
  /** Stable name a version change refers to, e.g. "customers.get". */
  id: string;
  method: Method;
  /** Path after /api/{version}, Fastify syntax: "/crm/customers/:id". */
  path: string;
  scope: Scope;
  /** First version serving the route. */
  since: string;
  /** Last version serving the route (inclusive); absent: still served. */
  until?: string;
  summary: string;
  /** Longer text for the document (from SPEC); optional. */
  description?: string;
  tag: string;
  schema: RouteSchema;
  /** An administrative or destructive act: the handler records it in its transaction with auditOf(req) (src/audit/, SPEC §15). */
  audit?: AuditDecl;
  /** Takes an Idempotency-Key header: the first answer to a key is replayed for 24 h (src/crm/idempotency/); documented. */
  idempotencyKey?: boolean;
  /** The body is not parsed: the handler reads req.raw (imports; content types listed in app.ts). */
  rawBody?: boolean;
  /**
   * The body is a list of items the handler checks one by one, NUL and lone surrogates included (bulk): one bad item
   * is its own result, so the check every other body gets (refused whole) is not made (app.ts).
   */
  checksItems?: boolean;
  /** Returns the response body (already in the newest shape); set the status with reply.code(). */
  handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

export interface RouteMigration {
  /** Replaces parts of the route's schema for versions older than the change. */
  schema?: Partial<RouteSchema>;
  /** Rewrites an older request into the shape of the change's version (mutate req.body/query/params). */
  upgradeRequest?: (req: FastifyRequest) => void;
  /** Rewrites a response of the change's version into the older shape. */
  downgradeResponse?: (body: unknown, req: FastifyRequest, reply: FastifyReply) => unknown;
}

export interface VersionChange {
  /** The version that introduced the change; requests of older versions are migrated through it. */
  version: string;
  description: string;
  routes: Record<string, RouteMigration>;
}
