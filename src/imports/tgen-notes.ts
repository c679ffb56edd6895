// The apply step of a TGEN customer notes import (https://docs.tulip.com/tgen/customernotes): "If the UUID of the
// Customer note exists in the system, or no UUID is provided and an External ID exists, then an update is performed.
// Otherwise a new Customer note is created." Each staged line holds one note record (tgen.ts noteLine). A chunk is
// applied as a set in the worker's chunk transaction (resume: no line applied twice): one look-up each of the
// customers, associates and notes its records name (customers FOR SHARE, notes FOR UPDATE, both in id order), the
// records applied in line order to those notes in memory (each record sees the ones before it: a note created, then
// updated, an externalId moved on and taken by the next), then one update of the changed notes, one insert of the new
// ones, and their customerNoteCreate/Update events in line order unless the import has events=false. As the notes API
// does: a note stays with its customer (named as it, or as a customer merged into it), a new note for a disabled customer and an edit of a deactivated one's note are CustomerDisabled, an externalId is one
// note's only (Conflict), an omitted externalId keeps the note's. (Until 2026-11-29 each record took 4–6 statements
// of its own: ~1,200 lines/s, a tenth of a customers file.)
import { sqlState, type Queryable } from '../db/db.ts';
import { conflict, invalid, notFound, type ErrorEntry } from '../http/errors.ts';
import { UUID } from '../http/formats.ts';
import { emitEvents, type NewEvent } from '../events/emit.ts';
import { customerDisabled } from '../crm/customers/service.ts';
import { lostRace } from '../crm/customers/bulk.ts';
import type { ChunkResult, ImportRow } from './store.ts';
import * as tstore from './tgen-store.ts';

export const isNotesFile = (imp: Pick<ImportRow, 'format' | 'tgen_file'>) => imp.format === 'tgen' && !!imp.tgen_file?.startsWith('customerNotes ');

/** A note as the chunk's records leave it: `id` null for one the chunk creates, `uuid` null until it is given one. */
type Note = { id: string | null; uuid: string | null; customerId: string; values: tstore.NoteValues; storedExternalId: string | null; changed: boolean };

/** The row a reference names among rows looked up by uuid or externalId: a uuid match wins, as the API's look-ups. */
function byRef<T extends { uuid: string; external_id: string | null }>(rows: T[]): (ref: string) => T | undefined {
  const uuids = new Map(rows.map((r) => [r.uuid, r]));
  const externalIds = new Map(rows.filter((r) => r.external_id !== null).map((r) => [r.external_id!, r]));
  return (ref) => (UUID.test(ref) ? uuids.get(ref.toLowerCase()) : undefined) ?? externalIds.get(ref);
}

const clip = (s: unknown) => String(s).slice(0, 100);
const sameValues = (a: tstore.NoteValues, b: tstore.NoteValues) => a.every((v, i) => v === b[i]);

export async function applyNoteChunk(tx: Queryable, imp: Pick<ImportRow, 'id' | 'applied_line' | 'with_events' | 'source'>, span: number): Promise<ChunkResult> {
  const { lines, more } = await tstore.chunkRecords(tx, imp.id, imp.applied_line, span);
  const result: ChunkResult = { lines: lines.length, more, refused: 0, toInsert: 0, created: 0, updated: 0, disabled: [], errors: [] };
  const records = lines.filter((l) => !l.refused && l.record !== null).map((l) => ({ line: l.line, n: l.record }));
  result.refused = lines.length - records.length;

  const customerOf = byRef(await tstore.customersByRefs(tx, records.map((r) => String(r.n.customer))));
  const associateOf = byRef(await tstore.associatesByRefs(tx, records.filter((r) => r.n.employee !== null).map((r) => String(r.n.employee))));
  const stored = await tstore.notesByKeys(
    tx,
    tstore.uuidsOf(records.filter((r) => r.n.uuid !== null).map((r) => r.n.uuid)),
    [...new Set(records.filter((r) => r.n.externalId !== null).map((r) => String(r.n.externalId)))],
  );
  const existing: Note[] = stored.map((s) => ({ id: s.id, uuid: s.uuid, customerId: s.customer_id, values: s.values, storedExternalId: s.values[3], changed: false }));
  const byUuid = new Map(existing.map((n) => [n.uuid!, n]));
  const byExternalId = new Map(existing.filter((n) => n.values[3] !== null).map((n) => [n.values[3]!, n]));
  const created: Note[] = [];
  const events: { eventType: 'customerNoteCreate' | 'customerNoteUpdate'; note: Note; externalId: string | null }[] = [];

  /** One record against the notes as the records before it left them. */
  const apply = (n: any): ErrorEntry[] | 'created' | 'updated' | 'unchanged' => {
    const customer = customerOf(String(n.customer));
    if (!customer) return notFound(`no customer "${clip(n.customer)}"`, 'customer').entries;
    let associateId: string | null = null;
    if (n.employee !== null) {
      associateId = associateOf(String(n.employee))?.id ?? null;
      if (associateId === null) return invalid(`no associate (employee) "${clip(n.employee)}"`, 'employee').entries;
    }
    const note = n.uuid !== null ? byUuid.get(String(n.uuid).toLowerCase()) : n.externalId !== null ? byExternalId.get(n.externalId) : undefined;
    const externalId: string | null = n.externalId ?? note?.values[3] ?? null;
    const holder = externalId === null ? undefined : byExternalId.get(externalId);
    if (holder && holder !== note) return conflict(`a note with externalId "${clip(externalId)}" already exists`, 'externalId').entries;
    const values = tstore.noteValues({ ...n, externalId }, associateId);
    if (note) {
      // The note's customer, or one merged into it (the note's former customer: a source system re-sending its notes
      // file after a merge names the customer it knows; a line error until 2026-11-29), as the notes API.
      const own = note.customerId === String(customer.id);
      if (!own && note.customerId !== String(customer.merged_into)) {
        return invalid(`"customer" ("${clip(n.customer)}") is not the note's customer: a note stays with its customer`, 'customer').entries;
      }
      // A deactivated customer's notes take no edit, as the notes API refuses them (they were updated until 2026-11-29).
      if (own ? customer.status === 'disabled' : customer.merged_into_status === 'disabled') {
        return customerDisabled(own ? customer : { uuid: customer.merged_into_uuid!, external_id: customer.merged_into_external_id, merged_into_uuid: null, merged_into_external_id: null }).entries;
      }
      if (sameValues(note.values, values)) return 'unchanged';
      if (note.values[3] !== null && byExternalId.get(note.values[3]) === note) byExternalId.delete(note.values[3]);
      if (externalId !== null) byExternalId.set(externalId, note);
      note.values = values;
      note.changed = true;
      events.push({ eventType: 'customerNoteUpdate', note, externalId });
      return 'updated';
    }
    if (customer.status === 'disabled') return customerDisabled(customer).entries;
    // A new note keeps the uuid its record gave (Tulip's "Otherwise a new Customer note is created"), as customers do.
    const fresh: Note = { id: null, uuid: n.uuid === null ? null : String(n.uuid).toLowerCase(), customerId: String(customer.id), values, storedExternalId: null, changed: true };
    if (fresh.uuid !== null) byUuid.set(fresh.uuid, fresh);
    if (externalId !== null) byExternalId.set(externalId, fresh);
    created.push(fresh);
    events.push({ eventType: 'customerNoteCreate', note: fresh, externalId });
    return 'created';
  };
  for (const { line, n } of records) {
    const o = apply(n);
    if (Array.isArray(o)) result.errors!.push({ line, errors: o });
    else if (o === 'created') result.created++;
    else if (o === 'updated') result.updated++;
  }

  const unnamed = created.filter((n) => n.uuid === null);
  (await tstore.newUuids(tx, unnamed.length)).forEach((u, i) => (unnamed[i].uuid = u));
  const changed = existing.filter((n) => n.changed);
  try {
    await tstore.updateNotes(tx, changed.map((n) => ({ id: n.id!, values: n.values, moves: n.storedExternalId !== null && n.values[3] !== n.storedExternalId })));
  } catch (err) {
    // A concurrent writer gave another note one of these externalIds after the look-up: the chunk runs again and sees it.
    if (sqlState(err) === '23505') throw lostRace();
    throw err;
  }
  if ((await tstore.insertNotes(tx, created.map((n) => ({ uuid: n.uuid!, customerId: n.customerId, values: n.values })))) !== created.length) throw lostRace();
  if (imp.with_events) {
    await emitEvents(tx, events.map((e): NewEvent => ({ eventType: e.eventType, resourceType: 'CustomerNote', resource: { uuid: e.note.uuid!, externalId: e.externalId }, source: imp.source })));
  }
  result.toInsert = result.created;
  return result;
}
