// The set-based upsert of POST /crm/customers/bulk, and the item checks imports share with it (imports apply
// the same 2026-11 semantics in SQL, straight from their staging table: src/imports/store.ts applyChunk).
// Items speak 2026-11: an item for an existing externalId is a patch (omitted fields kept, null clears);
// older versions reach here already upgraded to a patch that sets every field (see changes/2026-11-bulk-patch.ts).
// Per call, whatever the number of items: one SELECT … FOR UPDATE, one INSERT (with the creates' events), one
// UPDATE, one event write (the updates'); or, when every item is a new customer, one statement in all (insertIfAllNew).
import { Type, type Static } from '@sinclair/typebox';
import { strictAjv, type CheckBudget } from '../../http/validator.ts';
import type { Queryable } from '../../db/db.ts';
import { firstUnstorable, jsonKind, validationEntries, type ErrorEntry } from '../../http/errors.ts';
import { emitEvents, type NewEvent } from '../../events/emit.ts';
import { bulkBody, clearable, ExternalId } from './schema.ts';
import { customerDisabled, externalIdTaken, mergedAway } from './service.ts';
import type { CustomerRow } from './store.ts';
import { normalInput, patchAddresses, WRITABLE } from './wire.ts';
import { inputProblems } from './validate.ts';
import { insertAllNew, insertMany, lockByExternalIds, updateMany, type CustomerCols } from './bulk-store.ts';

/** One bulk/import item (2026-11): externalId is the key; every other field is optional and null clears it. */
export const BulkItem = Type.Object(
  { externalId: ExternalId, ...clearable },
  { additionalProperties: false, title: 'CustomerBulkItem', description: 'externalId is the key; from 2026-11 an item for an existing customer is a patch (null clears a field), until 2025-04 it replaces the record' },
);
export type BulkItemT = Static<typeof BulkItem>;

/** A bulk route's body of 1–max items, as validated (each item checked by the handler) and as documented. */
export const bulkBodies = (max: number) => ({ body: bulkBody(max), documentedBody: Type.Array(BulkItem, { minItems: 1, maxItems: max }) });

/** The fields a bulk item can carry besides externalId (and disabled, which a replace leaves alone), with the value that empties each. */
export const ITEM_FIELDS: Readonly<Record<string, unknown>> = Object.fromEntries(WRITABLE.map(([key, , empty]) => [key, empty]));

const validate = strictAjv.compile(BulkItem);

/**
 * Validation errors of one item, one entry per problem (at most 20); empty when the item is valid. The API's own
 * validator and messages (`"emails.0.email" must match format "email"`), so a bulk item or an import line is told
 * what POST would tell it. `budget`: what the request may still spend listing every problem (validator.ts), shared
 * by a bulk request's items; past it an item lists its first problem. `mayHoldUnstorable`: false when the request's JSON
 * text has no escape that could make a string PostgreSQL cannot store (errors.ts mayHoldUnstorable): its strings are not walked.
 */
export function itemErrors(item: unknown, budget?: CheckBudget, mayHoldUnstorable = true): ErrorEntry[] {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    const kind = jsonKind(item);
    return [{ message: `the item must be a customer (a JSON object), not ${kind}`, errorCode: 'InvalidParameterError', moreInfo: 'item' }];
  }
  if (validate(item, undefined, budget)) {
    const bad = mayHoldUnstorable ? firstUnstorable(item)?.path : undefined;
    if (bad !== undefined) return [{ message: `"${bad}" contains a NUL character or an unpaired surrogate`, errorCode: 'InvalidParameterError', moreInfo: bad }];
    return inputProblems(item as BulkItemT).slice(0, 20).map((p) => ({ ...p, errorCode: 'InvalidParameterError' }));
  }
  const errors = validate.errors ?? [];
  // A missing field is Tulip's invalidResourceMissingRequiredFields on a multiple-entities endpoint
  // (https://docs.tulip.com/integrating/aerial/errors/errors); every other problem InvalidParameterError, in the API's words.
  const missing = new Set(errors.filter((e) => e.keyword === 'required').map((e) => `${e.instancePath.replace(/^\//, '').replace(/\//g, '.')}${e.instancePath ? '.' : ''}${(e.params as any).missingProperty}`));
  return validationEntries(errors).slice(0, 20).map((e) =>
    missing.has(e.moreInfo) ? { message: `Could not create/update resource: missing field "${e.moreInfo}"`, errorCode: 'invalidResourceMissingRequiredFields', moreInfo: e.moreInfo } : e);
}

export interface Outcome {
  status: 200 | 201 | 400 | 403 | 409;
  /** 200: whether the customer was written (false: the item changed nothing). */
  changed?: boolean;
  row?: CustomerRow;
  errors?: ErrorEntry[];
}

export interface UpsertOptions {
  source: string;
  /** false: write no customerUpdate events (an import with events=false); creates write theirs in the insert. */
  events?: boolean;
  /**
   * Create only (POST in Tulip's 2025-08 and 2025-12, changes/2026-11-bulk-post-upserts.ts): an item whose externalId
   * exists (active, deactivated or merged away) is that item's 409 Conflict and changes nothing. The caller gives each
   * externalId once (createOnlyRepeats).
   */
  createOnly?: boolean;
}

/**
 * Create-only: the indexes of items repeating an externalId an earlier item of the request creates. Each is a 409
 * (the first creates the customer, so the later ones name a taken externalId) and is not applied.
 */
export function createOnlyRepeats(items: BulkItemT[]): Set<number> {
  const seen = new Set<string>();
  const repeats = new Set<number>();
  items.forEach((item, i) => (seen.has(item.externalId) ? repeats.add(i) : seen.add(item.externalId)));
  return repeats;
}

function cols(item: BulkItemT, cur?: CustomerRow): CustomerCols {
  const n = normalInput(item) as Record<string, unknown>;
  const out: Record<string, unknown> = { ...(cur ? { id: cur.id } : {}), external_id: item.externalId, disabled: item.disabled ?? null };
  for (const [key, column, empty] of WRITABLE) out[column] = key in n ? (n[key] ?? empty) : cur ? cur[column] : empty;
  out.email_keys = emailKeys(out.emails as { email: string }[]);
  return out as CustomerCols;
}

/** customers.email_keys of a list of emails: lower-cased, each once, in order. */
export function emailKeys(emails: { email: string }[]): string[] {
  return [...new Set(emails.map((e) => e.email.toLowerCase()))];
}

/** A concurrent transaction inserted one of our externalIds first: the caller's withRetry runs us again. */
export function lostRace(): Error {
  return Object.assign(new Error('concurrent insert of the same externalId'), { code: '40001' });
}

/**
 * Upserts valid items in the caller's transaction. Returns one outcome per item, in order.
 * Several items with the same externalId are folded, in order, into one patch (later fields win) and
 * applied once: each of them answers the final customer; the first answers 201 if it was created.
 */
export async function upsertItems(tx: Queryable, items: BulkItemT[], opts: UpsertOptions): Promise<Outcome[]> {
  const groups = groupItems(items);
  const current = new Map((await lockByExternalIds(tx, [...groups.keys()])).map((r) => [r.external_id, r]));

  const outcomes: Outcome[] = new Array(items.length);
  const toInsert: CustomerCols[] = [];
  const toUpdate: CustomerCols[] = [];
  for (const [xid, g] of groups) {
    const cur = current.get(xid);
    if (cur && opts.createOnly) {
      for (const i of g.indexes) outcomes[i] = { status: 409, errors: externalIdTaken(xid).entries };
    } else if (cur && mergedAway(cur)) {
      for (const i of g.indexes) outcomes[i] = { status: 403, errors: customerDisabled(cur).entries };
    } else {
      // An address naming a current one (or one an earlier item of the group gave) is a patch of it (patchAddresses),
      // checked again as it will be stored.
      let patch = foldedAddresses(g, cur?.addresses ?? []);
      let problems = patch === g.patch ? [] : inputProblems({ addresses: patch.addresses });
      if (problems.length > 0 && g.indexes.length > 1) {
        // Several items, and their addresses together are refused: applied one after another, the items whose
        // addresses would be refused at their turn are, and the others are applied (an item with no address was
        // refused for another item's zoneCode until 2026-11-29, and its change lost).
        const kept = sequentialGroup(g, items, cur?.addresses ?? [], (i, errs) => (outcomes[i] = { status: 400, errors: errs }));
        groups.set(xid, kept.group);
        if (kept.group.indexes.length === 0) continue;
        patch = kept.patch;
        problems = [];
      }
      if (problems.length > 0) for (const i of g.indexes) outcomes[i] = { status: 400, errors: addressErrors(problems) };
      else if (cur) toUpdate.push(cols(patch, cur));
      else toInsert.push(cols(patch));
    }
  }
  // The creates' events are written by the insert itself (in insertion order, before the updates' events).
  const inserted = await insertMany(tx, toInsert, opts.source);
  if (inserted.length !== toInsert.length) throw lostRace();
  const updated = new Map((await updateMany(tx, toUpdate)).map((r) => [r.external_id, r]));

  const events: NewEvent[] = [];
  const event = (eventType: 'customerUpdate', r: CustomerRow) =>
    events.push({ eventType, resourceType: 'Customer', resource: { uuid: r.uuid, externalId: r.external_id }, source: opts.source });
  insertedOutcomes(outcomes, groups, inserted);
  for (const c of toUpdate) {
    const r = updated.get(c.external_id);
    for (const i of groups.get(c.external_id)!.indexes) outcomes[i] = { status: 200, changed: r !== undefined, row: r ?? current.get(c.external_id) };
    if (r) event('customerUpdate', r);
  }
  if (opts.events !== false) await emitEvents(tx, events);
  return outcomes;
}

type Group = { indexes: number[]; patch: BulkItemT; addressLists: unknown[][] };
type Groups = Map<string, Group>;

/**
 * Items by externalId, in order of first appearance; several items for one externalId are folded into one patch,
 * their address lists kept in order (foldedAddresses applies them one after another).
 */
function groupItems(items: BulkItemT[]): Groups {
  const groups: Groups = new Map();
  items.forEach((item, i) => {
    let g = groups.get(item.externalId);
    if (g) {
      g.indexes.push(i);
      Object.assign(g.patch, item);
    } else groups.set(item.externalId, (g = { indexes: [i], patch: { ...item }, addressLists: [] }));
    if ('addresses' in item) g.addressLists.push(item.addresses ?? []);
  });
  return groups;
}

const addressErrors = (problems: ReturnType<typeof inputProblems>): ErrorEntry[] => problems.slice(0, 20).map((p) => ({ ...p, errorCode: 'InvalidParameterError' }));

/**
 * The group's items applied one after another onto `current`: an item whose address list, patched onto the addresses
 * the items before it left, would be refused is (`refuse`); the rest make the group returned, and its patch with the
 * addresses they leave. So the result is what a sequential application of the items would give (docs/imports.md,
 * "Duplicates in one request").
 */
function sequentialGroup(g: Group, items: BulkItemT[], current: readonly Record<string, unknown>[], refuse: (index: number, errors: ErrorEntry[]) => void): { group: Group; patch: BulkItemT } {
  const group: Group = { indexes: [], patch: {} as BulkItemT, addressLists: [] };
  let addresses: readonly Record<string, unknown>[] | undefined;
  for (const i of g.indexes) {
    const item = items[i];
    if ('addresses' in item) {
      const next = patchAddresses(item.addresses ?? [], addresses ?? current) as Record<string, unknown>[];
      const problems = inputProblems({ addresses: next });
      if (problems.length > 0) {
        refuse(i, addressErrors(problems));
        continue;
      }
      addresses = next;
    }
    group.indexes.push(i);
    Object.assign(group.patch, item);
  }
  return { group, patch: addresses === undefined ? group.patch : ({ ...group.patch, addresses } as BulkItemT) };
}

/**
 * The group's patch with its addresses as the items would leave them applied one after another onto `current`: each
 * list patches the addresses the one before left (patchAddresses). The last list alone lost an earlier item's change
 * to an address a later item also named ({uuid: U, city} then {uuid: U, address2}).
 */
function foldedAddresses(g: Group, current: readonly Record<string, unknown>[]): BulkItemT {
  if (g.addressLists.length === 0) return g.patch;
  const addresses = g.addressLists.reduce<readonly Record<string, unknown>[]>((cur, list) => patchAddresses(list, cur) as Record<string, unknown>[], current);
  return { ...g.patch, addresses } as BulkItemT;
}

/** A created customer answers 201 to the first of its items, 200 (unchanged) to the others. */
function insertedOutcomes(outcomes: Outcome[], groups: Groups, inserted: CustomerRow[]) {
  for (const r of inserted) {
    const [first, ...rest] = groups.get(r.external_id!)!.indexes; // bulk items all have one: their key
    outcomes[first] = { status: 201, row: r };
    for (const i of rest) outcomes[i] = { status: 200, changed: false, row: r };
  }
}

/**
 * Bulk's common case, every item a new customer, as ONE statement in autocommit (customers, customerCreate events,
 * deliveries: the shape of bench/bulk-floor.ts), so one round trip instead of BEGIN, lock, insert, COMMIT. Returns
 * the outcomes upsertItems would give, or undefined when the statement wrote nothing: an externalId exists, one was
 * inserted concurrently, or any error. The caller then runs upsertItems in a transaction, as it always did.
 */
export async function insertIfAllNew(db: Queryable, items: BulkItemT[], opts: UpsertOptions): Promise<Outcome[] | undefined> {
  const groups = groupItems(items);
  // Address lists folded across items are checked again: upsertItems does that.
  if ([...groups.values()].some((g) => g.addressLists.length > 1)) return undefined;
  let inserted: CustomerRow[];
  try {
    inserted = await insertAllNew(db, [...groups.values()].map((g) => cols(g.patch)), opts.source);
  } catch {
    return undefined;
  }
  if (inserted.length === 0) return undefined;
  const outcomes: Outcome[] = new Array(items.length);
  insertedOutcomes(outcomes, groups, inserted);
  return outcomes;
}
