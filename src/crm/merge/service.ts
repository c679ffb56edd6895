// The customer merge (SPEC §6): one core operation behind every door. All validation happens before
// any change and reports every problem; the effect is one transaction of set-based statements, with
// the involved customers locked in id order so overlapping merges queue instead of deadlocking.
import type { Queryable } from '../../db/db.ts';
import { ApiError } from '../../http/errors.ts';
import { emitEvents, type NewEvent } from '../../events/emit.ts';
import * as customers from '../customers/store.ts';
import * as store from './store.ts';
import { MOVED_KEYS, type Moved } from './schema.ts';

export interface MergeInput {
  /** How the primary and the secondaries are named. */
  by: 'uuid' | 'externalId';
  primary: string;
  secondaries: string[];
  dryRun: boolean;
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

const norm = (by: MergeInput['by'], ref: string) => (by === 'uuid' ? ref.toLowerCase() : ref);

/** Body checks that need no database: duplicates, and the primary among the secondaries (400). */
export function checkRequest(input: MergeInput, field: string): void {
  const problems: { message: string; moreInfo: string }[] = [];
  const seen = new Set<string>();
  const primary = norm(input.by, input.primary);
  input.secondaries.forEach((ref, i) => {
    const key = norm(input.by, ref);
    if (key === primary) problems.push({ message: `"${field}[${i}]" is the primary customer itself ("${ref}")`, moreInfo: `${field}.${i}` });
    else if (seen.has(key)) problems.push({ message: `"${field}[${i}]" repeats "${ref}"`, moreInfo: `${field}.${i}` });
    seen.add(key);
  });
  if (problems.length > 0) throw ApiError.many('InvalidParameterError', problems);
}

function disabledProblem(c: store.LockedCustomer, role: string) {
  return {
    message: `${role} customer ${c.external_id} is disabled${c.merged_into_external_id ? `, merged into ${c.merged_into_external_id}` : ''}`,
    moreInfo: c.merged_into_uuid ? `mergedInto: ${c.merged_into_external_id} (${c.merged_into_uuid})` : 'disabled',
  };
}

/** Runs the merge in the caller's transaction (the caller retries on 40001/40P01). */
export async function mergeCustomers(tx: Queryable, input: MergeInput): Promise<MergeOutcome> {
  const refs = [input.primary, ...input.secondaries];
  const found = new Map((await store.resolve(tx, input.by, refs)).map((r) => [norm(input.by, r.ref), r.id]));
  const unknown = refs.filter((r) => !found.has(norm(input.by, r)));
  if (unknown.length > 0) {
    throw ApiError.many('NotFound', unknown.map((r) => ({ message: `customer "${r}" not found`, moreInfo: r === input.primary ? 'id' : r })));
  }
  const primaryId = found.get(norm(input.by, input.primary))!;
  const secondaryIds = input.secondaries.map((r) => found.get(norm(input.by, r))!);

  // Lock primary, secondaries and whatever was merged into the secondaries, in id order.
  const lockSet = new Set([primaryId, ...secondaryIds, ...(await store.mergedInto(tx, secondaryIds))]);
  const locked = new Map((await store.lockCustomers(tx, [...lockSet])).map((c) => [c.id, c]));
  // A customer merged into a secondary between our look-up and the lock, or an externalId renamed: start over.
  if ((await store.mergedInto(tx, secondaryIds)).some((id) => !lockSet.has(id))) throw retry('merge lock set changed');
  const idOf = (c: store.LockedCustomer) => norm(input.by, input.by === 'uuid' ? c.uuid : c.external_id);
  if ([primaryId, ...secondaryIds].some((id, i) => idOf(locked.get(id)!) !== norm(input.by, refs[i]))) throw retry('customer identifier changed');

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
  const secondaryExternalIds = secondaryIds.map((id) => locked.get(id)!.external_id);
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
    const ev = (eventType: 'customerMerge' | 'customerUpdate', c: { uuid: string; external_id: string }): NewEvent => ({
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

