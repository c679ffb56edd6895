// SPEC §10.1: from 2026-11 a bulk item for an existing externalId is a patch (omitted fields are kept,
// null clears). Until 2025-04 the item replaced the record: the upgrade turns such an item into the
// patch that sets every field it omits to its empty value, which is exactly a replace.
import type { VersionChange } from '../route.ts';
import { ITEM_FIELDS } from '../../../crm/customers/bulk.ts';
import { wholeAddress } from '../../../crm/customers/wire.ts';

/**
 * The item made the patch a replace is, in place (the request's own parsed body): a copy cost as much as the parse of an
 * item of 850,000 keys, and a spread copy given keys after it is slow in V8 (microseconds a key: 1,000 items of 50
 * addresses took seconds, bench/body-cost.ts).
 */
export function replaceAsPatch(item: unknown): unknown {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
  const out = item as Record<string, unknown>;
  for (const [field, empty] of Object.entries(ITEM_FIELDS)) if (!(field in out)) out[field] = empty;
  // Each address given whole too: a replace does not patch the addresses it names (wire.ts, patchAddresses).
  if (Array.isArray(out.addresses)) out.addresses = out.addresses.map(wholeAddress);
  return out;
}

export const bulkItemsArePatches: VersionChange = {
  version: '2026-11',
  description: 'Bulk upsert items are patches: fields an item omits are kept (before 2026-11 they were emptied)',
  routes: Object.fromEntries(['customers.bulk', 'customers.bulkPut'].map((id) => [id, {
    upgradeRequest: (req: { body: unknown }) => {
      if (Array.isArray(req.body)) req.body = req.body.map(replaceAsPatch);
    },
  }])),
};
