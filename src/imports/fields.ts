// The item fields an import line stages as columns of import_rows (migration 018), in column order: item key,
// column, kind. A line's `fields` has bit 1 << index for each field it carries. Staging writes them
// (staging.ts); applying a chunk reads them (store.ts applyChunk).
export const FIELDS = [
  ['firstName', 'first_name', 'text'], ['lastName', 'last_name', 'text'], ['emails', 'emails', 'json'], ['phones', 'phones', 'json'],
  ['addresses', 'addresses', 'json'], ['socialProfiles', 'social_profiles', 'json'], ['loyaltyTier', 'loyalty_tier', 'text'],
] as const;

/** The `fields` bit of one item key. */
export const fieldBit = (key: (typeof FIELDS)[number][0]): number => 1 << FIELDS.findIndex(([k]) => k === key);
