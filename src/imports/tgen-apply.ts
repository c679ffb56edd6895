// The apply step of a TGEN addresses import (https://docs.tulip.com/tgen/addresses): each staged line carries one
// address of one existing customer, which is merged into that customer's addresses instead of replacing them
// ("If the UUID of the Address Resource exists …, or no UUID is provided and an External ID exists, then an update is
// performed. Otherwise, the resource is created"). One chunk, in the worker's chunk transaction: read the chunk's
// lines, lock their customers (by externalId, or by uuid for one without: id order), merge in line order, write through
// bulk's upsert, or for a customer without an externalId as PATCH would (their events, unless the import has
// events=false). A line naming no customer is a NotFound line error; a merged-away one,
// CustomerDisabled (a deactivated one takes the address, as every write: docs/tulip-customers.md); one whose merged
// list the API would refuse (over 50 addresses, a uuid or externalId twice), a line error leaving the customer as it is.
import type { Queryable } from '../db/db.ts';
import { ApiError, notFound, type ErrorEntry } from '../http/errors.ts';
import { lockByKeys } from '../crm/customers/bulk-store.ts';
import { upsertItems, type BulkItemT } from '../crm/customers/bulk.ts';
import { mergedAway, patchCustomer } from '../crm/customers/service.ts';
import type { CustomerRow } from '../crm/customers/store.ts';
import type { CustomerInput } from '../crm/customers/schema.ts';
import { inputProblems } from '../crm/customers/validate.ts';
import { MAX_LIST_ITEMS } from '../crm/customers/schema.ts';
import { ADDRESS_KEYS, normalAddress, wholeAddress } from '../crm/customers/wire.ts';
import * as store from './store.ts';

export const isAddressesFile = (imp: Pick<store.ImportRow, 'format' | 'tgen_file'>) => imp.format === 'tgen' && !!imp.tgen_file?.startsWith('addresses ');

type Address = Record<string, unknown>;

/** A stored address as an item element: its null fields left out (an item's address omits what it does not set). */
const asItem = (a: Address): Address => Object.fromEntries(Object.entries(a).filter(([, v]) => v !== null && v !== undefined));

/** Two addresses with the same content: every field but the uuid equal, absent as null (false), as bulb_address_uuids compares them. */
const sameContent = (x: Address, y: Address): boolean => {
  const a = normalAddress(x);
  const b = normalAddress(y);
  return ADDRESS_KEYS.every((k) => k === 'uuid' || a[k] === b[k]);
};

/** What a line did to its customer's list: an address added, one changed, or nothing. */
export type MergeOutcome = 'added' | 'changed' | 'unchanged';

/**
 * The list with `a` merged in: it replaces the address with its uuid, else with its externalId (keeping that one's
 * uuid); an address with neither is the first current one with the same content (bulb_address_uuids's rule for every
 * writer: nothing changes), else it is added. Until 2026-11-30 an address with neither key was always added, so each
 * delivery of a file without keys added a copy of every address (a probe: 3 addresses became 10).
 */
export function mergeAddressOutcome(list: Address[], incoming: Address): { list: Address[]; outcome: MergeOutcome } {
  const a = asItem(incoming); // staging may store every key, null for those not given
  const at = a.uuid !== undefined
    // In any case, as the address uuid rules say (an upper-case uuid was a new address, then refused as a repeat).
    ? list.findIndex((x) => typeof x.uuid === 'string' && typeof a.uuid === 'string' && x.uuid.toLowerCase() === a.uuid.toLowerCase())
    : a.externalId !== undefined ? list.findIndex((x) => x.externalId === a.externalId) : list.findIndex((x) => sameContent(x, a));
  if (at === -1) return { list: [...list, a], outcome: 'added' };
  const merged = list[at].uuid !== undefined ? { ...a, uuid: list[at].uuid } : a;
  if (sameContent(list[at], merged) && list[at].uuid === merged.uuid) return { list, outcome: 'unchanged' };
  const next = [...list];
  next[at] = merged;
  return { list: next, outcome: 'changed' };
}

/**
 * Why the API would refuse a customer's merged list, in its words (the schema's maxItems, validate.ts's repeats); the
 * merge writes through bulk's upsert, which checks no list again. Only these two: stored addresses are not judged anew.
 */
export function mergedListErrors(list: Address[]): ErrorEntry[] {
  if (list.length > MAX_LIST_ITEMS) {
    return new ApiError('InvalidParameterError', `"addresses" must NOT have more than ${MAX_LIST_ITEMS} items: with this record the customer would have ${list.length}`, 'addresses').entries;
  }
  const repeats = inputProblems({ addresses: list }).filter((p) => /^addresses\.\d+\.(uuid|externalId)$/.test(p.moreInfo));
  return repeats.length ? ApiError.many('InvalidParameterError', repeats).entries : [];
}

export async function applyAddressChunk(
  tx: Queryable,
  imp: Pick<store.ImportRow, 'id' | 'applied_line' | 'with_events' | 'source'>,
  span: number,
): Promise<store.ChunkResult> {
  const { lines, more } = await store.chunkAddressLines(tx, imp.id, imp.applied_line, span);
  // A line names its customer by externalId, or (one without) by uuid (tgen.ts, resolved).
  const live = lines.filter((l) => !l.refused && (l.external_id !== null || l.new_uuid !== null));
  const locked = await lockByKeys(tx, [...new Set(live.flatMap((l) => l.external_id ?? []))], [...new Set(live.flatMap((l) => l.new_uuid ?? []))]);
  const byExternalId = new Map(locked.flatMap((c) => (c.external_id === null ? [] : [[c.external_id, c] as const])));
  const byUuid = new Map(locked.map((c) => [c.uuid, c]));
  const result: store.ChunkResult = { lines: lines.length, more, refused: lines.length - live.length, toInsert: 0, created: 0, updated: 0, disabled: [], errors: [] };
  // By the customer's uuid; `changed`: its lines that added or changed an address (each counted `updated` once the
  // customer is written; a line that changed nothing is `unchanged`: docs/imports-tgen.md, counts).
  const lists = new Map<string, { customer: CustomerRow; list: Address[]; lines: string[]; changed: number }>();
  for (const l of live) {
    const c = l.external_id !== null ? byExternalId.get(l.external_id) : byUuid.get(l.new_uuid!);
    if (!c) {
      result.errors!.push({ line: l.line, errors: notFound(`no customer "${(l.external_id ?? l.new_uuid!).slice(0, 100)}" (the customer column names a customer by uuid or externalId)`, 'customer').entries });
    } else if (mergedAway(c)) {
      result.disabled.push({ line: l.line, uuid: c.uuid, external_id: c.external_id, merged_into_uuid: c.merged_into_uuid, merged_into_external_id: c.merged_into_external_id });
    } else {
      const entry = lists.get(c.uuid) ?? { customer: c, list: (c.addresses ?? []).map(asItem), lines: [] as string[], changed: 0 };
      let list = entry.list;
      let changed = false;
      for (const a of l.addresses ?? []) {
        const m = mergeAddressOutcome(list, a);
        list = m.list;
        changed ||= m.outcome !== 'unchanged';
      }
      const errors = mergedListErrors(list);
      if (errors.length) {
        // The line is refused whole; the customer keeps the list of the lines before it.
        result.errors!.push({ line: l.line, errors });
        continue;
      }
      entry.list = list;
      entry.lines.push(l.line);
      if (changed) entry.changed += 1;
      lists.set(c.uuid, entry);
    }
  }
  // Each address whole: the list is the customer's, each address as merged above (bulk's upsert would otherwise patch
  // the current address its uuid names, keeping fields this full update empties: wire.ts, patchAddresses).
  const entries = [...lists.values()];
  const keyed = entries.filter((e) => e.customer.external_id !== null);
  const items = keyed.map((e) => ({ externalId: e.customer.external_id, addresses: e.list.map(wholeAddress) }) as BulkItemT);
  const outcomes = items.length ? await upsertItems(tx, items, { source: imp.source, events: imp.with_events }) : [];
  // Counted per line (not per customer written, as other imports count: docs/imports.md): a first import of 42
  // addresses of 27 customers said `updated 27, unchanged 15`. Events stay one per customer written.
  outcomes.forEach((o, i) => {
    if (o.errors) for (const line of keyed[i].lines) result.errors!.push({ line, errors: o.errors }); // refused: not counted changed
    else result.updated += keyed[i].changed;
  });
  // A customer without an externalId (bulk's upsert keys by it): patched as PATCH /crm/customers/{uuid} would.
  for (const e of entries.filter((x) => x.customer.external_id === null)) {
    try {
      await patchCustomer(tx, e.customer, { addresses: e.list.map(wholeAddress) } as CustomerInput, imp.source, imp.with_events);
      result.updated += e.changed;
    } catch (err) {
      // Refused before anything is written (its checks): its lines' errors, the customer as it was.
      if (!(err instanceof ApiError)) throw err;
      for (const line of e.lines) result.errors!.push({ line, errors: err.entries });
    }
  }
  return result;
}
