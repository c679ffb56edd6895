// Attached-data operations: create (with the customer share-locked so a concurrent merge cannot
// strand the new row on a customer it is disabling) and list. Notes have their own create and update
// (notes.ts), which emit customerNoteCreate/customerNoteUpdate in the same transaction.
import type { Queryable } from '../../db/db.ts';
import { sqlState } from '../../db/db.ts';
import { conflict, invalid, notFound } from '../../http/errors.ts';
import * as customers from '../customers/store.ts';
import { customerDisabled } from '../customers/service.ts';
import { customerName } from '../customers/wire.ts';
import { associateIdByUuid } from '../associates/store.ts';
import type { Kind } from './kinds.ts';
import * as store from './store.ts';

async function resolveAssociate(tx: Queryable, uuid: string | null | undefined): Promise<string | null> {
  if (uuid === undefined || uuid === null) return null;
  const id = await associateIdByUuid(tx, uuid);
  if (!id) throw invalid(`no associate with uuid "${uuid}"`, 'associateUuid');
  return id;
}

export async function createRow(tx: Queryable, k: Kind, customerRef: string, body: any, source: string): Promise<any> {
  if (k.ownCreate) return k.ownCreate(tx, customerRef, body, source);
  const customer = await customers.findCustomer(tx, customerRef, 'share');
  if (!customer) throw notFound(`customer "${customerRef}" not found`, 'id');
  if (customer.status === 'disabled') throw customerDisabled(customer);
  const associateId = k.hasAssociate ? await resolveAssociate(tx, body.associateUuid) : null;
  let row: any;
  try {
    row = await store.insertRow(tx, k, customer.id, associateId, body);
  } catch (err) {
    if (sqlState(err) === '23505') throw conflict(`customer ${customerName(customer)} is already associated with associate ${body.associateUuid}`, 'associateUuid');
    throw err;
  }
  return row;
}

/** A page of a customer's records of kind k, and the customer's internal id (the list's owner, cursor-scope.ts). */
export async function listRows(db: Queryable, k: Kind, customerRef: string, afterId: string | null, limit: number): Promise<{ customerId: string; rows: any[] }> {
  const customer = await customers.findCustomer(db, customerRef);
  if (!customer) throw notFound(`customer "${customerRef}" not found`, 'id');
  return { customerId: customer.id, rows: await store.listRows(db, k, customer.id, afterId, limit) };
}

