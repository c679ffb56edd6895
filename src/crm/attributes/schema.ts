// Customer attribute shapes on the wire: Tulip's custom attributes (docs.tulip.com/integrating/aerial/customattributes):
// the keys of the key/value pairs a customer's `attributes` carry. Tulip documents one type, string.
import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from '../../http/schema.ts';
import { PageQuery } from '../../http/pagination.ts';

export const ATTRIBUTE_TYPES = ['string'] as const;

export const CustomerAttributeCreate = Type.Object(
  {
    externalId: Type.String({ minLength: 1, maxLength: 255, description: 'the key customers name in attributes[].attributeExternalId; unique' }),
    type: Type.Optional(StringEnum([...ATTRIBUTE_TYPES], { default: 'string', description: "type of the attribute's values (Tulip documents string)" })),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
  },
  { additionalProperties: false, title: 'CustomerAttributeCreate' },
);
export type CustomerAttributeCreateT = Static<typeof CustomerAttributeCreate>;

export const CustomerAttribute = Type.Object(
  {
    uuid: Type.String({ format: 'uuid' }),
    externalId: Type.String(),
    type: StringEnum([...ATTRIBUTE_TYPES]),
    description: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'CustomerAttribute', description: 'A custom attribute customers can carry a value of' },
);
export type CustomerAttributeT = Static<typeof CustomerAttribute>;

export const AttributeIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255, description: 'attribute uuid or externalId' }) });
export const AttributeListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
