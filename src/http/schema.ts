// Small TypeBox helpers shared by route schemas, and the shared Error schema.
//
// Named schemas: give a TypeBox schema `title: 'Name'` (e.g. `Type.Object({...}, { title: 'Customer' })`)
// and the OpenAPI document (src/http/versioning/openapi.ts) lifts it into `components.schemas.Name` and
// refers to it with `$ref` wherever it appears, so generated clients get a `Name` type. `Page(item)` of a
// named item is named `${item}Page`. (Not `$id`: Ajv, which validates requests, treats `$id` as a URI and
// refuses the same one twice in a schema.)
import { Type, type TUnsafe } from '@sinclair/typebox';
import { ERROR_CODES } from './errors.ts';

/** A string enum as JSON Schema `enum` (one clear validation error instead of an anyOf of consts). */
export function StringEnum<T extends string[]>(values: [...T], options: { default?: T[number]; description?: string; title?: string } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: values, ...options });
}

/** The "schema" of a 204: no body (the document declares the status without content). */
export const NoContent = Type.Unsafe<undefined>({ description: 'no body' });

/** SPEC §3: the body of every 4xx/5xx. Declare `{ 404: ErrorBody, 409: ErrorBody }` in a route's schema.response. */
export const ErrorEntry = Type.Object(
  {
    message: Type.String({ description: 'what went wrong, in English' }),
    errorCode: Type.String({ description: `${ERROR_CODES.join(', ')}; in a bulk item's errors also invalidResourceMissingRequiredFields` }),
    moreInfo: Type.String({ description: 'the field or detail concerned (may be empty)' }),
  },
  { title: 'ErrorEntry', description: 'one problem' },
);
export const ErrorBody = Type.Object(
  { errors: Type.Array(ErrorEntry, { minItems: 1, description: 'one entry per problem (e.g. one per invalid field)' }) },
  { title: 'Error', description: 'The error body of every 4xx/5xx answer (SPEC §3)' },
);
