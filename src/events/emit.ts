// The outbox seam: every change writes its event here, inside the transaction of the change.
import type { Queryable } from '../db/db.ts';

export const EVENT_TYPES = ['customerCreate', 'customerUpdate', 'customerMerge', 'customerNoteCreate', 'customerNoteUpdate', 'webhookTest'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface NewEvent {
  eventType: EventType;
  resourceType: string;
  resource: { uuid: string; externalId: string | null };
  source: string;
}

/** Writes events (one row per occurrence) in the caller's transaction. Returns their uuids. */
export async function emitEvents(tx: Queryable, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const r = await tx.query<{ uuid: string }>(
    `INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
     SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[])
     RETURNING uuid`,
    [
      events.map((e) => e.eventType),
      events.map((e) => e.resourceType),
      events.map((e) => e.resource.uuid),
      events.map((e) => e.resource.externalId),
      events.map((e) => e.source),
    ],
  );
  return r.rows.map((x) => x.uuid);
}

export function emitEvent(tx: Queryable, e: NewEvent): Promise<string[]> {
  return emitEvents(tx, [e]);
}
