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
export const Address = Type.Object(
  {
    line1: Type.Optional(NullableStr(255)), line2: Type.Optional(NullableStr(255)), city: Type.Optional(NullableStr(255)),
    region: Type.Optional(NullableStr(255)), postalCode: Type.Optional(NullableStr(50)), country: Type.Optional(NullableStr(100)),
    type: Type.Optional(NullableStr(50)), isPrimary: Type.Optional(Type.Boolean()),
  },
  { ...closed, title: 'Address' },
);
export const SocialProfile = Type.Object({ network: Str(100, { minLength: 1 }), handle: Str(255, { minLength: 1 }) }, { ...closed, title: 'SocialProfile' });

export const ExternalId = Type.String({ minLength: 1, maxLength: 255, description: "the integrator's identifier, unique" });

/** Writable fields. */
const writable = {
  firstName: Type.Optional(NullableStr(255)),
  lastName: Type.Optional(NullableStr(255)),
  emails: Type.Optional(Type.Array(Email, { maxItems: 50 })),
  phones: Type.Optional(Type.Array(Phone, { maxItems: 50 })),
  addresses: Type.Optional(Type.Array(Address, { maxItems: 50 })),
  socialProfiles: Type.Optional(Type.Array(SocialProfile, { maxItems: 50 })),
  loyaltyTier: Type.Optional(NullableStr(100)),
};

export const CustomerCreate = Type.Object({ externalId: ExternalId, ...writable }, { ...closed, title: 'CustomerCreate', description: 'A new customer' });
export const CustomerPut = Type.Object(
  { externalId: Type.Optional(ExternalId), ...writable },
  { ...closed, title: 'CustomerReplace', description: 'Full replace: omitted fields are emptied' },
);
export const CustomerPatch = Type.Object(
  { externalId: Type.Optional(ExternalId), ...writable },
  { ...closed, minProperties: 1, title: 'CustomerPatch', description: 'Only the fields sent change; null clears a field' },
);
export type CustomerInput = Static<typeof CustomerPut>;

export const CustomerRef = Type.Object({ uuid: Type.String(), externalId: Type.String() }, { title: 'CustomerRef', description: 'A customer named by uuid and externalId' });

export const Customer = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  externalId: Type.String(),
  status: StringEnum(['active', 'disabled']),
  firstName: Type.Union([Type.String(), Type.Null()]),
  lastName: Type.Union([Type.String(), Type.Null()]),
  emails: Type.Array(Email),
  phones: Type.Array(Phone),
  addresses: Type.Array(Address),
  socialProfiles: Type.Array(SocialProfile),
  loyaltyTier: Type.Union([Type.String(), Type.Null()]),
  mergedInto: Type.Union([CustomerRef, Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
}, {
  title: 'Customer',
  description: 'A customer record (SPEC §4). `mergedInto` names the final surviving primary of a merged-away customer.',
  examples: [{
    uuid: '0b0f6a8e-5d0c-4a43-9e3a-2f5d7c1e9a10', externalId: 'ext-2155', status: 'active', firstName: 'Ada', lastName: 'Lovelace',
    emails: [{ email: 'ada@example.org', type: 'home', isPrimary: true }], phones: [], addresses: [], socialProfiles: [],
    loyaltyTier: 'gold', mergedInto: null, createdAt: '2026-11-02T10:00:00.000Z', updatedAt: '2026-11-02T10:00:00.000Z',
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
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'search: part of the name, an email or the externalId (case-insensitive)' })),
    status: Type.Optional(StringEnum(['active', 'disabled', 'all'], { default: 'active' })),
    updatedSince: Type.Optional(Type.String({ format: 'date-time' })),
  },
  closed,
);
export type ListQueryT = Static<typeof ListQuery>;

export const BulkBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: 100, description: '1–100 customers, upserted by externalId' });
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
