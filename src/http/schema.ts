// Small TypeBox helpers shared by route schemas.
import { Type, type TUnsafe } from '@sinclair/typebox';

/** A string enum as JSON Schema `enum` (one clear validation error instead of an anyOf of consts). */
export function StringEnum<T extends string[]>(values: [...T], options: { default?: T[number]; description?: string } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: values, ...options });
}
