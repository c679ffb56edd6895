// The customer's wire shape (Tulip's names, SPEC §4 and §16), owned here for every reader and writer: the columns a
// row holds, how a row becomes the JSON every version serves (routes, bulk, merge, duplicates) and the same in SQL
// (the export), the normal form an address is stored in, and the writable fields with the value that empties each.
import { iso, isoNN } from '../../http/time.ts';
import type { CustomerT } from './schema.ts';

export interface CustomerRow {
  id: string;
  uuid: string;
  external_id: string | null;
  status: 'active' | 'disabled';
  first_name: string | null;
  last_name: string | null;
  prefix: string | null;
  suffix: string | null;
  emails: any[];
  phones: any[];
  addresses: any[];
  social_profiles: any[];
  loyalty_tier: string | null;
  exclude_from_campaigns: boolean;
  image: string | null;
  attributes: any[];
  merged_into_uuid: string | null;
  merged_into_external_id: string | null;
  created_at: string;
  updated_at: string;
}

/** How a message or a merge result names a customer: its externalId, else (it has none) its uuid. */
export const customerName = (c: { uuid: string; external_id: string | null }): string => c.external_id ?? c.uuid;

/** Writable fields: API name, column, the value that empties it (a full replace writes it for an omitted field). */
export const WRITABLE = [
  ['firstName', 'first_name', null], ['lastName', 'last_name', null], ['prefix', 'prefix', null], ['suffix', 'suffix', null],
  ['emails', 'emails', []], ['phones', 'phones', []], ['addresses', 'addresses', []], ['socialProfiles', 'social_profiles', []],
  ['loyaltyTier', 'loyalty_tier', null], ['excludeFromCampaigns', 'exclude_from_campaigns', false], ['image', 'image', null],
  ['attributes', 'attributes', []],
] as const;
export type WritableKey = (typeof WRITABLE)[number][0];
export type WritableColumn = (typeof WRITABLE)[number][1];
/** The writable columns, in WRITABLE's order. */
export const DATA_COLUMNS: WritableColumn[] = WRITABLE.map((f) => f[1]);
/** The jsonb ones (the others are text, but exclude_from_campaigns: boolean). */
export const JSON_COLUMNS = new Set<string>(['emails', 'phones', 'addresses', 'social_profiles', 'attributes']);
export const sqlType = (c: string) => (JSON_COLUMNS.has(c) ? 'jsonb' : c === 'exclude_from_campaigns' ? 'boolean' : 'text');

/** The columns of a customer row of table alias `t` (mergedInto from mergedIntoColumns, or NULL). */
export const rowColumns = (t: string) =>
  `${t}.id, ${t}.uuid, ${t}.external_id, ${t}.status, ${DATA_COLUMNS.map((c) => `${t}.${c}`).join(', ')}, ${t}.created_at, ${t}.updated_at`;

/**
 * The customer `t` was merged into (uuid, externalId), read by subqueries on `t`'s own merged_into, never by a join.
 * A look-up that locks `t` and waits for a merge is evaluated again on `t`'s new row, but a joined row stays as first
 * read: a write queued behind a merge saw no merge and changed the merged-away customer (re-activated it, took its
 * attached data), and the merge could no longer be undone. (A primary created after the look-up began would not be
 * seen by the subqueries: the look-up would have to wait for a merge into a customer created within that instant.)
 */
export const mergedIntoColumns = (t: string) =>
  `(SELECT m.uuid FROM customers m WHERE m.id = ${t}.merged_into) AS merged_into_uuid, ` +
  `(SELECT m.external_id FROM customers m WHERE m.id = ${t}.merged_into) AS merged_into_external_id`;

/**
 * The keys of a stored address, each present (null, false for the booleans). Served in jsonb's order of keys (shorter
 * first, then bytewise: city, type, uuid, phone, address1, …), not this one, on every read path: the export reads the
 * jsonb out as it is, and rebuilding each address in SQL cost it 3.5× its time (docs/tulip-customers.md "Key order").
 */
export const ADDRESS_KEYS = [
  'uuid', 'externalId', 'address1', 'address2', 'city', 'countryCode', 'zoneCode', 'postCode', 'firstName', 'lastName',
  'phone', 'emailAddress', 'type', 'disabled', 'isPrimary',
] as const;

/**
 * An address as sent → as stored (every key; a missing uuid stays null until the write assigns one in SQL). A literal
 * in ADDRESS_KEYS' order (its type holds it to them): a loop storing the keys one by one cost several times more,
 * the most of a bulk of 1,000 items of 50 addresses after its validation (bench/body-cost.ts).
 */
export function normalAddress(a: Record<string, unknown>): { [K in (typeof ADDRESS_KEYS)[number]]: unknown } {
  return {
    uuid: a.uuid ?? null, externalId: a.externalId ?? null, address1: a.address1 ?? null, address2: a.address2 ?? null,
    city: a.city ?? null, countryCode: a.countryCode ?? null, zoneCode: a.zoneCode ?? null, postCode: a.postCode ?? null,
    firstName: a.firstName ?? null, lastName: a.lastName ?? null, phone: a.phone ?? null, emailAddress: a.emailAddress ?? null,
    type: a.type ?? null, disabled: a.disabled ?? false, isPrimary: a.isPrimary ?? false,
  };
}

/**
 * The addresses of a partial update (PATCH; a bulk item for an existing customer, from 2026-11; a TGEN partial
 * update): the list given is the customer's new list, and an address in it that names one of the customer's
 * current addresses by uuid (else, sent without a uuid, by externalId) patches that address: the fields it gives
 * replace (null clears), the others are kept. Tulip: "addresses[0].uuid … Required for patching"
 * (docs.tulip.com/tgen/customers_partialupdate). Until 2026-11-28 the address was replaced by what was sent: a patch
 * of its city emptied its street, postal code and country. Each current address is patched once at most.
 */
export function patchAddresses(given: unknown[], current: readonly Record<string, unknown>[]): unknown[] {
  // The uuids the list names claim their addresses first: an address named by externalId does not patch one that
  // another address of the list names by uuid (both carried its uuid: found in review, 2026-11-29; migration 072).
  const named = new Set(given.map((a) => (a as { uuid?: unknown } | null)?.uuid).filter((u): u is string => typeof u === 'string' && u !== '').map((u) => u.toLowerCase()));
  const left = [...current];
  const take = (match: (c: Record<string, unknown>) => boolean) => {
    const i = left.findIndex(match);
    return i < 0 ? undefined : left.splice(i, 1)[0];
  };
  return given.map((a) => {
    if (typeof a !== 'object' || a === null || Array.isArray(a)) return a;
    const g = a as Record<string, unknown>;
    const uuid = typeof g.uuid === 'string' && g.uuid !== '' ? g.uuid.toLowerCase() : undefined;
    const externalId = typeof g.externalId === 'string' && g.externalId !== '' ? g.externalId : undefined;
    const c = uuid !== undefined ? take((x) => typeof x.uuid === 'string' && x.uuid.toLowerCase() === uuid)
      : externalId !== undefined ? take((x) => x.externalId === externalId && !(typeof x.uuid === 'string' && named.has(x.uuid.toLowerCase()))) : undefined;
    return c === undefined ? a : { ...c, ...g };
  });
}

/** A partial update with its addresses patched onto the customer's current ones (patchAddresses); as given without addresses. */
export function withPatchedAddresses<T extends { addresses?: unknown }>(input: T, current: readonly Record<string, unknown>[]): T {
  return Array.isArray(input.addresses) ? { ...input, addresses: patchAddresses(input.addresses, current) } : input;
}

/** The keys of an address a replace fills (every one but uuid), each at its empty value: null, false for the booleans. */
type EmptyAddress = { [K in Exclude<(typeof ADDRESS_KEYS)[number], 'uuid'>]: K extends 'disabled' | 'isPrimary' ? false : null };
/** A literal (its type holds it to ADDRESS_KEYS): V8 makes it at once, where a copy given one key at a time is slow. */
const emptyAddress = (): EmptyAddress => ({
  externalId: null, address1: null, address2: null, city: null, countryCode: null, zoneCode: null, postCode: null,
  firstName: null, lastName: null, phone: null, emailAddress: null, type: null, disabled: false, isPrimary: false,
});

/**
 * An address given whole: every key but uuid present (null, false), so that patchAddresses changes nothing of it
 * but its uuid. What a replace sends (PUT-like bulk items before 2026-11, a TGEN full update). The empty address with
 * the given keys over it: a spread copy given the missing keys one by one took microseconds a key in V8 (1,000 bulk
 * items of 50 addresses: seconds; bench/body-cost.ts). Its keys come in ADDRESS_KEYS' order, then the others given.
 */
export function wholeAddress(a: unknown): unknown {
  if (typeof a !== 'object' || a === null || Array.isArray(a)) return a;
  return Object.assign(emptyAddress(), a);
}

/** An attribute value as sent → as stored (languageExternalId always present). */
export const normalAttribute = (v: { attributeExternalId: string; value: string; languageExternalId?: string | null }) =>
  ({ attributeExternalId: v.attributeExternalId, value: v.value, languageExternalId: v.languageExternalId ?? null });

/** Addresses and attributes of an input in their stored form; other fields as they are. */
export function normalInput<T extends { addresses?: unknown; attributes?: unknown }>(input: T): T {
  const out = { ...input };
  if (Array.isArray(input.addresses)) out.addresses = input.addresses.map(normalAddress) as any;
  if (Array.isArray(input.attributes)) out.attributes = input.attributes.map(normalAttribute) as any;
  return out;
}

// Addresses and attributes are stored in their normal form (above), so a row reads out as it is.
export function shapeCustomer(r: CustomerRow): CustomerT {
  return {
    uuid: r.uuid,
    id: Number(r.id),
    externalId: r.external_id,
    status: r.status,
    disabled: r.status !== 'active',
    prefix: r.prefix,
    firstName: r.first_name,
    lastName: r.last_name,
    suffix: r.suffix,
    emails: r.emails,
    phones: r.phones,
    addresses: r.addresses,
    socialProfiles: r.social_profiles,
    loyaltyTier: r.loyalty_tier,
    excludeFromCampaigns: r.exclude_from_campaigns,
    image: r.image,
    attributes: r.attributes,
    mergedInto: r.merged_into_uuid ? { uuid: r.merged_into_uuid, externalId: r.merged_into_external_id! } : null,
    createdAt: isoNN(r.created_at),
    updatedAt: iso(r.updated_at)!,
  };
}

const TS = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** shapeCustomer in SQL, for customers `c` left-joined to their survivor `m`: the same keys in the same order. */
export const customerJsonSql = (c: string, m: string) => `json_build_object(
      'uuid', ${c}.uuid, 'id', ${c}.id, 'externalId', ${c}.external_id, 'status', ${c}.status, 'disabled', ${c}.status <> 'active',
      'prefix', ${c}.prefix, 'firstName', ${c}.first_name, 'lastName', ${c}.last_name, 'suffix', ${c}.suffix,
      'emails', ${c}.emails, 'phones', ${c}.phones, 'addresses', ${c}.addresses, 'socialProfiles', ${c}.social_profiles,
      'loyaltyTier', ${c}.loyalty_tier, 'excludeFromCampaigns', ${c}.exclude_from_campaigns, 'image', ${c}.image,
      'attributes', ${c}.attributes,
      'mergedInto', CASE WHEN ${m}.id IS NULL THEN NULL ELSE json_build_object('uuid', ${m}.uuid, 'externalId', ${m}.external_id) END,
      'createdAt', ${TS(`${c}.created_at`)}, 'updatedAt', ${TS(`${c}.updated_at`)})`;
