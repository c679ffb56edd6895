// Customer shapes on the wire (SPEC §4), as TypeBox schemas: validation, types and OpenAPI from one place.
import { Type, type Static } from '@sinclair/typebox';
import { ErrorEntry, StringEnum } from '../../http/schema.ts';

const Str = (max: number, extra = {}) => Type.String({ maxLength: max, ...extra });
const NullableStr = (max: number) => Type.Union([Str(max), Type.Null()]);
const closed = { additionalProperties: false } as const;

export const Email = Type.Object(
  { email: Str(320, { format: 'email' }), type: Type.Optional(NullableStr(50)), isPrimary: Type.Optional(Type.Boolean()) },
  { ...closed, title: 'Email' },
);
export const Phone = Type.Object(
  { number: Str(50, { minLength: 1 }), type: Type.Optional(NullableStr(50)), isPrimary: Type.Optional(Type.Boolean()) },
  { ...closed, title: 'Phone' },
);
// Tulip's address (docs.tulip.com/tgen/addresses), its limits; every field optional (accepting more than Tulip breaks
// no ported integration). countryCode must be in ISO 3166-1, zoneCode start with it, phone be E.164 (its shape is the
// schema's pattern, the numbering plan is not): checked in ./validate.ts.
export const Address = Type.Object(
  {
    uuid: Type.Optional(Type.String({ format: 'uuid', description: "the address's own id, assigned by Bulb; send it back to keep it" })),
    externalId: Type.Optional(NullableStr(255)),
    address1: Type.Optional(NullableStr(64)),
    address2: Type.Optional(NullableStr(64)),
    city: Type.Optional(NullableStr(32)),
    countryCode: Type.Optional(Type.Union([Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2, e.g. US' }), Type.Null()])),
    zoneCode: Type.Optional(Type.Union([Type.String({ pattern: '^[A-Z]{2}-[A-Z0-9]{1,3}$', description: 'ISO 3166-2, starting with the countryCode, e.g. US-CA' }), Type.Null()])),
    postCode: Type.Optional(NullableStr(10)),
    firstName: Type.Optional(NullableStr(64)),
    lastName: Type.Optional(NullableStr(64)),
    phone: Type.Optional(Type.Union([Type.String({ maxLength: 32, pattern: '^\\+[1-9][0-9]{1,14}$', description: 'E.164, e.g. +14155550100 (a number of a real numbering plan: checked beyond the pattern)' }), Type.Null()])),
    emailAddress: Type.Optional(Type.Union([Type.String({ maxLength: 255, format: 'email' }), Type.Null()])),
    type: Type.Optional(NullableStr(255)),
    disabled: Type.Optional(Type.Boolean()),
    isPrimary: Type.Optional(Type.Boolean()),
  },
  { ...closed, title: 'Address' },
);
/** An address as every version serves it: every key present (null, or false for the booleans). */
export const StoredAddress = Type.Object(
  {
    uuid: Type.String({ format: 'uuid' }),
    externalId: Type.Union([Type.String(), Type.Null()]),
    address1: Type.Union([Type.String(), Type.Null()]),
    address2: Type.Union([Type.String(), Type.Null()]),
    city: Type.Union([Type.String(), Type.Null()]),
    countryCode: Type.Union([Type.String(), Type.Null()]),
    zoneCode: Type.Union([Type.String(), Type.Null()]),
    postCode: Type.Union([Type.String(), Type.Null()]),
    firstName: Type.Union([Type.String(), Type.Null()]),
    lastName: Type.Union([Type.String(), Type.Null()]),
    phone: Type.Union([Type.String(), Type.Null()]),
    emailAddress: Type.Union([Type.String(), Type.Null()]),
    type: Type.Union([Type.String(), Type.Null()]),
    disabled: Type.Boolean(),
    isPrimary: Type.Boolean(),
  },
  { title: 'CustomerAddress', description: "A customer's address with Tulip's names (SPEC §16)" },
);
/** A custom attribute's value on a customer (docs.tulip.com/integrating/aerial/customattributes). */
export const AttributeValue = Type.Object(
  {
    attributeExternalId: Str(255, { minLength: 1, description: 'externalId of a customer attribute (POST /crm/customerAttributes)' }),
    value: Str(4096, { description: 'the value (attributes are of type string)' }),
    languageExternalId: Type.Optional(NullableStr(255)),
  },
  { ...closed, title: 'AttributeValue' },
);
export const SocialProfile = Type.Object({ network: Str(100, { minLength: 1 }), handle: Str(255, { minLength: 1 }) }, { ...closed, title: 'SocialProfile' });

export const ExternalId = Type.String({ minLength: 1, maxLength: 255, description: "the integrator's identifier, unique" });

/** How many emails, phones, addresses or social profiles a customer holds at most. */
export const MAX_LIST_ITEMS = 50;

/** Writable fields (Tulip's limits: names, prefix, suffix 64; image 255, docs.tulip.com/tgen/customers_partialupdate). */
const writable = {
  firstName: Type.Optional(NullableStr(64)),
  lastName: Type.Optional(NullableStr(64)),
  prefix: Type.Optional(NullableStr(64)),
  suffix: Type.Optional(NullableStr(64)),
  emails: Type.Optional(Type.Array(Email, { maxItems: MAX_LIST_ITEMS })),
  phones: Type.Optional(Type.Array(Phone, { maxItems: MAX_LIST_ITEMS })),
  addresses: Type.Optional(Type.Array(Address, { maxItems: MAX_LIST_ITEMS })),
  socialProfiles: Type.Optional(Type.Array(SocialProfile, { maxItems: MAX_LIST_ITEMS })),
  loyaltyTier: Type.Optional(NullableStr(100)),
  excludeFromCampaigns: Type.Optional(Type.Boolean()),
  image: Type.Optional(Type.Union([Type.String({ maxLength: 255, format: 'uri', description: 'image URL' }), Type.Null()])),
  attributes: Type.Optional(Type.Array(AttributeValue, { maxItems: 100 })),
  disabled: Type.Optional(Type.Boolean({ description: 'true deactivates the customer (no merge); false re-activates one deactivated that way; omitted: unchanged' })),
};

// externalId is optional, as Tulip documents it (docs.tulip.com/tgen/customers: "Required: No"): a customer created
// without one is found by its uuid, and may be given one later by PUT or PATCH (docs.tulip.com/integrating/webhooks/
// automatingexternalidassignment). Bulk items still need it: it is their upsert key.
/** A list as a patch takes it: null empties it, as it does a text field. */
const List = <T extends import('@sinclair/typebox').TSchema>(t: T, maxItems = 50) => Type.Union([Type.Array(t, { maxItems }), Type.Null()]);
/**
 * The writable fields, each of which null empties (a list [], excludeFromCampaigns false): a patch (PATCH, 2026-11
 * bulk items and import lines) clears them so; a create and a full replace (POST, PUT, and the bulk items of older
 * versions) take null as the empty value too. Until 2026-11-29 a POST or PUT refused the null lists and flag a bulk
 * item of the same version took (found by a probe; Tulip's partial update says attributes and addresses "Support
 * SET_AS_NULL").
 */
export const clearable = {
  ...writable,
  emails: Type.Optional(List(Email)),
  phones: Type.Optional(List(Phone)),
  addresses: Type.Optional(List(Address)),
  socialProfiles: Type.Optional(List(SocialProfile)),
  excludeFromCampaigns: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { description: 'null: false' })),
  attributes: Type.Optional(List(AttributeValue, 100)),
};
// A create's externalId may be null, meaning none, as GET serves a customer without one: a client that re-posts what it
// read (another Bulb's export line, a copy) was refused for it (a 400 until 2026-11-30, found by a round-trip probe).
// PUT and PATCH do not take null: an externalId cannot be cleared.
export const CustomerCreate = Type.Object(
  { externalId: Type.Optional(Type.Union([ExternalId, Type.Null()], { description: "the integrator's identifier, unique; null or omitted: none (find the customer by its uuid)" })), ...clearable },
  { ...closed, title: 'CustomerCreate', description: 'A new customer' },
);
export const CustomerPut = Type.Object(
  { externalId: Type.Optional(ExternalId), ...clearable },
  { ...closed, title: 'CustomerReplace', description: 'Full replace: omitted fields are emptied (null empties too)' },
);
export const CustomerPatch = Type.Object(
  { externalId: Type.Optional(ExternalId), ...clearable },
  { ...closed, minProperties: 1, title: 'CustomerPatch', description: 'Only the fields sent change; null clears a field' },
);
export type CustomerInput = Static<typeof CustomerPut>;

export const CustomerRef = Type.Object({ uuid: Type.String(), externalId: Type.Union([Type.String(), Type.Null()]) }, { title: 'CustomerRef', description: 'A customer named by uuid and externalId (null: it has none)' });

export const Customer = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  id: Type.Integer({ description: "Tulip's numeric id: stable, assigned at creation" }),
  externalId: Type.Union([Type.String(), Type.Null()], { description: "the integrator's identifier; null until one is given" }),
  status: StringEnum(['active', 'disabled']),
  disabled: Type.Boolean({ description: 'true exactly when status is not active (merged away, or deactivated with disabled: true)' }),
  prefix: Type.Union([Type.String(), Type.Null()]),
  firstName: Type.Union([Type.String(), Type.Null()]),
  lastName: Type.Union([Type.String(), Type.Null()]),
  suffix: Type.Union([Type.String(), Type.Null()]),
  emails: Type.Array(Email),
  phones: Type.Array(Phone),
  addresses: Type.Array(StoredAddress),
  socialProfiles: Type.Array(SocialProfile),
  loyaltyTier: Type.Union([Type.String(), Type.Null()]),
  excludeFromCampaigns: Type.Boolean(),
  image: Type.Union([Type.String(), Type.Null()]),
  attributes: Type.Array(Type.Object({ attributeExternalId: Type.String(), value: Type.String(), languageExternalId: Type.Union([Type.String(), Type.Null()]) })),
  mergedInto: Type.Union([CustomerRef, Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
}, {
  title: 'Customer',
  description: 'A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer.',
  examples: [{
    uuid: '0b0f6a8e-5d0c-4a43-9e3a-2f5d7c1e9a10', id: 2155, externalId: 'ext-2155', status: 'active', disabled: false,
    prefix: 'Ms', firstName: 'Ada', lastName: 'Lovelace', suffix: null,
    emails: [{ email: 'ada@example.org', type: 'home', isPrimary: true }], phones: [], addresses: [], socialProfiles: [],
    loyaltyTier: 'gold', excludeFromCampaigns: false, image: null, attributes: [], mergedInto: null, createdAt: '2026-11-02T10:00:00.000Z', updatedAt: '2026-11-02T10:00:00.000Z',
  }],
});
export type CustomerT = Static<typeof Customer>;

export const CustomerIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255, description: 'customer uuid or externalId' }) });

export const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    externalId: Type.Optional(ExternalId),
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: 'search: part of the name, an email or the externalId (case-insensitive; not only spaces). A term without three letters or digits in a row, or one whose every word many customers share the letters of (an email domain, a common name), is looked for in 10,000 customers per page: such a page may hold fewer than limit customers, none even, and still have a nextCursor' })),
    status: Type.Optional(StringEnum(['active', 'disabled', 'all'], { default: 'active' })),
    updatedSince: Type.Optional(Type.String({ format: 'date-time' })),
  },
  closed,
);
export type ListQueryT = Static<typeof ListQuery>;

/** Items a bulk request takes: Bulb's versions (SPEC §5) and Tulip's 2025-08 and 2025-12 (changes/2026-11-bulk-limit.ts). */
export const BULK_MAX_ITEMS = 100;
export const TULIP_BULK_MAX_ITEMS = 1000;
export const bulkBody = (max: number) => Type.Array(Type.Unknown(), { minItems: 1, maxItems: max, description: `1–${max} customers, upserted by externalId` });
export const BulkResult = Type.Object({
  results: Type.Array(
    Type.Object({
      index: Type.Integer({ description: 'position of the item in the request' }),
      status: Type.Union([Type.Literal(200), Type.Literal(201), Type.Literal(400), Type.Literal(403), Type.Literal(409)], { description: '403: the customer is disabled (CustomerDisabled)' }),
      customer: Type.Optional(Customer),
      errors: Type.Optional(Type.Array(ErrorEntry)),
    }, { title: 'BulkItemResult' }),
  ),
}, { title: 'BulkResult', description: 'One result per item, in order' });
