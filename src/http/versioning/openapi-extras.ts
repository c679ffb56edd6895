// Texts of the OpenAPI documents taken from SPEC (tag and operation descriptions), and the OAuth 2.0
// token endpoint (POST /auth/oauth2/token), which is not a versioned route but belongs in every document.
// A route may carry its own `description`; this table is the fallback for the routes of the first edition.
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../schema.ts';

export const TOKEN_PATH = '/auth/oauth2/token';

export const TAGS: Record<string, string> = {
  Customers: 'Customer records (SPEC §4). A `{id}` path segment accepts the uuid or the externalId (a uuid match wins).',
  'Customer data': 'Orders, follow-ups, notes, messages, preferences, product shares and associations attached to a customer.',
  'Customer merge': 'Merging secondary customers into a primary (SPEC §6), one transaction, with a merge record.',
  Associates: 'Store employees.',
  Integrations: 'API keys and OAuth clients (admin scope). Secrets are shown once, on creation.',
  Webhooks: 'Signed webhook subscriptions, deliveries and the attempt log (SPEC §7, admin scope).',
  'Webhook events': 'What Bulb sends to a subscription: one signed POST per event, its body described per event type (the event catalog; GET …/webhooks/eventTypes in 2026-11).',
  OAuth: 'OAuth 2.0 client credentials: exchange a client id and secret for a one-hour access token.',
};

export const DESCRIPTIONS: Record<string, string> = {
  'customers.list': 'Cursor pagination (`limit` 1–250, default 50; `cursor`). Filters `externalId`, `email`, `q`, `status` (default `active`; `disabled`, `all`), `updatedSince`. A cursor walk visits each record exactly once even while records are added. In id order; with `updatedSince`, in order of last change (then id), so a customer changed again during the walk comes again at its end, as it now is.',
  'customers.create': 'Creates a customer and emits `customerCreate`. `externalId` is optional, as in Tulip (the customer is then found by its uuid, and may be given one later by PUT or PATCH; imports and bulk items name customers by it); a duplicate `externalId` answers 409 `Conflict`. Read-only fields (`uuid`, `status`, `mergedInto`, timestamps) are refused as unknown fields.',
  'customers.get': 'A disabled (merged-away) customer is returned with `status: disabled` and `mergedInto` naming the final surviving primary.',
  'customers.put': 'Full replace: fields the body omits are emptied (`externalId` comes from the path if the body omits it). An unknown `externalId` creates the customer (201). A customer merged away answers 403 `CustomerDisabled` (one deactivated with `disabled: true` takes the write; `disabled: false` re-activates it).',
  'customers.patch': 'Changes only the fields the body carries (`null` clears a field); an address naming a current one by `uuid` (else `externalId`) patches it, the others given are the new list. A customer merged away answers 403 `CustomerDisabled` (one deactivated with `disabled: true` takes the write). A no-op writes nothing and emits no event.',
  'customers.bulk': 'A JSON array of 1–100 customers (up to 1,000, in a body of up to 10 MiB, in Tulip\'s 2025-08 and 2025-12), upserted by `externalId`; one result per item (`201` created, `200` updated, `400`, `403` for a disabled customer, `409`) and one bad item does not stop the others. Until 2025-04 an existing customer is replaced by the item; from 2026-11 the item is a patch (fields it omits are kept). In Tulip\'s 2025-08 and 2025-12 it creates only, as docs.tulip.com "Single vs. Bulk Endpoints" says: an item whose `externalId` exists (or repeats an earlier item\'s) is that item\'s `409 Conflict` and changes nothing; `PUT …/bulk` upserts.',
  'customers.bulkPut': 'Tulip\'s `PUT …/bulk` (docs.tulip.com "Single vs. Bulk Endpoints"): the same upsert as `POST …/bulk`, item for item; an unknown `externalId` is created.',
  'customers.merge': 'Merges the secondaries into the primary (each named by uuid or externalId, a uuid match winning) in one transaction: their orders, follow-ups, notes, messages, preferences and product shares move to the primary, associations move without duplicates, secondaries become `disabled` with `mergedInto`. Validation first (400, then 404 per unknown id, then 403 `CustomerDisabled`), nothing changed on failure. `?dryRun=true` computes the same counts and changes nothing. An `Idempotency-Key` header replays the first answer for 24 h.',
  'customers.mergeByUuid': 'Legacy merge door (until 2022-08) naming the primary and the secondaries by Tulip id (the customer\'s numeric `id`; JSON numbers or numeric strings) or by uuid; answers the primary customer.',
  'customers.mergeByExternalId': 'Legacy merge door (until 2022-08) naming secondaries by externalId; answers the primary customer.',
  'customers.merges': 'Merge records where the customer is primary or secondary, oldest first, paginated.',
  'customerNotes.create': 'Creates a note (Tulip\'s shape: `customer`, `comments`, `type`, `isPrivate`, `externalId`, …) for the customer `customer` names (uuid or externalId); emits `customerNoteCreate`. A taken `externalId` answers 409.',
  'customerNotes.get': 'A note by its uuid or its externalId (a uuid match wins).',
  'customerNotes.put': 'Full replace of a note, by uuid or externalId (an omitted `externalId` keeps the current one; `customer`, if given, must be the note\'s customer); emits `customerNoteUpdate` when something changed.',
  'apiKeys.create': 'Answers 201 with `key`, shown in this answer only (stored as a hash).',
  'apiKeys.list': 'Active API keys, without their secret.',
  'apiKeys.revoke': 'Revokes the key at once; 204.',
  'authClients.create': 'Answers 201 with `clientSecret`, shown in this answer only. Exchange it at POST /auth/oauth2/token.',
  'authClients.list': 'Active OAuth clients, without their secret.',
  'authClients.revoke': 'Revokes the client and every access token it obtained; 204.',
  'webhooks.eventTypes': 'The event types a subscription can listen for. From 2026-11 each comes with the JSON Schema of the body delivered for it and an example (the event catalog; the document\'s `webhooks` section shows the same); earlier versions answer `eventType`, `resourceType` and `description` per type.',
  'webhooks.subscriptions.create': 'Answers 201 including `signingSecret` (`whsec_` + base64 of 32 random bytes). The URL must be http(s), at most 2048 characters, and (unless BULB_WEBHOOK_ALLOW_PRIVATE) must not resolve to a loopback, private, link-local, CGNAT, multicast or unspecified address.',
  'webhooks.subscriptions.rotateSecret': 'Makes a new signing secret; every rotated-out secret keeps signing for 24 h after its rotation (`webhook-signature` carries one signature per valid secret).',
  'webhooks.subscriptions.test': 'Sends a `webhookTest` event to this subscription now (409 when the subscription is inactive).',
  'webhooks.subscriptions.delete': 'Soft delete: pending deliveries are cancelled, logs stay; 204.',
  'webhooks.subscriptions.recover': 'Re-queues every failed delivery of the subscription created since `since`.',
  'webhooks.deliveries.retry': 'Attempts the delivery now, once; a cancelled delivery (deleted subscription) answers 409.',
  'webhooks.logs': 'One row per attempt, newest first, with request headers (credentials redacted), request body and the first 4 KiB of the response.',
};

const Scope = Type.Unsafe<string>({ type: 'string', description: 'space-separated subset of the client\'s scopes (read, write, admin); default: all of them' });

export const tokenSchemas = {
  TokenRequest: Type.Object(
    {
      grant_type: Type.Literal('client_credentials'),
      client_id: Type.Optional(Type.String({ description: 'unless sent by HTTP Basic' })),
      client_secret: Type.Optional(Type.String({ description: 'unless sent by HTTP Basic' })),
      scope: Type.Optional(Scope),
    },
    { title: 'TokenRequest' },
  ),
  TokenResponse: Type.Object(
    {
      access_token: Type.String({ description: 'bulb_at_…; send as Authorization: Bearer' }),
      token_type: Type.Literal('Bearer'),
      expires_in: Type.Integer({ description: 'seconds (one hour)' }),
      scope: Type.String(),
    },
    { title: 'TokenResponse', examples: [{ access_token: 'bulb_at_3q2-7wEXAMPLE', token_type: 'Bearer', expires_in: 3600, scope: 'read write' }] },
  ),
  OAuthError: Type.Object(
    {
      error: Type.String({ description: 'RFC 6749 §5.2 code: invalid_request, invalid_client, invalid_scope, unsupported_grant_type…' }),
      error_description: Type.String(),
      errors: Type.Array(Type.Object({ message: Type.String(), errorCode: Type.String(), moreInfo: Type.String() }), { description: 'the SPEC §3 error list, beside the RFC fields' }),
    },
    { title: 'OAuthError' },
  ),
};

type Lift = (schema: unknown) => unknown;

/** The SPEC errorCode beside an OAuth error of the token endpoint, by its status (its answers and their examples). */
export const oauthErrorCode = (status: number) => (status === 401 ? 'Unauthorized' : status === 429 ? 'RateLimited' : 'InvalidParameterError');

/** The header a 429 or 503 answer carries (every route's, and the token endpoint's). */
export const RETRY_AFTER_HEADER = { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } } };

/**
 * The operation of POST /auth/oauth2/token. generic(status): the answer every route documents for a status the
 * endpoint does not write itself (500, and 503 while the database is unavailable), in the SPEC error shape.
 */
export function tokenOperation(lift: Lift, generic: (status: number) => unknown) {
  const oauthError = (status: number, description: string, error: string, text: string, orUnparsed = false) => ({
    description,
    ...(status === 429 ? { headers: RETRY_AFTER_HEADER } : {}),
    content: {
      'application/json': {
        // A request Node's HTTP parser refuses (request line and headers over 16 KiB…) never reaches the
        // endpoint: it is answered 400 in the SPEC error shape alone.
        schema: orUnparsed ? { anyOf: [lift(tokenSchemas.OAuthError), lift(ErrorBody)] } : lift(tokenSchemas.OAuthError),
        example: { error, error_description: text, errors: [{ message: text, errorCode: oauthErrorCode(status), moreInfo: error }] },
      },
    },
  });
  const form = { schema: lift(tokenSchemas.TokenRequest), example: { grant_type: 'client_credentials', client_id: 'bulb_client_EXAMPLE', client_secret: 'bulb_cs_EXAMPLE' } };
  return {
    operationId: 'oauth2Token',
    summary: 'Obtain an access token (OAuth 2.0 client credentials)',
    description:
      'RFC 6749 §4.4. The client id and secret come by HTTP Basic (`Authorization: Basic base64(id:secret)`) or as the form fields ' +
      '`client_id`/`client_secret`, not both. Answers a Bearer token valid for one hour. Errors per RFC 6749 §5.2, with the SPEC error list beside them.',
    tags: ['OAuth'],
    security: [{}, { clientBasic: [] }],
    requestBody: { required: true, content: { 'application/x-www-form-urlencoded': form, 'application/json': form } },
    responses: {
      '200': {
        description: 'An access token',
        headers: { 'Cache-Control': { description: 'no-store', schema: { type: 'string' } } },
        content: { 'application/json': { schema: lift(tokenSchemas.TokenResponse) } },
      },
      '400': oauthError(400, 'Bad request (invalid_request, unsupported_grant_type, invalid_scope); a request that is not parseable HTTP gets the SPEC error list alone', 'unsupported_grant_type', 'only client_credentials is supported', true),
      '401': oauthError(401, 'Client authentication failed (invalid_client)', 'invalid_client', 'client authentication failed'),
      '413': oauthError(413, 'Body over 64 KiB (invalid_request)', 'invalid_request', 'request body exceeds 64 KiB'),
      '415': oauthError(415, 'Body is neither a form nor JSON (invalid_request)', 'invalid_request', 'unsupported Content-Type'),
      '429': oauthError(429, 'Too many failed client authentications from this address, or too many tokens issued to this client (temporarily_unavailable): retry after Retry-After', 'temporarily_unavailable', 'too many tokens issued to this client: reuse a token until it expires (expires_in); retry after 1 s'),
      '500': generic(500),
      '503': generic(503),
    },
  };
}
