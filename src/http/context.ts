// Per-request facts handlers need: who calls, and the event source their changes are tagged with.
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.ts';
import type { Services } from '../services.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** From now on every answer says Connection: close (the drain's start, before the server stops listening). */
    drain(): void;
  }
  interface FastifyRequest {
    principal?: Principal;
    /** POST /crm/customers/bulk creates only (Tulip's 2025-08 and 2025-12; changes/2026-11-bulk-post-upserts.ts). */
    bulkCreateOnly?: boolean;
    /**
     * false: the JSON body has no escape that parses into a string PostgreSQL cannot store (errors.ts
     * mayHoldUnstorable), so its strings are not walked; undefined: not known (walked).
     */
    bodyMayHoldUnstorable?: boolean;
  }
  interface FastifyContextConfig {
    routeId?: string;
    scope?: import('./versioning/route.ts').Scope;
    apiVersion?: string;
    rawBody?: boolean;
    checksItems?: boolean;
    /** The route takes no body: an empty one is none, fields are refused (registry.ts NO_BODY). */
    noBody?: boolean;
    /** The body types a route takes, for its 415's message (default application/json). */
    bodyTypes?: string;
  }
}

/** Header the admin console sends so that its changes carry the {SERVICE}_APP source. */
export const CLIENT_HEADER = 'x-bulb-client';

/**
 * {SERVICE}_APP for the console's requests, {SERVICE}_API for every other. The console signs in with an admin key
 * only, so the header counts only with an admin principal: a read or write key sending it (an integration) stays
 * {SERVICE}_API, and cannot pass its writes off as staff actions to receivers that tell the two apart (to break
 * sync loops). Until 2026-11-29 any key's header counted (found by a probe).
 */
export function sourceOf(req: FastifyRequest, s: Services): string {
  const fromConsole = req.headers[CLIENT_HEADER] === 'console' && req.principal !== undefined && req.principal.scopes.includes('admin');
  return fromConsole ? s.names.sourceApp : s.names.sourceApi;
}
