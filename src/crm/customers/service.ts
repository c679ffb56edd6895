// Customer operations. Each runs in the caller's transaction and writes its event there too.
import type { Queryable } from '../../db/db.ts';
import { sqlState } from '../../db/db.ts';
import { ApiError, conflict, invalid } from '../../http/errors.ts';
import { iso, isoNN } from '../../http/time.ts';
import { emitEvent } from '../../events/emit.ts';
import type { CustomerInput, CustomerT } from './schema.ts';
import * as store from './store.ts';

export function shapeCustomer(r: store.CustomerRow): CustomerT {
  return {
    uuid: r.uuid,
    externalId: r.external_id,
    status: r.status,
    firstName: r.first_name,
    lastName: r.last_name,
    emails: r.emails,
    phones: r.phones,
    addresses: r.addresses,
    socialProfiles: r.social_profiles,
    loyaltyTier: r.loyalty_tier,
    mergedInto: r.merged_into_uuid ? { uuid: r.merged_into_uuid, externalId: r.merged_into_external_id! } : null,
    createdAt: isoNN(r.created_at),
    updatedAt: iso(r.updated_at)!,
  };
}

const customerEvent = (eventType: 'customerCreate' | 'customerUpdate', row: store.CustomerRow, source: string) => ({
  eventType,
  resourceType: 'Customer',
  resource: { uuid: row.uuid, externalId: row.external_id },
  source,
});

export function customerDisabled(row: Pick<store.CustomerRow, 'external_id' | 'merged_into_uuid' | 'merged_into_external_id'>): ApiError {
  return new ApiError('CustomerDisabled', `customer ${row.external_id} is disabled`, row.merged_into_uuid ? `merged into ${row.merged_into_external_id} (${row.merged_into_uuid})` : 'disabled');
}

/** Creates a customer with its event in one statement: on its own (db, autocommit) one round trip. */
export async function createCustomer(tx: Queryable, input: CustomerInput & { externalId: string }, source: string): Promise<store.CustomerRow> {
  const row = await store.insertCustomerWithEvent(tx, input, source);
  if (!row) throw conflict(`a customer with externalId "${input.externalId}" already exists`, 'externalId');
  return row;
}

/** Full replace of an existing (locked) customer; emits customerUpdate only if something changed. */
export async function replaceExisting(tx: Queryable, current: store.CustomerRow, input: CustomerInput & { externalId: string }, source: string): Promise<store.CustomerRow> {
  if (current.status === 'disabled') throw customerDisabled(current);
  let changed: boolean;
  try {
    changed = await store.replaceCustomer(tx, current.id, input);
  } catch (err) {
    if (sqlState(err) === '23505') throw conflict(`a customer with externalId "${input.externalId}" already exists`, 'externalId');
    throw err;
  }
  if (!changed) return current;
  const row = await store.findCustomerById(tx, current.id);
  await emitEvent(tx, customerEvent('customerUpdate', row, source));
  return row;
}

/** PUT /customers/{id}: replace, or create when the id is unknown. */
export async function putCustomer(tx: Queryable, id: string, body: CustomerInput, source: string): Promise<{ row: store.CustomerRow; created: boolean }> {
  const current = await store.findCustomer(tx, id, true);
  if (current) {
    return { row: await replaceExisting(tx, current, { ...body, externalId: body.externalId ?? current.external_id }, source), created: false };
  }
  if (body.externalId !== undefined && body.externalId !== id) {
    throw invalid(`externalId in the body ("${body.externalId}") differs from the path ("${id}") of a customer that does not exist`, 'externalId');
  }
  const created = await store.insertCustomerWithEvent(tx, { ...body, externalId: id }, source);
  if (created) return { row: created, created: true };
  // Created meanwhile by a concurrent request (the insert waited for it, then did nothing): PUT is idempotent, so
  // it replaces that customer as if it had been there (this statement sees it committed).
  const now = await store.findCustomer(tx, id, true);
  if (!now) throw conflict(`a customer with externalId "${id}" already exists`, 'externalId');
  return { row: await replaceExisting(tx, now, { ...body, externalId: id }, source), created: false };
}

/** PATCH: fields present replace, absent ones stay. */
export async function patchCustomer(tx: Queryable, current: store.CustomerRow, patch: CustomerInput, source: string): Promise<store.CustomerRow> {
  const merged = {
    externalId: patch.externalId ?? current.external_id,
    firstName: 'firstName' in patch ? patch.firstName : current.first_name,
    lastName: 'lastName' in patch ? patch.lastName : current.last_name,
    emails: patch.emails ?? current.emails,
    phones: patch.phones ?? current.phones,
    addresses: patch.addresses ?? current.addresses,
    socialProfiles: patch.socialProfiles ?? current.social_profiles,
    loyaltyTier: 'loyaltyTier' in patch ? patch.loyaltyTier : current.loyalty_tier,
  };
  return replaceExisting(tx, current, merged, source);
}
