// Tulip's TGEN CSV files (docs.tulip.com/tgen/*) read as import lines: the file kind and API version from a TGEN
// file name (TGEN_customers_partialupdate_2025-08_x.csv), the header checked against the kind's columns, and each
// record mapped onto the bulk item shape with Tulip's field names (addresses[0].address1 → addresses[0].address1).
// The import machinery (staging, chunks, resume, events) takes the items as it takes NDJSON lines; docs/imports-tgen.md.
import { Transform } from 'node:stream';
import { ApiError, type ErrorEntry } from '../http/errors.ts';
import { boundHeader, capProblems, csvRecords, duplicateColumn, keylessLineOf, lineOf, resolvedLineOf, type StagedLine } from './parse.ts';
import { wholeAddress } from '../crm/customers/wire.ts';
import { UUID } from '../http/formats.ts';
import { dotSegmentRefusal } from '../crm/dot-segments.ts';
import { NOTES_PATH } from '../crm/attached/notes.ts';

export type TgenKind = 'customers' | 'addresses' | 'customerNotes';
export type TgenImportType = 'fullupdate' | 'partialupdate';
export interface TgenFile {
  kind: TgenKind;
  importType: TgenImportType;
  version: string;
}

/** Tulip's API versions its TGEN pages name. */
export const TGEN_VERSIONS = ['2025-08', '2025-12'];
/** The kinds and import types Bulb reads (the customer resources it serves). */
const SUPPORTED: Record<TgenKind, TgenImportType[]> = { customers: ['fullupdate', 'partialupdate'], addresses: ['fullupdate'], customerNotes: ['fullupdate'] };
/** Tulip's word for "clear this field" in a partial update (docs.tulip.com/tgen/customers_partialupdate). */
export const SET_AS_NULL = 'SET_AS_NULL';

const NAME = /^TGEN_([A-Za-z]+)_([a-z]+)_(\d{4}-\d{2})(?:_[^/\\]*)?\.csv$/;

/** The file a TGEN name describes; a name that is not one, or names a kind Bulb does not read, is a 400 naming why. */
export function tgenFileOf(name: string): TgenFile {
  const m = NAME.exec(name);
  const bad = (why: string) => new ApiError('InvalidParameterError', `"${name.slice(0, 200)}" ${why}`, 'name: TGEN_<kind>_<importType>_<apiVersion>[_<suffix>].csv');
  if (!m) throw bad('is not a TGEN file name (TGEN_<kind>_<importType>_<apiVersion>_<optionalSuffix>.csv)');
  const [, kind, importType, version] = m;
  if (!Object.hasOwn(SUPPORTED, kind)) throw bad(`names the kind "${kind}"; Bulb imports TGEN files of kind ${supportedList()}`);
  if (importType !== 'fullupdate' && importType !== 'partialupdate') throw bad(`names the import type "${importType}"; TGEN's are fullupdate and partialupdate`);
  if (!SUPPORTED[kind as TgenKind].includes(importType)) throw bad(`names ${kind} ${importType}, which Bulb does not import; it imports ${supportedList()}`);
  if (!TGEN_VERSIONS.includes(version)) throw bad(`names the API version ${version}; TGEN files are of version ${TGEN_VERSIONS.join(' or ')}`);
  return { kind: kind as TgenKind, importType, version };
}

const supportedList = () =>
  Object.entries(SUPPORTED).flatMap(([k, types]) => types.map((t) => `${k} ${t}`)).join(', ');

// Columns (docs.tulip.com/tgen/customers and /tgen/customers_partialupdate). Kind of cell: text, boolean.
type Cell = 'text' | 'bool';
const CUSTOMER_COLUMNS: Record<string, Cell> = {
  uuid: 'text', externalId: 'text', firstName: 'text', lastName: 'text', prefix: 'text', suffix: 'text',
  disabled: 'bool', excludeFromCampaigns: 'bool', image: 'text',
};
const ATTRIBUTE_COLUMNS: Record<string, Cell> = { value: 'text', attributeExternalId: 'text', languageExternalId: 'text' };
const ADDRESS_COLUMNS: Record<string, Cell> = {
  uuid: 'text', externalId: 'text', address1: 'text', address2: 'text', city: 'text', countryCode: 'text', zoneCode: 'text',
  postCode: 'text', firstName: 'text', lastName: 'text', phone: 'text', emailAddress: 'text', type: 'text', disabled: 'bool', isPrimary: 'bool',
};
const LISTS: Record<string, Record<string, Cell>> = { attributes: ATTRIBUTE_COLUMNS, addresses: ADDRESS_COLUMNS };
/** Most elements of each list a file may address (addresses[0] … addresses[49]): the bulk item's list bounds. */
const MAX_INDEX: Record<string, number> = { addresses: 50, attributes: 100 };

/** A customers column: a scalar, a whole list (`addresses`), one element (`addresses[0]`) or an element's field. */
type Column = { scalar: string } | { list: string; index?: number; field?: string };

const ELEMENT = /^([A-Za-z]+)\[(\d{1,3})\](?:\.([A-Za-z0-9]+))?$/;
function customerColumn(name: string): Column | string {
  if (Object.hasOwn(CUSTOMER_COLUMNS, name)) return { scalar: name };
  if (Object.hasOwn(LISTS, name)) return { list: name };
  const m = ELEMENT.exec(name);
  if (!m || !Object.hasOwn(LISTS, m[1])) return `unknown column "${name.slice(0, 100)}"`;
  const [, list, n, field] = m;
  // One spelling per index: "addresses[01].city" beside "addresses[1].city" passed the duplicate check and the last won.
  if (n.length > 1 && n.startsWith('0')) return `column "${name.slice(0, 100)}": write the index without leading zeros (${list}[${Number(n)}])`;
  const index = Number(n);
  if (index >= MAX_INDEX[list]) return `column "${name}": at most ${MAX_INDEX[list]} ${list} per customer (indexes 0-${MAX_INDEX[list] - 1})`;
  if (field !== undefined && !Object.hasOwn(LISTS[list], field)) return `unknown column "${name.slice(0, 100)}": ${list}[${n}] has ${Object.keys(LISTS[list]).join(', ')}`;
  return { list, index, field };
}

const moreInfoOf = (f: TgenFile) => `docs.tulip.com/tgen/${f.kind === 'customers' ? (f.importType === 'partialupdate' ? 'customers_partialupdate' : 'customers') : f.kind.toLowerCase()}`;

/** Checks a customers file's header; returns the parsed columns by name. Every problem is listed (up to 100). */
function customersHeader(file: TgenFile, names: string[]): Map<string, Column> {
  const problems: { message: string; moreInfo: string }[] = [];
  const columns = new Map<string, Column>();
  const where = moreInfoOf(file);
  for (const n of names) {
    const c = customerColumn(n);
    if (typeof c === 'string') problems.push({ message: `${c} for a TGEN ${file.kind} ${file.importType} file`, moreInfo: where });
    else columns.set(n, c);
  }
  const dup = duplicateColumn(names);
  if (dup !== undefined) problems.push({ message: `column "${dup.slice(0, 100)}" appears twice`, moreInfo: 'header' });
  if (!names.includes('externalId') && !names.includes('uuid')) {
    problems.push({ message: `a TGEN ${file.kind} file names its customers by an externalId or uuid column; the header has neither`, moreInfo: where });
  }
  // Required columns of a full update (docs.tulip.com/tgen/customers: firstName, lastName "Required: Yes").
  if (file.importType === 'fullupdate') {
    for (const r of ['firstName', 'lastName']) if (!names.includes(r)) problems.push({ message: `a TGEN customers fullupdate file must have a ${r} column`, moreInfo: where });
  }
  if (problems.length) throw ApiError.many('InvalidParameterError', capProblems(problems));
  return columns;
}

// The addresses file (https://docs.tulip.com/tgen/addresses): one address per record, of the customer named in
// `customer`; columns marked "Required: Yes" there must be in the header.
const ADDRESS_REQUIRED = ['customer', 'address1', 'city', 'countryCode', 'postCode', 'type'];
/** The fields of a new address those columns require (a partial update's element naming no current address). */
const NEW_ADDRESS_REQUIRED = ADDRESS_REQUIRED.filter((f) => f !== 'customer');

function addressesHeader(file: TgenFile, names: string[]): void {
  const where = moreInfoOf(file);
  const problems: { message: string; moreInfo: string }[] = [];
  for (const n of names) {
    if (n !== 'customer' && !Object.hasOwn(ADDRESS_COLUMNS, n)) problems.push({ message: `unknown column "${n.slice(0, 100)}" for a TGEN addresses file`, moreInfo: where });
  }
  const dup = duplicateColumn(names);
  if (dup !== undefined) problems.push({ message: `column "${dup.slice(0, 100)}" appears twice`, moreInfo: 'header' });
  for (const r of ADDRESS_REQUIRED) if (!names.includes(r)) problems.push({ message: `a TGEN addresses file must have a ${r} column`, moreInfo: where });
  if (problems.length) throw ApiError.many('InvalidParameterError', capProblems(problems));
}

/**
 * An addresses record as a staged line: the item `{externalId: <customer>, addresses: [the address]}`, which the
 * addresses apply step (tgen-apply.ts) merges into the customer's list instead of replacing it. `customer` is the
 * customer's uuid (Tulip's) or externalId; resolveUuids names it by externalId.
 */
function addressLine(record: Record<string, string>, line: number): TgenLine {
  const errors: ErrorEntry[] = [];
  const address: Record<string, unknown> = {};
  for (const [field, kind] of Object.entries(ADDRESS_COLUMNS)) {
    const cell = record[field] ?? '';
    if (cell === '') continue;
    if (cell === SET_AS_NULL) {
      errors.push(cellError(`"${field}": ${SET_AS_NULL} clears a field in a partial update only; leave the cell empty in a full update`, field));
      continue;
    }
    if (kind === 'text') address[field] = cell;
    else {
      const b = bool(cell);
      if (b === undefined) errors.push(cellError(`"${field}" must be true or false, not "${cell.slice(0, 50)}"`, field));
      address[field] = b;
    }
  }
  const customer = record.customer ?? '';
  if (customer === '') errors.push(cellError('the record names no customer: give its uuid (or externalId) in the customer column', 'customer'));
  if (errors.length) return { line, item: null, errors };
  // Validated as a customer patch carrying the one address; its errors name the file's columns (addressColumns).
  if (UUID.test(customer)) return { line, item: { externalId: customer, addresses: [address] } as any, errors: null, customerUuid: customer, customerRef: true };
  return addressColumns(lineOf(line, { externalId: customer, addresses: [address] }));
}

/**
 * An addresses line's errors naming the file's column (`countryCode`), not the patch's path (`addresses.0.countryCode`,
 * which every other error of the file did not use: a probe, 2026-11-30); `externalId`, the patch's key, is `customer`,
 * in the message too.
 */
function addressColumns(l: StagedLine): StagedLine {
  if (!l.errors) return l;
  const column = (path: string) => path.replace(/^addresses\.0\./, '').replace(/^externalId$/, 'customer');
  const errors = l.errors.map((e) => ({
    ...e,
    // A reserved externalId names no customer here (none can hold one made since it was reserved): by its uuid.
    message: e.message.replace(/"addresses\.0\.([A-Za-z0-9]+)"/g, '"$1"').replace(/^"externalId"/, '"customer"').replace(/choose another externalId$/, 'name the customer by its uuid'),
    moreInfo: typeof e.moreInfo === 'string' ? column(e.moreInfo) : e.moreInfo,
  }));
  return { ...l, errors };
}

// The customer notes file (https://docs.tulip.com/tgen/customernotes): one note per record. Columns, with the page's
// limits; customer, comments and type are "Required: Yes" (type "Allowed: CUSTOMER_OPTIN_LOG").
const NOTE_COLUMNS: Record<string, { cell: Cell | 'int'; max?: number }> = {
  uuid: { cell: 'text', max: 36 }, externalId: { cell: 'text', max: 255 }, customer: { cell: 'text', max: 255 },
  employee: { cell: 'text', max: 255 }, store: { cell: 'text', max: 255 }, comments: { cell: 'text', max: 20000 },
  isPrivate: { cell: 'bool' }, isDeleted: { cell: 'bool' }, type: { cell: 'text' }, wishListId: { cell: 'int' },
};
const NOTE_REQUIRED = ['customer', 'comments', 'type'];
export const TGEN_NOTE_TYPES = ['CUSTOMER_OPTIN_LOG'];

function notesHeader(file: TgenFile, names: string[]): void {
  const where = moreInfoOf(file);
  const problems: { message: string; moreInfo: string }[] = [];
  for (const n of names) if (!Object.hasOwn(NOTE_COLUMNS, n)) problems.push({ message: `unknown column "${n.slice(0, 100)}" for a TGEN customerNotes file`, moreInfo: where });
  const dup = duplicateColumn(names);
  if (dup !== undefined) problems.push({ message: `column "${dup.slice(0, 100)}" appears twice`, moreInfo: 'header' });
  for (const r of NOTE_REQUIRED) if (!names.includes(r)) problems.push({ message: `a TGEN customerNotes file must have a ${r} column`, moreInfo: where });
  if (problems.length) throw ApiError.many('InvalidParameterError', capProblems(problems));
}

/** A text's length in characters (code points), as the API's schemas count it: an emoji is one, not two UTF-16 units. */
const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/**
 * A notes record as a staged line: no customer item, the note as `record` (every field: a full update replaces the
 * note; isPrivate and isDeleted default to false, the others to null). tgen-notes.ts applies it.
 */
function noteLine(record: Record<string, string>, line: number): TgenLine {
  const errors: ErrorEntry[] = [];
  const note: Record<string, unknown> = { uuid: null, externalId: null, employee: null, store: null, isPrivate: false, isDeleted: false, wishListId: null };
  for (const [field, { cell: kind, max }] of Object.entries(NOTE_COLUMNS)) {
    const cell = record[field] ?? '';
    if (cell === '') continue;
    if (cell === SET_AS_NULL) {
      errors.push(cellError(`"${field}": ${SET_AS_NULL} clears a field in a partial update only; leave the cell empty in a full update`, field));
    } else if (kind === 'bool') {
      note[field] = bool(cell);
      if (note[field] === undefined) errors.push(cellError(`"${field}" must be true or false, not "${cell.slice(0, 50)}"`, field));
    } else if (kind === 'int') {
      // The notes API's bound: past it a number would be stored rounded (9007199254740993 as …992).
      if (!/^\d+$/.test(cell)) errors.push(cellError(`"${field}" must be a whole number, not "${cell.slice(0, 50)}"`, field));
      else if (Number(cell) > Number.MAX_SAFE_INTEGER) errors.push(cellError(`"${field}" must be <= ${Number.MAX_SAFE_INTEGER}`, field));
      else note[field] = Number(cell);
    } else if (max !== undefined && cell.length > max && codePoints(cell) > max) { // characters as the API counts them
      errors.push(cellError(`"${field}" must NOT have more than ${max} characters`, field));
    } else note[field] = cell;
  }
  for (const r of NOTE_REQUIRED) if (!record[r]) errors.push(cellError(`"${r}" is required`, r));
  if (note.type !== undefined && record.type && !TGEN_NOTE_TYPES.includes(record.type)) {
    errors.push(cellError(`"type" must be one of: ${TGEN_NOTE_TYPES.join(', ')}`, 'type'));
  }
  if (typeof note.uuid === 'string' && !UUID.test(note.uuid)) errors.push(cellError(`"uuid" must match format "uuid"`, 'uuid'));
  const dotSegment = dotSegmentRefusal(note.externalId, NOTES_PATH);
  if (dotSegment) errors.push(cellError(dotSegment, 'externalId'));
  if (errors.length) return { line, item: null, errors };
  return { line, item: null, errors: null, record: note };
}

/** The kind a header without a file name belongs to: notes (comments) or addresses (address1) with a customer column, else customers. */
function kindOfHeader(names: string[]): TgenKind | undefined {
  if (names.includes('customer') && (names.includes('comments') || names.includes('address1'))) return names.includes('comments') ? 'customerNotes' : 'addresses';
  return 'customers';
}

const cellError = (message: string, field: string): ErrorEntry => ({ message, errorCode: 'InvalidParameterError', moreInfo: field });

/** A TGEN boolean cell: true or false (any case); undefined for another value. */
function bool(cell: string): boolean | undefined {
  const c = cell.toLowerCase();
  return c === 'true' ? true : c === 'false' ? false : undefined;
}

/** The item of one customers record, or its errors. A partial update carries only the cells given; SET_AS_NULL clears. */
function customerItem(file: TgenFile, columns: Map<string, Column>, record: Record<string, string>): { item: Record<string, unknown>; uuid?: string } | ErrorEntry[] {
  const partial = file.importType === 'partialupdate';
  const errors: ErrorEntry[] = [];
  const item: Record<string, unknown> = {};
  const lists: Record<string, { cleared: boolean; elements: Map<number, Record<string, unknown> | null>; clearedCell: Map<number, string> }> = {};
  const listOf = (name: string) => (lists[name] ??= { cleared: false, elements: new Map(), clearedCell: new Map() });
  let uuid: string | undefined;
  const value = (cell: string, kind: Cell, field: string): unknown => {
    if (kind === 'text') return cell;
    const b = bool(cell);
    if (b === undefined) errors.push(cellError(`"${field}" must be true or false, not "${cell.slice(0, 50)}"`, field));
    return b;
  };
  for (const [name, c] of columns) {
    const cell = record[name] ?? '';
    const clear = cell === SET_AS_NULL;
    if (clear && !partial) {
      errors.push(cellError(`"${name}": ${SET_AS_NULL} clears a field in a partial update only; leave the cell empty in a full update`, name));
      continue;
    }
    if ('scalar' in c) {
      const field = c.scalar;
      // The customer's key: clearing it would name another customer (an externalId "SET_AS_NULL") or none.
      if (clear && (field === 'uuid' || field === 'externalId')) {
        errors.push(cellError(`"${field}" cannot be cleared: it names the customer`, field));
        continue;
      }
      if (field === 'uuid') {
        if (cell !== '' && !UUID.test(cell)) errors.push(cellError(`"uuid" must match format "uuid"`, 'uuid'));
        else if (cell !== '') uuid = cell.toLowerCase();
        continue;
      }
      if (field === 'externalId') {
        if (cell !== '') item.externalId = cell;
        continue;
      }
      if (cell === '') continue;
      if (clear) {
        if (field === 'disabled') errors.push(cellError(`"disabled" cannot be cleared; write true or false`, field));
        else item[field] = CUSTOMER_COLUMNS[field] === 'bool' ? false : null;
        continue;
      }
      item[field] = value(cell, CUSTOMER_COLUMNS[field], field);
      continue;
    }
    if (cell === '') continue;
    const list = listOf(c.list);
    if (c.index === undefined) {
      // The whole list: SET_AS_NULL empties it (other values: the columns of its elements carry them).
      if (clear) list.cleared = true;
      else errors.push(cellError(`"${name}" takes ${SET_AS_NULL} only; give the elements as ${name}[0].<field> columns`, name));
      continue;
    }
    if (c.field === undefined) {
      // One element: SET_AS_NULL removes it.
      if (clear) list.elements.set(c.index, null);
      else errors.push(cellError(`"${name}" takes ${SET_AS_NULL} only; give the element's fields as ${name}.<field> columns`, name));
      continue;
    }
    const el = list.elements.get(c.index);
    if (el === null) continue; // removed
    const element = el ?? {};
    list.elements.set(c.index, element);
    // SET_AS_NULL clears a field: null, false for a boolean (isPrimary, disabled), as for the customer's own booleans
    // (it made null, which the address check refuses: the whole line failed, a probe, 2026-11-28).
    element[c.field] = clear ? (LISTS[c.list][c.field] === 'bool' ? false : null) : value(cell, LISTS[c.list][c.field], `${c.list}.${c.index}.${c.field}`);
    if (clear && !list.clearedCell.has(c.index)) list.clearedCell.set(c.index, name);
  }
  // An attribute's value may be "" (the API takes {"attributeExternalId":"a","value":""}): a full update's record naming
  // the attribute with its value cell empty gives "", the one empty cell that is not "not sent" (it was a line error,
  // missing field "attributes.0.value", refusing the whole customer: a probe, 2026-11-30). In a partial update an empty
  // cell leaves a field as it is, which an attribute's value in the list it gives cannot be: still a line error (a
  // silent "" there cleared the value: the review of 2026-11-30). Without a value column it is missing in both.
  for (const [i, e] of partial ? [] : lists.attributes?.elements ?? []) {
    if (e && typeof e.attributeExternalId === 'string' && !('value' in e) && columns.has(`attributes[${i}].value`)) e.value = '';
  }
  for (const name of Object.keys(LISTS)) {
    const list = lists[name];
    if (list === undefined) {
      // A full update replaces: a record whose columns of the list are empty empties it. A header with no column of
      // the list does not give it (kept): Tulip ships addresses in a file of their own, and a customers file without
      // address columns emptied every customer's addresses until that file re-added them (a probe, 2026-11-30).
      if (!partial && [...columns.values()].some((c) => 'list' in c && c.list === name)) item[name] = [];
      continue;
    }
    // A full update gives each address whole (fields left empty are emptied); a partial one patches the address its
    // uuid names (wire.ts, patchAddresses).
    const elements = [...list.elements.entries()].sort((a, b) => a[0] - b[0]).map(([, e]) => e).filter((e) => e !== null)
      .map((e) => (partial || name !== 'addresses' ? e : wholeAddress(e)));
    if (list.cleared && elements.length) errors.push(cellError(`"${name}" is ${SET_AS_NULL} and has elements too`, name));
    // The list a partial update gives is the customer's new list: elements removed and none given would empty it.
    const removed = [...list.elements.entries()].filter(([, e]) => e === null).map(([i]) => `${name}[${i}]`);
    if (!list.cleared && elements.length === 0 && removed.length > 0) {
      errors.push(cellError(`"${removed[0]}" is ${SET_AS_NULL} and no element of ${name} is given: the list a partial update gives is the customer's new list, so this would remove them all. To remove them all, write ${SET_AS_NULL} in "${name}"; to remove some, give the ones to keep (${name}[N].${name === 'addresses' ? 'uuid' : 'attributeExternalId and value'})`, removed[0]));
    }
    // SET_AS_NULL clears a field of the address the element names (Tulip: addresses[N].uuid "Required for patching"):
    // an element naming none is a new address, and the list it is in replaces the customer's. A record clearing one
    // cell of addresses[0] without its uuid replaced every address with an empty one (found by a probe, 2026-11-29).
    if (name === 'addresses') {
      for (const [i, cellName] of list.clearedCell) {
        const e = list.elements.get(i);
        if (e && e.uuid == null && e.externalId == null) {
          errors.push(cellError(`"${cellName}": ${SET_AS_NULL} clears a field of the address ${name}[${i}] names, and it names none: give ${name}[${i}].uuid (or its externalId). Without one it is a new address, and the list a partial update gives replaces the customer's addresses`, cellName));
        }
      }
      // Likewise a partial element naming no address is a new one: without Tulip's required fields it replaced the
      // customer's addresses with one holding only what was given (addresses[0].city alone: a probe, 2026-11-30).
      if (partial) {
        for (const [i, e] of list.elements) {
          if (!e || e.uuid != null || e.externalId != null || list.clearedCell.has(i)) continue;
          const missing = NEW_ADDRESS_REQUIRED.find((f) => e[f] === undefined);
          if (missing !== undefined) {
            errors.push(cellError(`"${name}[${i}].${missing}" is required for a new address: ${name}[${i}] names no current address (give ${name}[${i}].uuid, or its externalId, to patch one), and the list a partial update gives replaces the customer's addresses`, `${name}[${i}].${missing}`));
          }
        }
      }
    }
    item[name] = elements;
  }
  if (!partial) {
    // A full update replaces: Tulip's fields the record leaves empty are emptied (disabled only changes when given).
    for (const [field, kind] of Object.entries(CUSTOMER_COLUMNS)) {
      if (field === 'uuid' || field === 'externalId' || field === 'disabled' || field in item) continue;
      item[field] = kind === 'bool' ? false : null;
    }
  }
  if (errors.length) return errors;
  return { item, uuid };
}

/** The staged line of a customers record that names its customer by uuid only: resolved to its externalId before staging. */
export interface TgenLine extends StagedLine {
  /** The customer's uuid from the record, when it gave one (resolveUuids turns it into the externalId). */
  customerUuid?: string;
  /** customerUuid is the `customer` cell of an addresses record: a uuid or an externalId (a uuid match wins). */
  customerRef?: boolean;
  /** A full update's record: a uuid no customer has, without an externalId, creates the customer with that uuid. */
  creates?: boolean;
}

/**
 * TGEN CSV: `file` from the name (tgenFileOf), or undefined to take the kind from the header as a full update (Tulip's
 * base import type); `onFile` is told the file read. The header must match the kind (400 naming each problem); a bad
 * record is a line error.
 */
export function tgenRows(file: TgenFile | undefined, onFile: (f: TgenFile) => void = () => {}): Transform[] {
  let columns: Map<string, Column>;
  let f: TgenFile;
  const header = (raw: string[]) => {
    boundHeader(raw);
    const names = raw.map((h) => h.trim());
    const kind = kindOfHeader(names);
    if (file && kind !== file.kind) {
      throw new ApiError('InvalidParameterError', `the file is named a TGEN ${file.kind} file but its header is that of ${kind}`, moreInfoOf(file));
    }
    f = file ?? { kind: kind!, importType: 'fullupdate', version: TGEN_VERSIONS[0] };
    onFile(f);
    if (f.kind === 'addresses') addressesHeader(f, names);
    else if (f.kind === 'customerNotes') notesHeader(f, names);
    else columns = customersHeader(f, names);
    return names;
  };
  return csvRecords(header, (record, line): TgenLine => {
    if (f.kind === 'addresses') return addressLine(record, line);
    if (f.kind === 'customerNotes') return noteLine(record, line);
    const r = customerItem(f, columns, record);
    if (Array.isArray(r)) return { line, item: null, errors: r };
    // Neither key: in a full update, a new customer without an externalId ("Otherwise, the resource is created",
    // docs.tulip.com/tgen/customers); a partial update only updates ("… then an update is performed on the provided
    // fields", docs.tulip.com/tgen/customers_partialupdate).
    const creates = f.importType === 'fullupdate';
    if (r.item.externalId === undefined && r.uuid === undefined) {
      if (creates) return keylessLineOf(line, r.item);
      return { line, item: null, errors: [cellError('the record names no customer: give its externalId or uuid', 'externalId')] };
    }
    if (r.item.externalId === undefined) return { line, item: r.item as any, errors: null, customerUuid: r.uuid, creates };
    return { ...lineOf(line, r.item), customerUuid: r.uuid };
  });
}

const RESOLVE_BATCH = 500;

/**
 * Names each record's customer by externalId, the key imports stage by: a record that gives a uuid (Tulip's first key,
 * docs.tulip.com/tgen/customers: "If the UUID … exists …, or no UUID is provided and an External ID exists, then an
 * update is performed. Otherwise, the resource is created") is the customer with that uuid; a uuid no customer has
 * leaves the externalId as the key, and is the uuid the customer takes if the record creates it (a retailer moving
 * from Tulip keeps its customers' uuids). A record without an externalId is staged by its uuid when the uuid is a
 * customer's without one (updated) or, in a full update, no customer's (created with it); else it is a line error.
 * One query per batch of records.
 */
export function resolveUuids(lookup: (uuids: string[]) => Promise<Map<string, string | null>>): Transform {
  let batch: TgenLine[] = [];
  const resolve = async (self: Transform) => {
    const lines = batch;
    batch = [];
    const uuids = [...new Set(lines.flatMap((l) => (l.customerUuid && UUID.test(l.customerUuid) ? [l.customerUuid.toLowerCase()] : [])))];
    const found = uuids.length ? await lookup(uuids) : new Map<string, string | null>();
    for (const l of lines) self.push(resolved(l, found));
  };
  return new Transform({
    objectMode: true,
    transform(line: TgenLine, _enc, cb) {
      batch.push(line);
      if (batch.length < RESOLVE_BATCH) return cb();
      resolve(this).then(() => cb(), cb);
    },
    flush(cb) {
      resolve(this).then(() => cb(), cb);
    },
  });
}

function resolved(l: TgenLine, found: Map<string, string | null>): StagedLine {
  const { customerUuid, customerRef, creates, ...line } = l;
  if (customerUuid === undefined || line.errors) return line;
  const item = line.item as Record<string, unknown>;
  const externalId = UUID.test(customerUuid) ? found.get(customerUuid.toLowerCase()) : undefined;
  // An addresses record naming a customer without an externalId (the API allows it, as Tulip does): staged by its uuid.
  if (customerRef && externalId === null) return addressColumns(keylessLineOf(line.line, { addresses: item.addresses }, customerUuid.toLowerCase()));
  // An addresses record's customer: the customer with that uuid, else the one with that externalId.
  if (customerRef) return addressColumns(typeof externalId === 'string' ? resolvedLineOf(line.line, item, externalId) : lineOf(line.line, { ...item, externalId: customerUuid }));
  // A record without an externalId whose uuid is a customer's without one (updated), or no customer's (in a full
  // update, created with it): staged by the uuid.
  if (item.externalId === undefined && (externalId === null || (externalId === undefined && creates))) return keylessLineOf(line.line, item, customerUuid.toLowerCase());
  if (externalId === null) {
    return { line: line.line, item: null, errors: [cellError(`the customer with uuid ${customerUuid} has no externalId, not "${String(item.externalId).slice(0, 100)}" (an import does not give a customer an externalId: PATCH it)`, 'externalId')] };
  }
  if (externalId === undefined) {
    if (item.externalId === undefined) return { line: line.line, item: null, errors: [cellError(`no customer has the uuid "${customerUuid.slice(0, 100)}"`, 'uuid')] };
    return { ...line, uuid: customerUuid };
  }
  if (item.externalId !== undefined && item.externalId !== externalId) {
    return { line: line.line, item: null, errors: [cellError(`the customer with uuid ${customerUuid} has the externalId "${externalId}", not "${String(item.externalId).slice(0, 100)}"`, 'externalId')] };
  }
  return item.externalId === undefined ? resolvedLineOf(line.line, item, externalId) : lineOf(line.line, { ...item, externalId });
}

/** How an import shows its TGEN file (imports.tgen_file): "customers partialupdate 2025-08". */
export const describeTgenFile = (f: TgenFile) => `${f.kind} ${f.importType} ${f.version}`;
