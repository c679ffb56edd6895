// Webhook shapes on the wire (SPEC §7) as TypeBox schemas.
import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from '../http/schema.ts';
import { PageQuery } from '../http/pagination.ts';
import { EVENT_TYPES } from '../events/emit.ts';
import { VERSION_IDS } from '../http/versioning/versions.ts';

const closed = { additionalProperties: false } as const;
const Secret = (desc: string) => Type.String({ minLength: 1, maxLength: 1024, description: desc });

export const AuthMethod = StringEnum(['NONE', 'BASIC', 'BEARER']);
export const EventType = StringEnum([...EVENT_TYPES]);
const Version = StringEnum([...VERSION_IDS], { description: 'sent as X-Webhook-Version' });

const writable = {
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL, at most 2048 characters' }),
  eventType: EventType,
  isActive: Type.Boolean(),
  authMethod: AuthMethod,
  bearerToken: Type.Union([Secret('write-only: sent as Authorization: Bearer <token>'), Type.Null()]),
  basicUsername: Type.Union([Type.String({ minLength: 1, maxLength: 255, pattern: '^[^:]*$', description: 'write-only' }), Type.Null()]),
  basicPassword: Type.Union([Secret('write-only'), Type.Null()]),
  webhookVersion: Version,
  maxInFlight: Type.Integer({ minimum: 1, maximum: 64, description: 'most concurrent attempts to this endpoint (default 16); failures lower the live ceiling, successes restore it' }),
};

export const SubscriptionCreate = Type.Object(
  {
    url: writable.url,
    eventType: writable.eventType,
    isActive: Type.Optional(writable.isActive),
    authMethod: Type.Optional(writable.authMethod),
    bearerToken: Type.Optional(writable.bearerToken),
    basicUsername: Type.Optional(writable.basicUsername),
    basicPassword: Type.Optional(writable.basicPassword),
    webhookVersion: Type.Optional(writable.webhookVersion),
    maxInFlight: Type.Optional(writable.maxInFlight),
  },
  closed,
);
export type SubscriptionCreateT = Static<typeof SubscriptionCreate>;

export const SubscriptionPatch = Type.Partial(Type.Object(writable, closed), { ...closed, minProperties: 1 });
export type SubscriptionPatchT = Static<typeof SubscriptionPatch>;

export const Subscription = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  url: Type.String(),
  eventType: Type.String(),
  isActive: Type.Boolean(),
  authMethod: AuthMethod,
  webhookVersion: Type.String(),
  maxInFlight: Type.Integer(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export const SubscriptionWithSecret = Type.Object({ ...Subscription.properties, signingSecret: Type.String() });
export const SecretAnswer = Type.Object({
  signingSecret: Type.String(),
  previousSecretExpiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'while set, the previous secret still signs too',
  }),
});

export const UuidParams = Type.Object({ uuid: Type.String({ format: 'uuid' }) }, closed);

export const SubscriptionListQuery = Type.Object(
  { ...PageQuery, eventType: Type.Optional(EventType), isActive: Type.Optional(Type.Boolean()) },
  closed,
);

export const TestAnswer = Type.Object({ eventUuid: Type.String(), deliveryUuid: Type.String() });
export const EventTypes = Type.Object({ data: Type.Array(Type.Object({ eventType: Type.String(), resourceType: Type.String(), description: Type.String() })) });

export const DeliveryStatus = StringEnum(['pending', 'delivered', 'failed', 'cancelled']);
export const Delivery = Type.Object({
  uuid: Type.String(),
  eventUuid: Type.String(),
  subscriptionUuid: Type.String(),
  eventType: Type.String(),
  status: DeliveryStatus,
  attemptCount: Type.Integer(),
  nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  deliveredAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export const DeliveryListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(DeliveryStatus),
    subscription: Type.Optional(Type.String({ format: 'uuid' })),
    eventType: Type.Optional(EventType),
  },
  closed,
);

export const ErrorCode = StringEnum(['TIMEOUT', 'CONNECTION', 'DNS', 'TLS', 'HTTP_STATUS', 'BLOCKED_ADDRESS']);
export const Attempt = Type.Object({
  uuid: Type.String(),
  deliveryUuid: Type.String(),
  eventUuid: Type.String(),
  subscriptionUuid: Type.String(),
  eventType: Type.String(),
  url: Type.String(),
  attemptNumber: Type.Integer(),
  startedAt: Type.String({ format: 'date-time' }),
  durationMs: Type.Integer(),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  errorCode: Type.Union([ErrorCode, Type.Null()]),
  outcome: StringEnum(['success', 'failure']),
  nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  requestHeaders: Type.Record(Type.String(), Type.String()),
  requestBody: Type.String(),
  responseBody: Type.Union([Type.String(), Type.Null()]),
});
export const LogQuery = Type.Object(
  {
    ...PageQuery,
    subscription: Type.Optional(Type.String({ format: 'uuid' })),
    eventType: Type.Optional(EventType),
    outcome: Type.Optional(StringEnum(['success', 'failure'])),
    since: Type.Optional(Type.String({ format: 'date-time' })),
    until: Type.Optional(Type.String({ format: 'date-time' })),
    delivery: Type.Optional(Type.String({ format: 'uuid', description: 'only the attempts of this delivery' })),
  },
  closed,
);
export const RecoverBody = Type.Object({ since: Type.String({ format: 'date-time' }) }, closed);
export const RecoverAnswer = Type.Object({ requeued: Type.Integer() });
