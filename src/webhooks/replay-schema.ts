// Wire shapes of webhook replays (issue 26 item 2, 2026-11) as TypeBox schemas.
import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from '../http/schema.ts';
import { PageQuery } from '../http/pagination.ts';
import { EventType } from './schema.ts';

const closed = { additionalProperties: false } as const;

export const ReplayCreate = Type.Object(
  {
    since: Type.String({ format: 'date-time', description: 'events created at or after this time (no older than BULB_EVENT_RETENTION_DAYS)' }),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'events created before this time (default: now); after since' })),
    eventTypes: Type.Optional(Type.Array(EventType, {
      minItems: 1, maxItems: 20, uniqueItems: true,
      description: 'only these types (each one the subscription listens to); default: every type it listens to that the events API holds',
    })),
  },
  { ...closed, title: 'ReplayRequest' },
);
export type ReplayCreateT = Static<typeof ReplayCreate>;

export const Replay = Type.Object(
  {
    uuid: Type.String({ format: 'uuid' }),
    subscriptionUuid: Type.String({ format: 'uuid' }),
    status: StringEnum(['queued', 'running', 'completed', 'cancelled', 'failed'], { description: 'queued, running (deliveries being queued in chunks), then completed, cancelled or failed' }),
    since: Type.String({ format: 'date-time' }),
    until: Type.String({ format: 'date-time' }),
    eventTypes: Type.Array(Type.String()),
    eventsQueued: Type.Integer({ description: 'deliveries queued so far (one per event of the window)' }),
    createdAt: Type.String({ format: 'date-time' }),
    startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()], { description: 'why a replay failed' }),
  },
  { title: 'WebhookReplay' },
);
export type ReplayT = Static<typeof Replay>;

export const ReplayListQuery = Type.Object({ ...PageQuery }, closed);
