// The apply step of a TGEN customer notes import (https://docs.tulip.com/tgen/customernotes): "If the UUID of the
// Customer note exists in the system, or no UUID is provided and an External ID exists, then an update is performed.
// Otherwise a new Customer note is created." Each staged line holds one note record (tgen.ts noteLine); a chunk's lines
// are applied in line order in the worker's chunk transaction (resume: no line applied twice), a few statements per
// line (customer, employee, note look-ups, then the write), each write with its customerNoteCreate/Update event unless
// the import has events=false. As the notes API does: a note stays with its customer, a new note for a disabled
// customer is CustomerDisabled, an externalId is one note's only (Conflict), an omitted externalId keeps the note's.
import type { Queryable } from '../db/db.ts';
import { conflict, invalid, notFound, type ErrorEntry } from '../http/errors.ts';
import { emitEvent } from '../events/emit.ts';
import { customerDisabled } from '../crm/customers/service.ts';
import { lostRace } from '../crm/customers/bulk.ts';
import type { ChunkResult, ImportRow } from './store.ts';
import * as tstore from './tgen-store.ts';

export const isNotesFile = (imp: Pick<ImportRow, 'format' | 'tgen_file'>) => imp.format === 'tgen' && !!imp.tgen_file?.startsWith('customerNotes ');

type Outcome = { created?: boolean; updated?: boolean; errors?: ErrorEntry[] };

async function applyNote(tx: Queryable, n: any, imp: Pick<ImportRow, 'with_events' | 'source'>): Promise<Outcome> {
  const customer = await tstore.customerByRef(tx, n.customer);
  if (!customer) return { errors: notFound(`no customer "${String(n.customer).slice(0, 100)}"`, 'customer').entries };
  let associateId: string | null = null;
  if (n.employee !== null) {
    associateId = (await tstore.associateByRef(tx, n.employee)) ?? null;
    if (associateId === null) return { errors: invalid(`no associate (employee) "${String(n.employee).slice(0, 100)}"`, 'employee').entries };
  }
  const note = await tstore.noteByKeys(tx, n.uuid, n.uuid === null ? n.externalId : null);
  const externalId = n.externalId ?? note?.external_id ?? null;
  if (externalId !== null && (await tstore.externalIdTaken(tx, externalId, note?.id ?? null))) {
    return { errors: conflict(`a note with externalId "${String(externalId).slice(0, 100)}" already exists`, 'externalId').entries };
  }
  const values = tstore.noteRow({ ...n, externalId }, associateId);
  const event = (eventType: 'customerNoteCreate' | 'customerNoteUpdate', row: { uuid: string; external_id: string | null }) =>
    imp.with_events ? emitEvent(tx, { eventType, resourceType: 'CustomerNote', resource: { uuid: row.uuid, externalId: row.external_id }, source: imp.source }) : undefined;
  if (note) {
    if (String(note.customer_id) !== String(customer.id)) {
      return { errors: invalid(`"customer" ("${String(n.customer).slice(0, 100)}") is not the note's customer: a note stays with its customer`, 'customer').entries };
    }
    const row = await tstore.updateNote(tx, note.id, values);
    if (row) await event('customerNoteUpdate', row);
    return { updated: row !== undefined };
  }
  if (customer.status === 'disabled') return { errors: customerDisabled(customer).entries };
  // A new note keeps the uuid its record gave (Tulip's "Otherwise a new Customer note is created"), as customers do.
  const row = await tstore.insertNote(tx, customer.id, values, n.uuid);
  if (!row) throw lostRace();
  await event('customerNoteCreate', row);
  return { created: true };
}

export async function applyNoteChunk(tx: Queryable, imp: Pick<ImportRow, 'id' | 'applied_line' | 'with_events' | 'source'>, span: number): Promise<ChunkResult> {
  const { lines, more } = await tstore.chunkRecords(tx, imp.id, imp.applied_line, span);
  const result: ChunkResult = { lines: lines.length, more, refused: 0, toInsert: 0, created: 0, updated: 0, disabled: [], errors: [] };
  for (const l of lines) {
    if (l.refused || l.record === null) {
      result.refused++;
      continue;
    }
    const o = await applyNote(tx, l.record, imp);
    if (o.errors) result.errors!.push({ line: l.line, errors: o.errors });
    else if (o.created) result.created++;
    else if (o.updated) result.updated++;
  }
  result.toInsert = result.created;
  return result;
}
