// Webhook replay routes (issue 26 item 2; admin scope, from 2026-11): start a replay of a window of events to a
// subscription (202), read one, list a subscription's, cancel one. Thin handlers over replay-service.ts.
import '../http/formats.ts';
import { ErrorBody } from '../http/schema.ts';
import type { Services } from '../services.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import { decodeCursor, Page, pageOf } from '../http/pagination.ts';
import { listOf } from '../http/cursor-scope.ts';
import { auditOf } from '../audit/record.ts';
import { keyOf } from '../crm/idempotency/service.ts';
import { UuidParams } from './schema.ts';
import * as S from './replay-schema.ts';
import * as svc from './replay-service.ts';
import { mustFind } from './service.ts';
import * as store from './replay-store.ts';

const BASE = '/integrations/webhooks';

export function replayRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Webhooks', scope: 'admin' as const, since: '2026-11' };
  const uuidOf = (req: any) => (req.params as { uuid: string }).uuid;
  const target = (_req: unknown, b: S.ReplayT) => ({
    type: 'WebhookReplay', id: b.uuid,
    details: { subscriptionUuid: b.subscriptionUuid, since: b.since, until: b.until, eventTypes: b.eventTypes, eventsQueued: b.eventsQueued },
  });
  return [
    {
      ...base, id: 'webhooks.replays.start', idempotencyKey: true, method: 'POST', path: `${BASE}/subscriptions/:uuid/replay`,
      audit: { action: 'replay.started', target },
      summary: 'Replay a window of events to this subscription: one new delivery per event of its types, sent after its live deliveries (Idempotency-Key honoured)',
      schema: { params: UuidParams, body: S.ReplayCreate, response: { 202: S.Replay, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody } },
      handler: async (req, reply) => {
        const answer = await svc.startReplay(s.db, uuidOf(req), req.body as S.ReplayCreateT, s.config.eventRetentionDays, keyOf(req), auditOf(req));
        if (answer.replayed) reply.header('idempotent-replayed', 'true');
        reply.code(answer.status);
        return answer.body;
      },
    },
    {
      ...base, id: 'webhooks.replays.list', method: 'GET', path: `${BASE}/subscriptions/:uuid/replays`,
      summary: "A subscription's replays, newest first",
      schema: { params: UuidParams, querystring: S.ReplayListQuery, response: { 200: Page(S.Replay) } },
      handler: async (req) => {
        const q = req.query as { limit?: number; cursor?: string };
        const sub = await mustFind(s.db, uuidOf(req));
        listOf(req, sub.id);
        const rows = await store.listReplays(s.db, sub.id, decodeCursor(q.cursor), q.limit ?? 50);
        return pageOf(rows, q.limit ?? 50, svc.shapeReplay);
      },
    },
    {
      ...base, id: 'webhooks.replays.get', method: 'GET', path: `${BASE}/replays/:uuid`,
      summary: 'A replay with its progress (status, eventsQueued)',
      schema: { params: UuidParams, response: { 200: S.Replay } },
      handler: async (req) => svc.shapeReplay(await svc.findReplay(s.db, uuidOf(req))),
    },
    {
      ...base, id: 'webhooks.replays.cancel', method: 'POST', path: `${BASE}/replays/:uuid/cancel`,
      audit: { action: 'replay.cancelled', target },
      summary: 'Cancel a replay: no more deliveries are queued; those queued already stay',
      schema: { params: UuidParams, response: { 200: S.Replay, 409: ErrorBody } },
      handler: async (req) => svc.cancelReplay(s.db, uuidOf(req), auditOf(req)),
    },
  ];
}
