// The item fields an import line stages as columns of import_rows (migrations 018 and 028), in column order: item
// key, column, kind. A line's `fields` has bit 1 << index for each field it carries. Staging writes them
// (staging.ts); applying a chunk reads them (store.ts applyChunk). All but `disabled` are customer columns of the
// same name; `disabled` sets the customer's status.
export const FIELDS = [
  ['firstName', 'first_name', 'text'], ['lastName', 'last_name', 'text'], ['emails', 'emails', 'json'], ['phones', 'phones', 'json'],
  ['addresses', 'addresses', 'json'], ['socialProfiles', 'social_profiles', 'json'], ['loyaltyTier', 'loyalty_tier', 'text'],
  ['prefix', 'prefix', 'text'], ['suffix', 'suffix', 'text'], ['excludeFromCampaigns', 'exclude_from_campaigns', 'bool'],
  ['image', 'image', 'text'], ['attributes', 'attributes', 'json'], ['disabled', 'disabled', 'bool'],
] as const;

/** The `fields` bit of one item key. */
export const fieldBit = (key: (typeof FIELDS)[number][0]): number => 1 << FIELDS.findIndex(([k]) => k === key);
