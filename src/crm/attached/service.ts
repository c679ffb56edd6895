// Attached-data operations: create (with the customer share-locked so a concurrent merge cannot
// strand the new row on a customer it is disabling), list, and the note update. Note create/update
// emit customerNoteCreate/customerNoteUpdate in the same transaction.
import type { Queryable } from '../../db/db.ts';
import { sqlState } from '../../db/db.ts';
import { conflict, invalid, notFound } from '../../http/errors.ts';
import { emitEvent, type NewEvent } from '../../events/emit.ts';
import * as customers from '../customers/store.ts';
import { customerDisabled } from '../customers/service.ts';
import { associateIdByUuid } from '../associates/store.ts';
import type { Kind } from './kinds.ts';
import * as store from './store.ts';

/** Webhook resource of a note event: the note itself (it has no externalId). */
export const noteEvent = (eventType: 'customerNoteCreate' | 'customerNoteUpdate', noteUuid: string, source: string): NewEvent => ({
  eventType,
  resourceType: 'CustomerNote',
  resource: { uuid: noteUuid, externalId: null },
  source,
});

async function resolveAssociate(tx: Queryable, uuid: string | null | undefined): Promise<string | null> {
  if (uuid === undefined || uuid === null) return null;
  const id = await associateIdByUuid(tx, uuid);
  if (!id) throw invalid(`no associate with uuid "${uuid}"`, 'associateUuid');
  return id;
}

export async function createRow(tx: Queryable, k: Kind, customerRef: string, body: any, source: string): Promise<any> {
  const customer = await customers.findCustomer(tx, customerRef, 'share');
  if (!customer) throw notFound(`customer "${customerRef}" not found`, 'id');
  if (customer.status === 'disabled') throw customerDisabled(customer);
  const associateId = k.hasAssociate ? await resolveAssociate(tx, body.associateUuid) : null;
  let row: any;
  try {
    row = await store.insertRow(tx, k, customer.id, associateId, body);
  } catch (err) {
    if (sqlState(err) === '23505') throw conflict(`customer ${customer.external_id} is already associated with associate ${body.associateUuid}`, 'associateUuid');
    throw err;
  }
  if (k.name === 'notes') await emitEvent(tx, noteEvent('customerNoteCreate', row.uuid, source));
  return row;
}

export async function listRows(db: Queryable, k: Kind, customerRef: string, afterId: string | null, limit: number): Promise<any[]> {
  const customer = await customers.findCustomer(db, customerRef);
  if (!customer) throw notFound(`customer "${customerRef}" not found`, 'id');
  return store.listRows(db, k, customer.id, afterId, limit);
}

/** PUT /crm/customerNotes/{uuid}: full replace; customerNoteUpdate only when something changed. */
export async function replaceNote(tx: Queryable, uuid: string, body: { type: string; body: string; associateUuid?: string | null }, source: string): Promise<any> {
  const note = await store.findNote(tx, uuid, true);
  if (!note) throw notFound(`note "${uuid}" not found`, 'uuid');
  const associateId = await resolveAssociate(tx, body.associateUuid);
  if (!(await store.updateNote(tx, note.id, body.type, body.body, associateId))) return note;
  await emitEvent(tx, noteEvent('customerNoteUpdate', note.uuid, source));
  return store.findNote(tx, uuid);
}
