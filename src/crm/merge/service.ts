// The customer merge (SPEC §6): one core operation behind every door. All validation happens before
// any change and reports every problem; the effect is one transaction of set-based statements, with
// the involved customers locked in id order so overlapping merges queue instead of deadlocking.
import type { Queryable } from '../../db/db.ts';
import { ApiError, validationEntries, type ErrorEntry } from '../../http/errors.ts';
import { strictAjv } from '../../http/validator.ts';
import { ExternalId } from '../customers/schema.ts';
import { emitEvents, type NewEvent } from '../../events/emit.ts';
import * as customers from '../customers/store.ts';
import { customerName } from '../customers/wire.ts';
import * as store from './store.ts';
import { MOVED_KEYS, TULIP_ID_PATTERN, TulipIdOrUuid, type Moved } from './schema.ts';
import { UUID } from '../../http/formats.ts';

/**
 * How the primary and the secondaries are named:
 *   uuidOrExternalId  the 2025-04+ merge, like every other customer {id}: a uuid match wins, else the externalId;
 *   uuidOrTulipId     the legacy PUT …/merge: a uuid, or Tulip's numeric customer id (the customer's `id`);
 *   externalId        the legacy PUT …/merge_by_external_id.
 */
export type MergeNaming = 'uuidOrExternalId' | 'uuidOrTulipId' | 'externalId';

export interface MergeInput {
  by: MergeNaming;
  primary: string;
  secondaries: string[];
  dryRun: boolean;
  /** The body field naming the secondaries (for error messages). */
  field: string;
  principalUuid: string | null;
  source: string;
}

export interface MergeOutcome {
  mergeUuid: string | null;
  primary: customers.CustomerRow;
  /** externalIds of the requested secondaries (all merged into the primary afterwards). */
  secondaryExternalIds: string[];
  moved: Moved;
  duplicatesRemoved: number;
  dryRun: boolean;
}

/** Thrown to roll a dry run back while carrying its (exact) result out of the transaction. */
export class DryRunRollback extends Error {
  constructor(readonly outcome: MergeOutcome) {
    super('dry run');
  }
}

/** A retryable failure (same SQLSTATE as a serialization failure) for withRetry. */
const retry = (why: string) => Object.assign(new Error(why), { code: '40001' });

/** A Tulip id as text: a positive number within bigint, leading zeros ignored (the schema's pattern). */
const TULIP_ID_RE = new RegExp(TULIP_ID_PATTERN);
const tulipId = (ref: string) => (TULIP_ID_RE.test(ref) ? BigInt(ref).toString() : undefined);

/**
 * The textual form under which two references name the same customer for sure, before any look-up (in the
 * legacy form a uuid-shaped reference can only be a uuid, a numeric one only an id; an externalId is exact).
 */
const norm = (by: MergeNaming, ref: string) =>
  by === 'uuidOrTulipId' ? (UUID.test(ref) ? ref.toLowerCase() : tulipId(ref) ?? ref) : ref;

/** The customer a reference names among the candidates, by the naming's precedence (a uuid match wins). */
function pick(by: MergeNaming, ref: string, rows: store.NamedCustomer[]): store.NamedCustomer | undefined {
  if (by !== 'externalId' && UUID.test(ref)) {
    const u = rows.find((r) => r.uuid === ref.toLowerCase());
    if (u) return u;
  }
  if (by === 'uuidOrTulipId') {
    const id = tulipId(ref);
    return id === undefined ? undefined : rows.find((r) => String(r.id) === id);
  }
  return rows.find((r) => r.external_id === ref);
}

/** Looks every reference up in one statement: reference → internal id (unknown ones absent). */
async function resolveAll(tx: Queryable, by: MergeNaming, refs: string[]): Promise<Map<string, string>> {
  const uuids = by === 'externalId' ? [] : refs.filter((r) => UUID.test(r));
  const externalIds = by === 'uuidOrTulipId' ? [] : refs;
  const ids = by === 'uuidOrTulipId' ? refs.map(tulipId).filter((x): x is string => x !== undefined) : [];
  const rows = await store.resolve(tx, { uuids, externalIds, ids });
  const found = new Map<string, string>();
  for (const ref of refs) {
    const c = pick(by, ref, rows);
    if (c) found.set(ref, c.id);
  }
  return found;
}

const validItem = { externalId: strictAjv.compile(ExternalId), uuidOrExternalId: strictAjv.compile(ExternalId), uuidOrTulipId: strictAjv.compile(TulipIdOrUuid) };

/**
 * Body checks that need no database, all at once, in list order (400): each secondary as sent (`raw`: the route
 * validates only the list, listBody) against its naming's schema, duplicates, and the primary among them.
 */
export function checkRequest(input: MergeInput, raw: readonly unknown[] = input.secondaries): void {
  const field = input.field;
  const problems: Pick<ErrorEntry, 'message' | 'moreInfo'>[] = [];
  const seen = new Set<string>();
  const primary = norm(input.by, input.primary);
  const valid = validItem[input.by];
  input.secondaries.forEach((ref, i) => {
    if (!valid(raw[i])) {
      problems.push(...validationEntries((valid.errors ?? []).map((e) => ({ ...e, instancePath: `/${field}/${i}${e.instancePath}` }))));
      return;
    }
    const key = norm(input.by, ref);
    if (key === primary) problems.push({ message: `"${field}.${i}" is the primary customer itself ("${ref}")`, moreInfo: `${field}.${i}` });
    else if (seen.has(key)) problems.push({ message: `"${field}.${i}" repeats "${ref}"`, moreInfo: `${field}.${i}` });
    seen.add(key);
  });
  if (problems.length > 0) throw ApiError.many('InvalidParameterError', problems);
}

function disabledProblem(c: store.LockedCustomer, role: string) {
  const into = c.merged_into_external_id ?? c.merged_into_uuid; // by uuid when it has no externalId
  return {
    message: `${role} customer ${customerName(c)} is disabled${c.merged_into_uuid ? `, merged into ${into}` : ''}`,
    moreInfo: c.merged_into_uuid ? `mergedInto: ${into} (${c.merged_into_uuid})` : 'disabled',
  };
}

/** Runs the merge in the caller's transaction (the caller retries on 40001/40P01). */
export async function mergeCustomers(tx: Queryable, input: MergeInput): Promise<MergeOutcome> {
  const refs = [input.primary, ...input.secondaries];
  const found = await resolveAll(tx, input.by, refs);
  // Two different names of one customer (its uuid and its externalId, say): the same 400 as the same name twice,
  // among the names that were found; checked before an unknown name's 404, as docs/merge.md orders the classes.
  const primaryId = found.get(input.primary);
  const problems400: { message: string; moreInfo: string }[] = [];
  const seen = new Set<string>();
  input.secondaries.forEach((ref, i) => {
    const id = found.get(ref);
    if (id === undefined) return;
    if (primaryId !== undefined && String(id) === String(primaryId)) problems400.push({ message: `"${input.field}.${i}" ("${ref}") names the primary customer itself`, moreInfo: `${input.field}.${i}` });
    else if (seen.has(String(id))) problems400.push({ message: `"${input.field}.${i}" ("${ref}") names a customer already listed`, moreInfo: `${input.field}.${i}` });
    seen.add(String(id));
  });
  if (problems400.length > 0) throw ApiError.many('InvalidParameterError', problems400);
  const unknown = refs.filter((r) => !found.has(r));
  if (primaryId === undefined || unknown.length > 0) {
    throw ApiError.many('NotFound', unknown.map((r) => ({ message: `customer "${r}" not found`, moreInfo: r === input.primary ? 'id' : r })));
  }
  const secondaryIds = input.secondaries.map((r) => found.get(r)!);

  // Lock primary, secondaries and whatever was merged into the secondaries, in id order.
  const lockSet = new Set([primaryId, ...secondaryIds, ...(await store.mergedInto(tx, secondaryIds))]);
  const locked = new Map((await store.lockCustomers(tx, [...lockSet])).map((c) => [c.id, c]));
  // A customer merged into a secondary between our look-up and the lock, or an externalId renamed: start over.
  if ((await store.mergedInto(tx, secondaryIds)).some((id) => !lockSet.has(id))) throw retry('merge lock set changed');
  const lockedRows = [...locked.values()].map((c) => ({ id: c.id, uuid: c.uuid, external_id: c.external_id }));
  if ([primaryId, ...secondaryIds].some((id, i) => pick(input.by, refs[i], lockedRows)?.id !== id)) throw retry('customer identifier changed');

  const primary = locked.get(primaryId)!;
  const problems: { message: string; moreInfo: string }[] = [];
  if (primary.status === 'disabled') problems.push(disabledProblem(primary, 'primary'));
  const pending: string[] = [];
  for (const id of secondaryIds) {
    const c = locked.get(id)!;
    if (c.status === 'active') pending.push(id);
    else if (c.merged_into !== primaryId) problems.push(disabledProblem(c, 'secondary'));
    // else: already merged into this primary, nothing left to do for it.
  }
  if (problems.length > 0) throw ApiError.many('CustomerDisabled', problems);

  const moved = Object.fromEntries(MOVED_KEYS.map((k) => [k, 0])) as Moved;
  let duplicatesRemoved = 0;
  let mergeUuid: string | null = null;
  // A dry run shows the primary as it is (the changes below are rolled back).
  const primaryBefore = input.dryRun ? await customers.findCustomerById(tx, primaryId) : undefined;
  // Each by its externalId, or by its uuid when it has none.
  const secondaryExternalIds = secondaryIds.map((id) => customerName(locked.get(id)!));
  if (pending.length > 0) {
    // The record comes first so the journal can refer to it (a dry run rolls it back with the rest).
    const rec = await store.insertMerge(tx, { primary: primaryId, secondaries: pending, principalUuid: input.principalUuid, source: input.source });
    for (const [key, table] of store.MOVED_TABLES) moved[key] = await store.moveRows(tx, rec.id, table, primaryId, pending);
    duplicatesRemoved = await store.dedupeAssociations(tx, rec.id, primaryId, pending);
    moved.associates = await store.moveRows(tx, rec.id, 'customer_associates', primaryId, pending);
    const changed = await store.disableAndRepoint(tx, rec.id, primaryId, pending);
    await store.touch(tx, primaryId);
    await store.finishMerge(tx, rec.id, moved, duplicatesRemoved);
    if (!input.dryRun) mergeUuid = rec.uuid;
    const ev = (eventType: 'customerMerge' | 'customerUpdate', c: { uuid: string; external_id: string | null }): NewEvent => ({
      eventType, resourceType: 'Customer', resource: { uuid: c.uuid, externalId: c.external_id }, source: input.source,
    });
    await emitEvents(tx, [ev('customerMerge', primary), ev('customerUpdate', primary), ...changed.map((c) => ev('customerUpdate', c))]);
  }
  const outcome: MergeOutcome = {
    mergeUuid, primary: primaryBefore ?? (await customers.findCustomerById(tx, primaryId)), secondaryExternalIds, moved, duplicatesRemoved, dryRun: input.dryRun,
  };
  if (input.dryRun) throw new DryRunRollback(outcome);
  return outcome;
}

