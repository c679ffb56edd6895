// The event catalog: every webhook event type with its description, the JSON Schema of the body a
// subscription receives for it (SPEC §7's event body, eventType and resourceType pinned per type) and an
// example. Defined once here; the eventTypes route (2026-11), the OpenAPI documents' `webhooks` section,
// the console and the test receiver's check all read it. Tulip documents the body on
// https://docs.tulip.com/integrating/webhooks/eventsoverview.
import { Type, type TSchema } from '@sinclair/typebox';
import { EVENT_TYPES, type EventType } from './emit.ts';

export interface CatalogEntry {
  name: EventType;
  resourceType: string;
  description: string;
  /** JSON Schema (TypeBox) of the delivered body; its title names the OpenAPI component. */
  schema: TSchema;
  example: Record<string, unknown>;
}

interface Declared {
  resourceType: string;
  description: string;
  /** What resource.uuid names. */
  resource: string;
  /** What resource.externalId holds: the schema and its description. */
  externalId: 'stringOrNull' | 'null';
  exampleExternalId: string | null;
}

const DECLARED: Record<EventType, Declared> = {
  customerCreate: {
    resourceType: 'Customer', description: 'A customer was created (POST, PUT of an unknown externalId, bulk upsert, import).',
    resource: 'the new customer', externalId: 'stringOrNull', exampleExternalId: 'c-2154',
  },
  customerUpdate: {
    resourceType: 'Customer', description: 'A customer changed (PATCH, PUT, bulk upsert, import, or its data moved by a merge or an undo).',
    resource: 'the changed customer', externalId: 'stringOrNull', exampleExternalId: 'c-2154',
  },
  customerMerge: {
    resourceType: 'Customer', description: 'Secondary customers were merged into this primary customer; each secondary gets a customerUpdate.',
    resource: 'the primary (surviving) customer', externalId: 'stringOrNull', exampleExternalId: 'c-2154',
  },
  customerUnmerge: {
    resourceType: 'Customer', description: 'A merge into this primary customer was undone (POST /crm/merges/{uuid}/undo); each restored customer gets a customerUpdate.',
    resource: 'the primary customer of the undone merge', externalId: 'stringOrNull', exampleExternalId: 'c-2154',
  },
  customerNoteCreate: {
    resourceType: 'CustomerNote', description: 'A note was added to a customer.',
    resource: 'the new note', externalId: 'stringOrNull', exampleExternalId: 'note-77',
  },
  customerNoteUpdate: {
    resourceType: 'CustomerNote', description: 'A customer note was replaced (PUT) and something changed.',
    resource: 'the note', externalId: 'stringOrNull', exampleExternalId: null,
  },
  webhookTest: {
    resourceType: 'WebhookSubscription', description: 'A test event sent on request (POST …/subscriptions/{uuid}/test), only to that subscription.',
    resource: 'the subscription tested', externalId: 'null', exampleExternalId: null,
  },
  webhookDeliveryFailed: {
    resourceType: 'WebhookDelivery', description: 'A delivery to another subscription exhausted its retry schedule and is failed (never sent to the subscription it is about; a failed delivery of this type emits nothing).',
    resource: 'the failed delivery', externalId: 'null', exampleExternalId: null,
  },
  webhookSubscriptionDisabled: {
    resourceType: 'WebhookSubscription', description: 'Another subscription was disabled automatically: its attempts kept failing for BULB_WEBHOOK_DISABLE_AFTER_HOURS, or its endpoint answered 410 Gone (never sent to the subscription it is about).',
    resource: 'the disabled subscription', externalId: 'null', exampleExternalId: null,
  },
};

const EXTERNAL_ID = {
  stringOrNull: () => Type.Union([Type.String(), Type.Null()], { description: 'the resource\'s externalId, null when it has none' }),
  null: () => Type.Null({ description: 'always null for this resource type' }),
};

/** "customerCreate" → "CustomerCreateEvent": the component name of the type's body. */
export const schemaName = (name: string) => `${name[0].toUpperCase()}${name.slice(1)}Event`;

function bodySchema(name: EventType, d: Declared): TSchema {
  return Type.Object(
    {
      uuid: Type.String({ format: 'uuid', description: 'the event (the same for every subscription and every attempt: dedupe on it); also the webhook-id header' }),
      subscription: Type.String({ format: 'uuid', description: 'the subscription this delivery is for' }),
      createdAt: Type.String({ format: 'date-time', description: 'when the event occurred (RFC 3339, UTC with Z)' }),
      eventType: Type.Literal(name),
      resourceType: Type.Literal(d.resourceType),
      resource: Type.Object(
        { uuid: Type.String({ format: 'uuid', description: d.resource }), externalId: EXTERNAL_ID[d.externalId]() },
        { additionalProperties: false },
      ),
      source: Type.String({ pattern: '^[A-Z][A-Z0-9]*_(API|APP)$', description: 'what caused it: {SERVICE}_API (the API) or {SERVICE}_APP (the console), e.g. TULIP_API' }),
    },
    { additionalProperties: false, title: schemaName(name), description: `The body of a ${name} delivery. ${d.description}` },
  );
}

// Fixed example uuids, so that the documents are stable from one start to the next.
const EXAMPLE_SUBSCRIPTION = '1fec24e8-f02c-4ff6-a1a5-37bbdac42b1b';
const exampleUuid = (i: number, salt: number) => `${(0x03a4eabd + i * 97 + salt).toString(16).padStart(8, '0')}-2551-41d9-9828-e105b1eb5cf5`;

export const CATALOG: readonly CatalogEntry[] = EVENT_TYPES.map((name, i) => {
  const d = DECLARED[name];
  return {
    name,
    resourceType: d.resourceType,
    description: d.description,
    schema: bodySchema(name, d),
    example: {
      uuid: exampleUuid(i, 0),
      subscription: EXAMPLE_SUBSCRIPTION,
      createdAt: '2026-11-02T13:45:30.123Z',
      eventType: name,
      resourceType: d.resourceType,
      resource: { uuid: exampleUuid(i, 1 << 20), externalId: d.exampleExternalId },
      source: name.startsWith('webhook') && name !== 'webhookTest' ? 'TULIP_API' : 'TULIP_APP',
    },
  };
});

const BY_NAME = new Map(CATALOG.map((e) => [e.name as string, e]));

export function catalogEntry(name: string): CatalogEntry | undefined {
  return BY_NAME.get(name);
}
