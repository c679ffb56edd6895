// Customer operations. Each runs in the caller's transaction and writes its event there too.
import type { Queryable } from '../../db/db.ts';
import { lostRaceError, sqlState } from '../../db/db.ts';
import { ApiError, conflict, invalid } from '../../http/errors.ts';
import { emitEvent, emitEvents } from '../../events/emit.ts';
import type { CustomerInput } from './schema.ts';
import * as store from './store.ts';
import { customerName, WRITABLE, withPatchedAddresses } from './wire.ts';
import { checkAttributes, checkInput, RESERVED_EXTERNAL_IDS, RESERVED_MESSAGE } from './validate.ts';

const customerEvent = (eventType: 'customerCreate' | 'customerUpdate', row: store.CustomerRow, source: string) => ({
  eventType,
  resourceType: 'Customer',
  resource: { uuid: row.uuid, externalId: row.external_id },
  source,
});

/** 403 CustomerDisabled for a write to a customer merged away (only undoing its merge brings it back). */
export function customerDisabled(row: Pick<store.CustomerRow, 'uuid' | 'external_id' | 'merged_into_uuid' | 'merged_into_external_id'>): ApiError {
  const name = customerName(row);
  const into = row.merged_into_uuid && (row.merged_into_external_id ?? row.merged_into_uuid);
  return row.merged_into_uuid
    ? new ApiError('CustomerDisabled', `customer ${name} is disabled: merged into ${into}; only undoing the merge brings it back`, `merged into ${into} (${row.merged_into_uuid})`)
    : new ApiError('CustomerDisabled', `customer ${name} is disabled`, 'disabled');
}

/** 409 Conflict: a create names an externalId a customer (any status) already has. */
export const externalIdTaken = (externalId: string) => conflict(`a customer with externalId "${externalId}" already exists`, 'externalId');

/** Whether a customer was merged away (disabled by a merge, not by `disabled: true`): no write may change it. */
export const mergedAway = (row: Pick<store.CustomerRow, 'merged_into_uuid'>) => row.merged_into_uuid !== null;

/** The checks of a write that need more than the schema (400 naming the field; nothing is written). */
async function checkWrite(tx: Queryable, input: CustomerInput): Promise<void> {
  checkInput(input);
  await checkAttributes(tx, input);
}

/** Creates a customer with its event in one statement: on its own (db, autocommit) one round trip. */
export async function createCustomer(tx: Queryable, input: CustomerInput, source: string): Promise<store.CustomerRow> {
  await checkWrite(tx, input);
  const row = await store.insertCustomerWithEvent(tx, input, source);
  if (!row) throw externalIdTaken(input.externalId!); // only an externalId can be taken
  return row;
}

/**
 * Full replace of an existing (locked) customer; emits customerUpdate only if something changed. A customer merged
 * away is refused (403 CustomerDisabled); one deactivated with `disabled: true` takes writes (and `disabled: false` re-activates it).
 */
export async function replaceExisting(tx: Queryable, current: store.CustomerRow, input: store.CustomerValues, source: string, events = true): Promise<store.CustomerRow> {
  if (mergedAway(current)) throw customerDisabled(current);
  let changed: boolean;
  try {
    changed = await store.replaceCustomer(tx, current.id, input);
  } catch (err) {
    if (sqlState(err) === '23505') throw externalIdTaken(input.externalId!);
    throw err;
  }
  if (!changed) return current;
  const row = await store.findCustomerById(tx, current.id);
  if (events) await emitEvent(tx, customerEvent('customerUpdate', row, source));
  // The customers merged into this one show its externalId (mergedInto): theirs changed too. Locked already
  // (lockForWrite), or, if merged into it since, only if no other transaction holds them (else the write runs again).
  if (row.external_id !== current.external_id) {
    const shown = await store.touchMergedInto(tx, current.id).catch((err) => {
      throw sqlState(err) === '55P03' ? lostRaceError('a customer merged into it meanwhile is locked') : err;
    });
    if (events && shown.length) await emitEvents(tx, shown.map((c) => ({ eventType: 'customerUpdate', resourceType: 'Customer', resource: { uuid: c.uuid, externalId: c.external_id }, source })));
  }
  return row;
}

/**
 * The customer a PUT or PATCH writes (`ref`: uuid or externalId), locked FOR NO KEY UPDATE. One the body renames
 * (`externalId` given, other than its own) is locked with the customers merged into it, which the rename changes too
 * (touchMergedInto), all in id order: the order a merge of it and the undo of a merge into it take them in (docs/merge.md
 * "Lock order"). Locked survivor first, the rename deadlocked with a merge of the survivor that had locked a customer
 * merged into it with a lower id (a probe, 2026-11-30: 81 deadlocks in 30 s of renames beside merges and undos).
 */
export async function lockForWrite(tx: Queryable, ref: string, externalId: string | null | undefined): Promise<store.CustomerRow | undefined> {
  if (typeof externalId === 'string') {
    const seen = await store.findWithMergedIn(tx, ref);
    if (seen && seen.external_id !== externalId && seen.merged.length > 0) {
      await store.lockIds(tx, [seen.id, ...seen.merged]);
      const row = await store.findCustomer(tx, seen.uuid, true);
      // Renamed meanwhile, `ref` (an externalId) may name another customer now, or none: run again and look it up anew.
      if (!row || (row.uuid !== ref.toLowerCase() && row.external_id !== ref)) throw lostRaceError('the customer was renamed meanwhile');
      return row;
    }
  }
  return store.findCustomer(tx, ref, true);
}

/** PUT /customers/{id}: replace, or create when the id is unknown. */
export async function putCustomer(tx: Queryable, id: string, body: CustomerInput, source: string): Promise<{ row: store.CustomerRow; created: boolean }> {
  await checkWrite(tx, body);
  const current = await lockForWrite(tx, id, body.externalId);
  if (current) {
    return { row: await replaceExisting(tx, current, { ...body, externalId: body.externalId ?? current.external_id }, source), created: false };
  }
  if (body.externalId !== undefined && body.externalId !== id) {
    throw invalid(`externalId in the body ("${body.externalId}") differs from the path ("${id}") of a customer that does not exist`, 'externalId');
  }
  if (RESERVED_EXTERNAL_IDS.has(id)) throw invalid(`"externalId" ${RESERVED_MESSAGE(id)}`, 'externalId');
  const created = await store.insertCustomerWithEvent(tx, { ...body, externalId: id }, source);
  if (created) return { row: created, created: true };
  // Created meanwhile by a concurrent request (the insert waited for it, then did nothing): PUT is idempotent, so
  // it replaces that customer as if it had been there (this statement sees it committed).
  const now = await store.findCustomer(tx, id, true);
  if (!now) throw externalIdTaken(id);
  return { row: await replaceExisting(tx, now, { ...body, externalId: id }, source), created: false };
}

/** PATCH: fields present replace, absent ones stay (`disabled` absent: the status stays). `events: false`: an import's. */
export async function patchCustomer(tx: Queryable, current: store.CustomerRow, given: CustomerInput, source: string, events = true): Promise<store.CustomerRow> {
  // An address naming a current one is a patch of it (patchAddresses); checked as it will be stored.
  const patch = withPatchedAddresses(given, current.addresses);
  await checkWrite(tx, patch);
  const merged: Record<string, unknown> = { externalId: patch.externalId ?? current.external_id, disabled: patch.disabled };
  // null clears a field: its empty value ([] for a list, false for excludeFromCampaigns).
  for (const [key, column, empty] of WRITABLE) merged[key] = key in patch ? ((patch as Record<string, unknown>)[key] ?? empty) : current[column];
  return replaceExisting(tx, current, merged as store.CustomerValues, source, events);
}
