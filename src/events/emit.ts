// The outbox seam: every change writes its event here, inside the transaction of the change, together
// with one webhook delivery per subscription active for the event's type (the fan-out). The workers are woken
// by migration 004's trigger on webhook_deliveries (a NOTIFY naming the subscriptions, delivered on commit,
// so workers never see an uncommitted event).
import type { Queryable } from '../db/db.ts';

export const EVENT_TYPES = [
  'customerCreate', 'customerUpdate', 'customerMerge', 'customerUnmerge', 'customerNoteCreate', 'customerNoteUpdate', 'webhookTest',
  'webhookDeliveryFailed', 'webhookSubscriptionDisabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The NOTIFY channel webhook dispatchers listen on. */
export const WEBHOOK_CHANNEL = 'bulb_webhooks';

export interface NewEvent {
  eventType: EventType;
  resourceType: string;
  resource: { uuid: string; externalId: string | null };
  source: string;
}

/**
 * The outbox as SQL to embed in a statement: CTEs `ev` (the events, inserted from `eventsSelect`, a SELECT of
 * event_type, resource_type, resource_uuid, resource_external_id, source), `d` (one delivery per subscription
 * active for the type). A write can thus carry its events in the same statement.
 */
export function outboxCtes(eventsSelect: string): string {
  return `ev AS (
       INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
       ${eventsSelect}
       RETURNING id, uuid, event_type, created_at
     ), d AS (
       INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id)
       SELECT ev.id, ev.created_at, s.id FROM ev JOIN webhook_subscriptions s
         ON s.event_types @> ARRAY[ev.event_type] AND s.is_active AND s.deleted_at IS NULL
       ORDER BY ev.id, s.id
       RETURNING 1
     )`;
}

const EMIT_SQL = `WITH ${outboxCtes('SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[])')}
     SELECT ev.uuid FROM ev ORDER BY ev.id`;

/** Writes events (one row per occurrence) and their deliveries in the caller's transaction. Returns the event uuids. */
export async function emitEvents(tx: Queryable, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const r = await tx.query<{ uuid: string }>(
    EMIT_SQL,
    [
      events.map((e) => e.eventType),
      events.map((e) => e.resourceType),
      events.map((e) => e.resource.uuid),
      events.map((e) => e.resource.externalId),
      events.map((e) => e.source),
    ],
    'outbox_emit',
  );
  return r.rows.map((x) => x.uuid);
}

export function emitEvent(tx: Queryable, e: NewEvent): Promise<string[]> {
  return emitEvents(tx, [e]);
}
