// Associate (store employee) shapes on the wire (SPEC §4).
import { Type, type Static } from '@sinclair/typebox';
import { ExternalId } from '../customers/schema.ts';
import { PageQuery } from '../../http/pagination.ts';

const NullableStr = (max: number, extra = {}) => Type.Union([Type.String({ maxLength: max, ...extra }), Type.Null()]);
const closed = { additionalProperties: false } as const;

export const AssociateCreate = Type.Object(
  {
    externalId: ExternalId,
    firstName: Type.Optional(NullableStr(255)),
    lastName: Type.Optional(NullableStr(255)),
    email: Type.Optional(NullableStr(320, { format: 'email' })),
    storeId: Type.Optional(NullableStr(255)),
  },
  { ...closed, title: 'AssociateCreate' },
);
export type AssociateCreateT = Static<typeof AssociateCreate>;

export const Associate = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  externalId: Type.String(),
  firstName: Type.Union([Type.String(), Type.Null()]),
  lastName: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  storeId: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
}, { title: 'Associate', description: 'A store employee' });
export type AssociateT = Static<typeof Associate>;

export const AssociateIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255, description: 'associate uuid or externalId' }) });
export const AssociateListQuery = Type.Object({ ...PageQuery }, closed);
