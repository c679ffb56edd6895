// Events API (SPEC §12, read scope, from 2026-11): GET /events (filters, cursor) and GET /events/{uuid},
// events in the webhook body shape without `subscription`, so an integrator can catch up without webhooks.
import '../http/formats.ts';
import { Type, type Static } from '@sinclair/typebox';
import type { Services } from '../services.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import { invalid, notFound } from '../http/errors.ts';
import { instantOf } from '../http/validator.ts';
import { cursorText, Page } from '../http/pagination.ts';
import { isoNN } from '../http/time.ts';
import { EVENT_TYPES } from './emit.ts';
import * as store from './store.ts';

export const LISTED_TYPES = EVENT_TYPES.filter((t) => !store.HIDDEN_TYPES.includes(t));

export const Event = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  createdAt: Type.String({ format: 'date-time' }),
  eventType: Type.String(),
  resourceType: Type.String(),
  resource: Type.Object({ uuid: Type.String({ format: 'uuid' }), externalId: Type.Union([Type.String(), Type.Null()]) }),
  source: Type.String(),
});
export type EventT = Static<typeof Event>;

const ListQuery = Type.Object(
  {
    eventType: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: `one event type or several, comma-separated: ${LISTED_TYPES.join(', ')}` })),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'events created at or after this time' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'events created before this time' })),
    resourceUuid: Type.Optional(Type.String({ format: 'uuid', description: `events of this resource only; a page reads at most ${store.SCAN_BUDGET} of its events, so with eventType or since/until it may hold fewer than limit, or none, and still give a nextCursor to go on from` })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, default: 50, description: 'page size, 1–250' })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'opaque cursor from a previous nextCursor' })),
  },
  { additionalProperties: false },
);
type ListQueryT = Static<typeof ListQuery>;

const UuidParams = Type.Object({ uuid: Type.String({ format: 'uuid', description: 'event uuid' }) });

export function shapeEvent(r: store.EventRow): EventT {
  return {
    uuid: r.uuid,
    createdAt: isoNN(r.created_at),
    eventType: r.event_type,
    resourceType: r.resource_type,
    resource: { uuid: r.resource_uuid, externalId: r.resource_external_id },
    source: r.source,
  };
}

/** Event cursors carry the (xid, id) position of the last event of the page; opaque to clients. */
function encodeCursor(r: { xid: string; id: string }): string {
  return Buffer.from(`e1:${r.xid}:${r.id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string | undefined): { xid: string; id: string } | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const m = /^e1:(\d{1,19}):(\d{1,18})$/.exec(cursorText(cursor) ?? '');
  if (!m || BigInt(m[1]) > 2n ** 63n - 1n) throw invalid('cursor is not valid', 'cursor');
  return { xid: m[1], id: m[2] };
}

function parseTypes(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const types = [...new Set(raw.split(',').map((t) => t.trim()))];
  const bad = types.filter((t) => !(LISTED_TYPES as readonly string[]).includes(t));
  if (bad.length > 0) throw invalid(`eventType ${bad.map((t) => JSON.stringify(t)).join(', ')} is not one of ${LISTED_TYPES.join(', ')}`, 'eventType');
  return types;
}

export function eventRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Events', scope: 'read' as const, since: '2026-11' };
  return [
    {
      ...base, id: 'events.list', method: 'GET', path: '/events',
      summary: 'List events, oldest first (filters eventType, since, until, resourceUuid; cursor pagination)',
      schema: { querystring: ListQuery, response: { 200: Page(Event) } },
      handler: async (req) => {
        const q = req.query as ListQueryT;
        const eventTypes = parseTypes(q.eventType);
        if (q.since !== undefined && q.until !== undefined && instantOf(q.since) > instantOf(q.until)) {
          throw invalid('since must not be after until', 'since');
        }
        const limit = q.limit ?? 50;
        const rows = await store.listEvents(s.db, { eventTypes, since: q.since, until: q.until, resourceUuid: q.resourceUuid, after: decodeCursor(q.cursor), limit });
        const page = rows.slice(0, limit);
        // The cursor of a non-empty page is given even on the last page, so that a client can keep it and
        // ask again later for events committed since; an empty page answers null (keep the previous one).
        // A resource's walk that read its budget (store.SCAN_BUDGET) before the page was full goes on after the last
        // event it read: that page may be short, or empty, and still has a cursor.
        const last = rows.length <= limit && rows.scanEnd ? rows.scanEnd : page.at(-1);
        return { data: page.map(shapeEvent), nextCursor: last ? encodeCursor(last) : null };
      },
    },
    {
      ...base, id: 'events.get', method: 'GET', path: '/events/:uuid',
      summary: 'Get one event by uuid',
      schema: { params: UuidParams, response: { 200: Event } },
      handler: async (req) => {
        const { uuid } = req.params as Static<typeof UuidParams>;
        const row = await store.findEvent(s.db, uuid);
        if (!row) throw notFound(`event "${uuid}" not found`, 'uuid');
        return shapeEvent(row);
      },
    },
  ];
}
