// Honours the `audit` field of route declarations: after the handler succeeds, one audit row with the
// caller (API key or auth client), the act, its target and the request's IP address.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/db.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import type { AuditDecl } from './actions.ts';
import { appendAudit, type Actor } from './store.ts';

export function actorOf(req: FastifyRequest): Actor {
  const p = req.principal;
  if (!p) throw new Error('an audited route needs an authenticated caller');
  return { type: p.kind === 'oauth' ? 'authClient' : 'apiKey', uuid: p.uuid };
}

/** Records the act a request performed (a replayed Idempotency-Key answer is not a new act). */
export async function recordRequestAct(db: Db, decl: AuditDecl, req: FastifyRequest, reply: FastifyReply, body: unknown): Promise<void> {
  if (reply.statusCode >= 400 || reply.getHeader('idempotent-replayed') === 'true') return; // refused, or not a new act
  const target = decl.target(req, body);
  if (!target) return;
  await appendAudit(db, { actor: actorOf(req), action: target.action ?? decl.action, targetType: target.type, targetId: target.id, ip: req.ip ?? null, details: target.details });
}

/** Wraps the handler of every route that declares `audit`. */
export function withAudit(db: Db, routes: RouteDef[]): RouteDef[] {
  return routes.map((def) => {
    const decl = def.audit;
    if (!decl) return def;
    return {
      ...def,
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const body = await def.handler(req, reply);
        await recordRequestAct(db, decl, req, reply, body);
        return body;
      },
    };
  });
}
