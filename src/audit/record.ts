// Honours the `audit` field of route declarations: one audit row per act (the caller, API key or auth client, the
// act, its target and the request's IP address), written in the act's own transaction, so that the act and its
// row commit together or not at all. An audited handler takes its request's hook with auditOf(req) and calls it
// inside the transaction that does the act, with the answer it will give; if the row cannot be written the act
// rolls back and the request fails as a whole (500 InternalError, nothing changed: a retry is safe), but for a
// database that is unavailable (a failover, a restart), which answers 503 with Retry-After like any other statement.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RETRYABLE_SQLSTATES, sqlState, type Queryable } from '../db/db.ts';
import { databaseUnavailable } from '../db/unavailable.ts';
import { ApiError } from '../http/errors.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import type { AuditAction, AuditDecl } from './actions.ts';
import { appendAudit, type Actor } from './store.ts';

/**
 * Records the request's act in tx, the act's transaction; `answer` is the body the handler will answer with. `acted`
 * false: the request did nothing (a merge of customers merged already), so there is no act to record; an action: the
 * act it turned out to be, which the request alone does not tell (a PATCH with `isActive:false` disables a
 * subscription only if it was active), over the route's declared one.
 */
export type AuditHook = (tx: Queryable, answer: unknown, acted?: boolean | AuditAction) => Promise<void>;

interface Pending {
  decl: AuditDecl;
  recorded: boolean;
}

/** The audited requests being handled, with their route's declaration. */
const pending = new WeakMap<FastifyRequest, Pending>();

export function actorOf(req: FastifyRequest): Actor {
  const p = req.principal;
  if (!p) throw new Error('an audited route needs an authenticated caller');
  return { type: p.kind === 'oauth' ? 'authClient' : 'apiKey', uuid: p.uuid };
}

/** The hook of a request to a route that declares `audit` (a programming error for any other route). */
export function auditOf(req: FastifyRequest): AuditHook {
  const p = pending.get(req);
  if (!p) throw new Error(`route ${req.routeOptions.config.routeId} declares no audit`);
  return async (tx, answer, acted = true) => {
    // A HEAD runs its GET's handler but shows nothing (a HEAD of …/secret was recorded as a reveal; found by a probe).
    const target = acted && req.method !== 'HEAD' ? p.decl.target(req, answer) : null;
    if (target) {
      const action = typeof acted === 'string' ? acted : p.decl.action;
      const entry = { actor: actorOf(req), action, targetType: target.type, targetId: target.id, ip: req.ip ?? null, details: target.details };
      try {
        await appendAudit(tx, entry);
      } catch (err) {
        if (RETRYABLE_SQLSTATES.has(sqlState(err) ?? '')) throw err; // the transaction is retried whole
        if (databaseUnavailable(err)) throw err; // 503 with Retry-After, as for any statement of the act
        const e = new ApiError('InternalError', 'the act could not be recorded in the audit log, so it was not done (nothing changed: retrying is safe)', 'audit log', []);
        e.cause = err;
        throw e;
      }
    }
    p.recorded = true;
  };
}

/**
 * Wraps the handler of every route that declares `audit`: makes its hook available (auditOf), and reports a
 * handler that succeeded without recording its act (a route whose domain function does not take the hook).
 */
export function withAudit(routes: RouteDef[]): RouteDef[] {
  return routes.map((def) => {
    const decl = def.audit;
    if (!decl) return def;
    return {
      ...def,
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const p: Pending = { decl, recorded: false };
        pending.set(req, p);
        const body = await def.handler(req, reply);
        const newAct = reply.statusCode < 400 && reply.getHeader('idempotent-replayed') !== 'true';
        if (newAct && !p.recorded && decl.target(req, body)) req.log.error({ route: def.id }, 'audited route answered without recording its act (auditOf(req) not called in its transaction)');
        return body;
      },
    };
  });
}
