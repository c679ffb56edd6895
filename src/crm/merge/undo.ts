// Undoing a merge (SPEC §13): the secondaries come back active, exactly the journaled rows go back to the
// customer they came from, removed duplicate associations come back, re-pointed customers point to their
// former survivor. Refused (409 MergeNotUndoable) when undone already, out of its window, or when a later
// merge disabled its primary or a secondary. Locks: the merge row, then the customers in id order (as the
// merge does), so undos and merges queue instead of deadlocking.
import type { Queryable } from '../../db/db.ts';
import { ApiError, notFound } from '../../http/errors.ts';
import { isoNN } from '../../http/time.ts';
import { emitEvents, type NewEvent } from '../../events/emit.ts';
import * as customers from '../customers/store.ts';
import { customerName } from '../customers/wire.ts';
import * as store from './store.ts';
import * as undoStore from './undo-store.ts';
import { MOVED_KEYS, type Moved } from './schema.ts';

export interface UndoInput {
  mergeUuid: string;
  dryRun: boolean;
  windowDays: number;
  source: string;
}

export interface UndoOutcome {
  mergeUuid: string;
  undone: boolean;
  primary: customers.CustomerRow;
  restoredCustomerIds: string[];
  movedBack: Moved;
  associationsRestored: number;
  dryRun: boolean;
}

/** Carries a dry run's exact result out of its rolled-back transaction. */
export class UndoDryRun extends Error {
  constructor(readonly outcome: UndoOutcome) {
    super('dry run');
  }
}

const notUndoable = (message: string, moreInfo: string) => new ApiError('MergeNotUndoable', message, moreInfo);

export async function undoMerge(tx: Queryable, input: UndoInput): Promise<UndoOutcome> {
  const m = await undoStore.lockMerge(tx, input.mergeUuid, input.windowDays);
  if (!m) throw notFound(`merge "${input.mergeUuid}" not found`, 'mergeUuid');
  if (m.undone_at) throw notUndoable(`merge ${m.uuid} was undone already`, `undone already at ${isoNN(m.undone_at)}`);
  if (m.expired) {
    throw notUndoable(`merge ${m.uuid} is older than the undo window`, `window passed: merges can be undone for ${input.windowDays} days (BULB_UNMERGE_WINDOW_DAYS); this one was made at ${isoNN(m.created_at)}`);
  }

  const lockIds = [...new Set([m.primary_id, ...m.secondary_ids, ...m.repointed_ids])];
  const locked = new Map((await store.lockCustomers(tx, lockIds)).map((c) => [c.id, c]));
  const primary = locked.get(m.primary_id)!;
  const moved = (id: string) => locked.get(id)!.status === 'disabled' && locked.get(id)!.merged_into === m.primary_id;
  if (primary.status !== 'active' || !m.secondary_ids.every(moved) || !m.repointed_ids.every(moved)) {
    const later = await undoStore.laterMergeOf(tx, m.id, lockIds);
    if (later) throw notUndoable(`merge ${m.uuid} cannot be undone: a later merge changed its customers`, `a later merge (${later.uuid}) disabled its primary or one of its secondaries: undo that merge first`);
    // No later merge: the primary was deactivated by hand (PATCH disabled: true), which an undo does not reverse.
    if (primary.status !== 'active' && primary.merged_into === null) {
      throw notUndoable(`merge ${m.uuid} cannot be undone: its primary "${customerName(primary)}" is deactivated`, `re-activate customer "${customerName(primary)}" first (PATCH {"disabled": false}), then undo`);
    }
    throw notUndoable(`merge ${m.uuid} cannot be undone: its customers changed since the merge`, 'its primary or one of its secondaries changed since the merge');
  }

  const primaryBefore = input.dryRun ? await customers.findCustomerById(tx, m.primary_id) : undefined;
  const movedBack = Object.fromEntries(MOVED_KEYS.map((k) => [k, 0])) as Moved;
  for (const [key, table] of store.MOVED_TABLES) movedBack[key] = await undoStore.moveBack(tx, m.id, table, m.primary_id);
  movedBack.associates = await undoStore.moveBack(tx, m.id, 'customer_associates', m.primary_id);
  const associationsRestored = await undoStore.restoreAssociations(tx, m.id);
  await undoStore.reattachLaterDuplicates(tx, m.id, m.primary_id);
  const restored = await undoStore.reactivate(tx, m.secondary_ids);
  const repointed = await undoStore.repointBack(tx, m.repointed_ids, m.repointed_from);
  await store.touch(tx, m.primary_id);
  await undoStore.markUndone(tx, m.id);

  const ev = (eventType: 'customerUnmerge' | 'customerUpdate', c: { uuid: string; external_id: string | null }): NewEvent => ({
    eventType, resourceType: 'Customer', resource: { uuid: c.uuid, externalId: c.external_id }, source: input.source,
  });
  await emitEvents(tx, [ev('customerUnmerge', primary), ev('customerUpdate', primary), ...restored.map((c) => ev('customerUpdate', c)), ...repointed.map((c) => ev('customerUpdate', c))]);

  const outcome: UndoOutcome = {
    mergeUuid: m.uuid,
    undone: !input.dryRun,
    primary: primaryBefore ?? (await customers.findCustomerById(tx, m.primary_id)),
    restoredCustomerIds: m.secondary_ids.map((id) => customerName(locked.get(id)!)), // by uuid when it has no externalId
    movedBack,
    associationsRestored,
    dryRun: input.dryRun,
  };
  if (input.dryRun) throw new UndoDryRun(outcome);
  return outcome;
}
