// Webhook shapes on the wire (SPEC §7) as TypeBox schemas.
import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from '../http/schema.ts';
import { PageQuery } from '../http/pagination.ts';
import { EVENT_TYPES } from '../events/emit.ts';
import { VERSION_IDS } from '../http/versioning/versions.ts';
import { BROKER_ERROR_CODES } from './outcome.ts';

const closed = { additionalProperties: false } as const;
// Credentials must be sendable in an HTTP header (visible ASCII); service.ts checks it with a clear message.
const Secret = (desc: string) => Type.String({ minLength: 1, maxLength: 1024, description: `${desc}; visible ASCII only (no spaces, CR/LF or non-ASCII)` });

export const AuthMethod = StringEnum(['NONE', 'BASIC', 'BEARER', 'OAUTH2_CLIENT_CREDENTIALS'], { title: 'AuthMethod' });
/** What versions before 2026-11 accept (OAuth2 client credentials arrive with 2026-11). */
export const AuthMethodBefore202611 = StringEnum(['NONE', 'BASIC', 'BEARER']);

// 2026-11 (docs/receiver-auth.md): OAuth2 client credentials and mutual TLS. The client secret and the private key are
// write-only (sealed at rest, never returned); the rest is returned.
const Pem = (desc: string, max: number) => Type.String({ minLength: 1, maxLength: max, description: `PEM; ${desc}` });
export const OAuth2Write = Type.Object(
  {
    tokenUrl: Type.String({ minLength: 1, maxLength: 2048, description: 'https URL of the token endpoint (RFC 6749 §4.4; http only with BULB_WEBHOOK_ALLOW_PRIVATE)' }),
    clientId: Type.String({ minLength: 1, maxLength: 255, description: 'sent with the client secret by HTTP Basic' }),
    clientSecret: Type.Optional(Secret('write-only; required when OAuth2 is first set, omitted on a change: the stored one is kept')),
    scope: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 1024, description: 'space-separated scope tokens' }), Type.Null()])),
    audience: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 2048, description: 'sent as the audience form parameter' }), Type.Null()])),
  },
  { ...closed, title: 'OAuth2ClientCredentialsWrite' },
);
export const OAuth2Read = Type.Object(
  {
    tokenUrl: Type.String(),
    clientId: Type.String(),
    scope: Type.Union([Type.String(), Type.Null()]),
    audience: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'OAuth2ClientCredentials', description: 'the client secret is write-only, never returned' },
);
export const TlsWrite = Type.Object(
  {
    clientCertificate: Pem('the client certificate (chain) presented to the receiver or broker', 32_768),
    clientKey: Type.Optional(Pem('write-only: its unencrypted private key; omitted on a change: the stored one is kept', 16_384)),
    caCertificate: Type.Optional(Type.Union([Pem('the CA certificates the receiver\'s or broker\'s certificate must chain to (instead of the public roots)', 65_536), Type.Null()])),
  },
  { ...closed, title: 'MutualTlsWrite' },
);
export const TlsRead = Type.Object(
  { clientCertificate: Type.String(), caCertificate: Type.Union([Type.String(), Type.Null()]) },
  { title: 'MutualTls', description: 'the private key is write-only, never returned' },
);
export const EventType = StringEnum([...EVENT_TYPES], { title: 'EventType' });
/** 2026-11: the event types a subscription listens to, in the order given. */
export const EventTypeList = Type.Array(EventType, {
  minItems: 1, maxItems: 20, uniqueItems: true, description: '1–20 distinct event types; the first is what versions before 2026-11 show',
});
const Version = StringEnum([...VERSION_IDS], { description: 'sent as X-Webhook-Version' });

/** 2026-11 delivery policies (docs/delivery-policies.md); bounds also in policy.ts (the 7-day total) and migrations 046–047. */
const policyWritable = {
  retrySchedule: Type.Union([
    Type.Array(Type.Integer({ minimum: 1, maximum: 86400 }), {
      minItems: 1, maxItems: 20, description: 'delays in seconds before each retry (1–20 of them, each 1 s–24 h, at most 7 days in all)',
    }),
    Type.Null(),
  ], { description: "null: the service's schedule (BULB_WEBHOOK_RETRY_SCHEDULE)" }),
  retryJitter: Type.Integer({ minimum: 0, maximum: 50, description: 'percent: each retry delay d is drawn from [d·(1−j/100), d·(1+j/100)] (default 0)' }),
  maxPerSecond: Type.Union([Type.Integer({ minimum: 1, maximum: 10000 }), Type.Null()], {
    description: 'most attempts per second to this endpoint across every worker (null: no cap)',
  }),
};
const policyFields = {
  retrySchedule: Type.Array(Type.Number(), { description: "the delays in seconds this subscription's retries follow (its own, or the service's)" }),
  retryJitter: Type.Integer({ description: 'percent of each retry delay drawn at random either way' }),
  maxPerSecond: Type.Union([Type.Integer(), Type.Null()], { description: 'attempts per second across every worker (null: no cap)' }),
};

const writable = {
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL, or a broker destination: amqp(s)://user:pass@host/vhost?exchange=…&routingKey=… or nats://user:pass@host?subject=… (docs/destinations.md; the password is sealed and shown as ***); at most 2048 characters' }),
  eventTypes: EventTypeList,
  isActive: Type.Boolean(),
  authMethod: AuthMethod,
  bearerToken: Type.Union([Secret('write-only: sent as Authorization: Bearer <token>'), Type.Null()]),
  basicUsername: Type.Union([
    Type.String({ minLength: 1, maxLength: 255, description: 'write-only; visible ASCII without ":"' }),
    Type.Null(),
  ]),
  basicPassword: Type.Union([Secret('write-only'), Type.Null()]),
  webhookVersion: Version,
  maxInFlight: Type.Integer({ minimum: 1, maximum: 64, description: 'most concurrent attempts to this endpoint (default 16); failures lower the live ceiling, successes restore it' }),
  ...policyWritable,
  oauth2: Type.Union([OAuth2Write, Type.Null()], { description: 'authMethod OAUTH2_CLIENT_CREDENTIALS: where and how Bulb gets its bearer token' }),
  tls: Type.Union([TlsWrite, Type.Null()], { description: 'mutual TLS: the client certificate presented to the receiver (any authMethod) or the broker (amqps, nats); refused on a plain http or amqp url; null removes it' }),
};

export const SubscriptionCreate = Type.Object(
  {
    url: writable.url,
    eventTypes: writable.eventTypes,
    isActive: Type.Optional(writable.isActive),
    authMethod: Type.Optional(writable.authMethod),
    bearerToken: Type.Optional(writable.bearerToken),
    basicUsername: Type.Optional(writable.basicUsername),
    basicPassword: Type.Optional(writable.basicPassword),
    webhookVersion: Type.Optional(writable.webhookVersion),
    maxInFlight: Type.Optional(writable.maxInFlight),
    retrySchedule: Type.Optional(writable.retrySchedule),
    retryJitter: Type.Optional(writable.retryJitter),
    maxPerSecond: Type.Optional(writable.maxPerSecond),
    oauth2: Type.Optional(writable.oauth2),
    tls: Type.Optional(writable.tls),
  },
  { ...closed, title: 'SubscriptionCreate' },
);
export type SubscriptionCreateT = Static<typeof SubscriptionCreate>;

export const SubscriptionPatch = Type.Partial(Type.Object(writable, closed), { ...closed, minProperties: 1, title: 'SubscriptionPatch' });
export type SubscriptionPatchT = Static<typeof SubscriptionPatch>;

const DateTimeOrNull = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
export const Health = Type.Object(
  {
    state: StringEnum(['healthy', 'failing', 'disabled']),
    consecutiveFailures: Type.Integer({ description: 'failed attempts since the last success' }),
    lastSuccessAt: DateTimeOrNull,
    failingSince: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'first failure after the last success' }),
    disabledReason: Type.Union([Type.String(), Type.Null()], { description: 'why Bulb disabled the subscription automatically' }),
  },
  { title: 'SubscriptionHealth', description: 'endpoint health (SPEC §11)' },
);

const subscriptionFields = {
  uuid: Type.String({ format: 'uuid' }),
  url: Type.String(),
  eventTypes: Type.Array(Type.String()),
  isActive: Type.Boolean(),
  authMethod: AuthMethod,
  webhookVersion: Type.String(),
  maxInFlight: Type.Integer(),
  ...policyFields,
  oauth2: Type.Union([OAuth2Read, Type.Null()]),
  tls: Type.Union([TlsRead, Type.Null()]),
  health: Health,
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
};
export const Subscription = Type.Object(subscriptionFields, { title: 'Subscription', description: 'A webhook subscription (credentials are write-only, never returned)' });
export const SubscriptionWithSecret = Type.Object({ ...subscriptionFields, signingSecret: Type.String() }, { title: 'SubscriptionCreated' });

/**
 * Versions before 2026-11: one eventType (the first of the list), written as one; no delivery policy fields
 * (2026-11-subscription-event-types.ts, 2026-11-delivery-policies.ts); no oauth2 or tls and no OAUTH2_CLIENT_CREDENTIALS
 * written (2026-11-receiver-auth.ts).
 */
const { eventTypes: _t, retrySchedule: _rs, retryJitter: _rj, maxPerSecond: _mp, oauth2: _o, tls: _l, ...oldFields } = subscriptionFields;
export const SubscriptionBefore202611 = Type.Object({ ...oldFields, eventType: Type.String() });
export const SubscriptionWithSecretBefore202611 = Type.Object({ ...oldFields, eventType: Type.String(), signingSecret: Type.String() });
const { eventTypes: _w, retrySchedule: _ws, retryJitter: _wj, maxPerSecond: _wm, oauth2: _wo, tls: _wl, authMethod: _wa, ...oldWritable } = writable;
const { eventTypes: _c, url: _u, retrySchedule: _cs, retryJitter: _cj, maxPerSecond: _cm, oauth2: _co, tls: _cl, authMethod: _ca, ...oldCreate } = SubscriptionCreate.properties;
export const SubscriptionCreateBefore202611 = Type.Object({ url: writable.url, eventType: EventType, authMethod: Type.Optional(AuthMethodBefore202611), ...oldCreate }, closed);
export const SubscriptionPatchBefore202611 = Type.Partial(Type.Object({ ...oldWritable, authMethod: AuthMethodBefore202611, eventType: EventType }, closed), { ...closed, minProperties: 1 });
export const SecretAnswer = Type.Object({
  signingSecret: Type.String(),
  previousSecretExpiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'while set, the previous secret still signs too',
  }),
}, { title: 'SigningSecret' });

export const UuidParams = Type.Object({ uuid: Type.String({ format: 'uuid' }) }, closed);

export const SubscriptionListQuery = Type.Object(
  { ...PageQuery, eventType: Type.Optional(EventType), isActive: Type.Optional(Type.Boolean()) },
  closed,
);

export const TestAnswer = Type.Object({ eventUuid: Type.String(), deliveryUuid: Type.String() }, { title: 'TestResult' });
/** Versions before 2026-11: the names, with resource type and description. */
export const EventTypes = Type.Object({ data: Type.Array(Type.Object({ eventType: Type.String(), resourceType: Type.String(), description: Type.String() }, { title: 'EventTypeInfo' })) }, { title: 'EventTypeList' });
/** 2026-11: the event catalog (src/events/catalog.ts). */
export const EventCatalog = Type.Object({
  data: Type.Array(Type.Object({
    name: Type.String({ description: 'the event type, as subscriptions name it' }),
    resourceType: Type.String({ description: 'the resourceType of its bodies' }),
    description: Type.String(),
    schema: Type.Object({}, { additionalProperties: true, description: 'JSON Schema (2020-12) of the body delivered for this type' }),
    example: Type.Object({}, { additionalProperties: true, description: 'an example body' }),
  }, { title: 'EventCatalogEntry' })),
}, { title: 'EventCatalog' });

export const DeliveryStatus = StringEnum(['pending', 'delivered', 'failed', 'cancelled'], { title: 'DeliveryStatus' });
export const Delivery = Type.Object({
  uuid: Type.String(),
  eventUuid: Type.String(),
  subscriptionUuid: Type.String(),
  eventType: Type.String(),
  status: DeliveryStatus,
  attemptCount: Type.Integer(),
  nextAttemptAt: DateTimeOrNull,
  createdAt: Type.String({ format: 'date-time' }),
  deliveredAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
}, { title: 'Delivery', description: 'One event to one subscription' });
export const DeliveryListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(DeliveryStatus),
    subscription: Type.Optional(Type.String({ format: 'uuid' })),
    eventType: Type.Optional(EventType),
  },
  closed,
);

/**
 * SECRET_UNREADABLE: not sent, a stored credential or signing secret of the subscription cannot be opened (responseBody
 * says why). OAUTH_TOKEN_FAILED: not sent, the OAuth2 token endpoint gave no usable token (responseBody says why; one the
 * address guard refuses is BLOCKED_ADDRESS).
 * Broker destinations (docs/destinations.md): BROKER_UNREACHABLE, BROKER_REFUSED, BROKER_TIMEOUT, NO_ROUTE.
 */
export const ErrorCode = StringEnum(['TIMEOUT', 'CONNECTION', 'DNS', 'TLS', 'HTTP_STATUS', 'BLOCKED_ADDRESS', 'SECRET_UNREADABLE', 'OAUTH_TOKEN_FAILED', ...BROKER_ERROR_CODES], { title: 'AttemptErrorCode' });
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
}, { title: 'Attempt', description: 'One delivery attempt of the log' });
export const LogQuery = Type.Object(
  {
    ...PageQuery,
    subscription: Type.Optional(Type.String({ format: 'uuid' })),
    eventType: Type.Optional(EventType),
    outcome: Type.Optional(StringEnum(['success', 'failure'])),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'attempts started at or after this time' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'attempts started before this time (exclusive)' })),
    delivery: Type.Optional(Type.String({ format: 'uuid', description: 'only the attempts of this delivery' })),
  },
  closed,
);
export const RecoverBody = Type.Object({ since: Type.String({ format: 'date-time' }) }, { ...closed, title: 'RecoverRequest' });
export const RecoverAnswer = Type.Object({ requeued: Type.Integer() }, { title: 'RecoverResult' });

export const StatsQuery = Type.Object(
  { hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 168, default: 24, description: 'hours to look back (1–168)' })) },
  closed,
);
const Bucket = Type.Object({
  hour: Type.String({ format: 'date-time', description: 'start of the hour (UTC)' }),
  attempts: Type.Integer(),
  successes: Type.Integer(),
});
export const StatsAnswer = Type.Object({
  hours: Type.Integer(),
  since: Type.String({ format: 'date-time' }),
  overall: Type.Array(Bucket),
  subscriptions: Type.Array(Type.Object({ subscriptionUuid: Type.String({ format: 'uuid' }), buckets: Type.Array(Bucket) })),
});
