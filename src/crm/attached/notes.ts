// Customer notes in Tulip's shape (SPEC §16; fields and limits from https://docs.tulip.com/tgen/customernotes):
// the wire schemas, and the operations behind POST /crm/customers/{id}/notes, POST /crm/customerNotes and
// GET/PUT /crm/customerNotes/{id} (a note by uuid or by its externalId, a uuid match winning). Create and
// update emit customerNoteCreate/customerNoteUpdate in the same transaction. The merge moves notes of every
// type with the rest of the attached data (src/crm/merge), and undo moves them back.
import { Type } from '@sinclair/typebox';
import type { Queryable } from '../../db/db.ts';
import { lostRaceError, sqlState } from '../../db/db.ts';
import { conflict, invalid, notFound } from '../../http/errors.ts';
import { StringEnum } from '../../http/schema.ts';
import { isoNN } from '../../http/time.ts';
import { emitEvent, type NewEvent } from '../../events/emit.ts';
import * as customers from '../customers/store.ts';
import { customerDisabled } from '../customers/service.ts';
import { findAssociate } from '../associates/store.ts';
import * as store from './store.ts';
import { checkNotDotSegment } from '../dot-segments.ts';

/** Where a note is read by uuid or externalId. */
export const NOTES_PATH = '/crm/customerNotes';

/**
 * Tulip's note types. CUSTOMER_OPTIN_LOG is the value Tulip's customer-notes page documents; the other four
 * name, in its pattern, the categories Tulip's merge page lists (notes, phone, opt-in records, video, social).
 */
export const NOTE_TYPES = ['CUSTOMER_NOTE', 'CUSTOMER_PHONE_LOG', 'CUSTOMER_OPTIN_LOG', 'CUSTOMER_VIDEO_LOG', 'CUSTOMER_SOCIAL_LOG'];

const closed = { additionalProperties: false } as const;
const Ref = (description: string) => Type.String({ minLength: 1, maxLength: 255, description });
const DateTime = Type.String({ format: 'date-time' });
const Nullable = (t: any) => Type.Union([t, Type.Null()]);

/** Every writable field of a note but `customer`. */
const writable = {
  externalId: Type.Optional(Nullable(Ref("the integrator's identifier of the note, unique among notes"))),
  type: StringEnum(NOTE_TYPES, { description: 'the kind of note (Tulip: CUSTOMER_OPTIN_LOG, …)' }),
  comments: Type.String({ minLength: 1, maxLength: 20000, description: 'the text of the note' }),
  employee: Type.Optional(Nullable(Ref('the associate (employee) of the note: uuid or externalId'))),
  store: Type.Optional(Nullable(Ref('the store of the note'))),
  isPrivate: Type.Optional(Type.Boolean({ default: false })),
  isDeleted: Type.Optional(Type.Boolean({ default: false })),
  wishListId: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'the wish list of the note' }))),
};
const customerRef = Ref('the customer of the note: uuid or externalId');

export const NoteCreate = Type.Object({ customer: Type.Optional(customerRef), ...writable }, { ...closed, title: 'NoteCreate', description: 'under a customer, `customer` may be left out (if given, it must name that customer)' });
export const CustomerNoteCreate = Type.Object({ customer: customerRef, ...writable }, { ...closed, title: 'CustomerNoteCreate' });
export const NoteReplace = Type.Object({ customer: Type.Optional(customerRef), ...writable }, {
  ...closed, title: 'NoteReplace', description: 'full replace of a note (an omitted externalId keeps the current one); a note stays with its customer',
});
export const NoteIdParams = Type.Object({ id: Ref('the note: uuid or externalId (a uuid match wins)') });

export const Note = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  externalId: Nullable(Type.String()),
  customer: Type.String({ format: 'uuid', description: 'uuid of the customer' }),
  type: StringEnum(NOTE_TYPES),
  comments: Type.String(),
  employee: Nullable(Type.String({ description: 'uuid of the associate' })),
  store: Nullable(Type.String()),
  isPrivate: Type.Boolean(),
  isDeleted: Type.Boolean(),
  wishListId: Nullable(Type.Integer()),
  createdAt: DateTime,
  updatedAt: DateTime,
}, { title: 'Note' });

export type NoteBody = { customer?: string; externalId?: string | null; type: string; comments: string; employee?: string | null; store?: string | null; isPrivate?: boolean; isDeleted?: boolean; wishListId?: number | null };

/** The stored columns of a note's fields (besides customer_id and associate_id), in store.NOTE_COLUMNS order. */
export const noteValues = (b: NoteBody, keepExternalId: string | null = null) =>
  [b.type, b.comments, b.externalId === undefined ? keepExternalId : b.externalId, b.store ?? null, b.isPrivate ?? false, b.isDeleted ?? false, b.wishListId ?? null];

export const shapeNote = (r: any) => ({
  uuid: r.uuid, externalId: r.external_id, customer: r.customer_uuid, type: r.type, comments: r.comments, employee: r.associate_uuid,
  store: r.store, isPrivate: r.is_private, isDeleted: r.is_deleted, wishListId: r.wish_list_id === null ? null : Number(r.wish_list_id),
  createdAt: isoNN(r.created_at), updatedAt: isoNN(r.updated_at),
});

/** Webhook resource of a note event: the note itself, with its externalId. */
export const noteEvent = (eventType: 'customerNoteCreate' | 'customerNoteUpdate', note: { uuid: string; external_id: string | null }, source: string): NewEvent => ({
  eventType,
  resourceType: 'CustomerNote',
  resource: { uuid: note.uuid, externalId: note.external_id },
  source,
});

async function employeeId(tx: Queryable, ref: string | null | undefined): Promise<string | null> {
  if (ref === undefined || ref === null) return null;
  const a = await findAssociate(tx, ref);
  if (!a) throw invalid(`no associate (employee) "${ref}"`, 'employee');
  return a.id;
}

const taken = (externalId: unknown) => conflict(`a note with externalId "${externalId}" already exists`, 'externalId');

/** Creates a note for the customer named by the path (`pathRef`) or by the body's `customer`. */
export async function createNote(tx: Queryable, pathRef: string | undefined, body: NoteBody, source: string): Promise<any> {
  checkNotDotSegment(body.externalId, NOTES_PATH);
  const ref = pathRef ?? body.customer!;
  const customer = await customers.findCustomer(tx, ref, 'share');
  if (!customer) throw pathRef ? notFound(`customer "${ref}" not found`, 'id') : invalid(`no customer "${ref}"`, 'customer');
  if (pathRef !== undefined && body.customer !== undefined && !(await namesCustomer(tx, body.customer, { customer_id: customer.id, customer_uuid: customer.uuid }))) {
    throw invalid(`"customer" ("${body.customer}") is not the customer of the path ("${pathRef}")`, 'customer');
  }
  if (customer.status === 'disabled') throw customerDisabled(customer);
  const associateId = await employeeId(tx, body.employee);
  let row: any;
  try {
    row = await store.insertNote(tx, customer.id, associateId, noteValues(body));
  } catch (err) {
    if (sqlState(err) === '23505') throw taken(body.externalId);
    throw err;
  }
  await emitEvent(tx, noteEvent('customerNoteCreate', row, source));
  return row;
}

/**
 * Whether `ref` names the note's customer: that customer, or one merged into it (the note's former customer, which
 * the merge moved it from: a source system re-sending its notes names the customer it knows; refused until
 * 2026-11-29, a probe).
 */
async function namesCustomer(tx: Queryable, ref: string, note: { customer_id: string; customer_uuid: string }): Promise<boolean> {
  const named = await customers.findCustomer(tx, ref);
  return named !== undefined && (String(named.id) === String(note.customer_id) || named.merged_into_uuid === note.customer_uuid);
}

export async function getNote(db: Queryable, ref: string): Promise<any> {
  const row = await store.findNote(db, ref);
  if (!row) throw notFound(`note "${ref}" not found`, 'id');
  return row;
}

/**
 * The note `ref` names, locked for an update, with its customer locked before it: read unlocked, its customer locked,
 * then the note, in the order a merge and its undo lock them (customers, then the rows they move: docs/merge.md "Lock
 * order"). Locking the note first deadlocked with a merge or undo moving it (a probe, 2026-11-30: 4 merges in 10
 * answered 500 after their retries). The customer FOR NO KEY UPDATE, not FOR SHARE: edits of its notes queue on it with
 * a merge, where shared locks, granted beside one another while the merge waited, kept it waiting as long as edits
 * went on. A note moved to another customer (or whose externalId changed) between the read and the locks is a lost
 * race: the transaction runs again (40001) and finds it where it went.
 */
async function lockNoteAndCustomer(tx: Queryable, ref: string): Promise<{ note: any; customer: customers.CustomerRow }> {
  const seen = await store.findNote(tx, ref);
  if (!seen) throw notFound(`note "${ref}" not found`, 'id');
  const customer = await customers.findCustomer(tx, seen.customer_uuid, true);
  const note = await store.lockNote(tx, seen.id);
  if (!customer || !note || String(note.customer_id) !== String(customer.id)) throw lostRaceError('the note moved to another customer meanwhile');
  if (note.uuid !== ref.toLowerCase() && note.external_id !== ref) throw lostRaceError("the note's externalId changed meanwhile");
  return { note, customer };
}

/** PUT /crm/customerNotes/{id}: full replace; customerNoteUpdate only when something changed. */
export async function replaceNote(tx: Queryable, ref: string, body: NoteBody, source: string): Promise<any> {
  checkNotDotSegment(body.externalId, NOTES_PATH);
  const { note, customer } = await lockNoteAndCustomer(tx, ref);
  // A deactivated customer's notes are refused like a new note for it (403 CustomerDisabled); the edit went through
  // before 2026-11-28, with its customerNoteUpdate. Locked, so that a deactivation waits for the edit or it for it.
  if (customer.status === 'disabled') throw customerDisabled(customer);
  if (body.customer !== undefined && !(await namesCustomer(tx, body.customer, note))) {
    throw invalid(`"customer" ("${body.customer}") is not the note's customer: a note stays with its customer`, 'customer');
  }
  const associateId = await employeeId(tx, body.employee);
  let changed: boolean;
  try {
    changed = await store.updateNote(tx, note.id, associateId, noteValues(body, note.external_id));
  } catch (err) {
    if (sqlState(err) === '23505') throw taken(body.externalId);
    throw err;
  }
  if (!changed) return note;
  const row = await store.findNoteById(tx, note.id);
  await emitEvent(tx, noteEvent('customerNoteUpdate', row, source));
  return row;
}
