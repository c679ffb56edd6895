// GET /integrations/auditLog (admin, from 2026-11): the audit log, newest first, filtered by action, actor
// (an API key or auth client uuid, its name, or "system") and time. Append-only: no other route.
import { UUID } from '../http/formats.ts';
import { Type, type Static } from '@sinclair/typebox';
import type { Services } from '../services.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import { StringEnum } from '../http/schema.ts';
import { Page, decodeCursor, pageOf } from '../http/pagination.ts';
import { isoNN } from '../http/time.ts';
import { AUDIT_ACTIONS } from './actions.ts';
import * as store from './store.ts';

const ErrorBody = Type.Object({
  errors: Type.Array(Type.Object({ message: Type.String(), errorCode: Type.String(), moreInfo: Type.String() })),
});

export const AuditEntrySchema = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  createdAt: Type.String({ format: 'date-time', description: 'when the act happened' }),
  action: StringEnum([...AUDIT_ACTIONS]),
  actor: Type.Object({
    type: StringEnum(['apiKey', 'authClient', 'system']),
    uuid: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'the API key or auth client; null for system' }),
    name: Type.Union([Type.String(), Type.Null()], { description: 'its name when the act happened' }),
  }),
  target: Type.Object({
    type: Type.String({ description: 'ApiKey, AuthClient, WebhookSubscription, Customer, Merge, Import' }),
    id: Type.Union([Type.String(), Type.Null()], { description: 'the target uuid' }),
  }),
  ipAddress: Type.Union([Type.String(), Type.Null()], { description: 'of the request (null for system acts)' }),
  details: Type.Record(Type.String(), Type.Unknown(), { description: 'what else identifies the act (never a secret)' }),
}, { title: 'AuditEntry' });

const ListQuery = Type.Object(
  {
    action: Type.Optional(StringEnum([...AUDIT_ACTIONS], { description: 'one action' })),
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'an API key or auth client uuid, its name, or "system"' })),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'acts at or after this time' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, default: 50, description: 'page size, 1–250' })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'opaque cursor from a previous nextCursor' })),
  },
  { additionalProperties: false },
);
type ListQueryT = Static<typeof ListQuery>;

export function shapeAudit(r: store.AuditRow): Static<typeof AuditEntrySchema> {
  return {
    uuid: r.uuid,
    createdAt: isoNN(r.created_at),
    action: r.action as any,
    actor: { type: r.actor_type, uuid: r.actor_uuid, name: r.actor_name },
    target: { type: r.target_type, id: r.target_id },
    ipAddress: r.ip_address,
    details: r.details,
  };
}

export function auditRoutes(s: Services): RouteDef[] {
  return [
    {
      id: 'auditLog.list', method: 'GET', path: '/integrations/auditLog', scope: 'admin', since: '2026-11', tag: 'Integrations',
      summary: 'The audit log: administrative and destructive acts, newest first (append-only)',
      schema: { querystring: ListQuery, response: { 200: Page(AuditEntrySchema), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody } },
      handler: async (req) => {
        const q = req.query as ListQueryT;
        const limit = q.limit ?? 50;
        const actor = q.actor;
        const filter: store.AuditQuery = { action: q.action, since: q.since, limit };
        if (actor === 'system') filter.actorType = 'system';
        else if (actor && UUID.test(actor)) filter.actorUuid = actor;
        else if (actor) filter.actorName = actor;
        return pageOf(await store.listAudit(s.db, filter, decodeCursor(q.cursor)), limit, shapeAudit);
      },
    },
  ];
}
