// Streaming parsers of an import file: bytes → text (size limit, refuses binary) → one staged row per
// data line (NDJSON line or CSV record): the line number and either a valid bulk item or its errors.
import { Transform, type TransformCallback } from 'node:stream';
import { parse as csvParse } from 'csv-parse';
import { ApiError, capped, type ErrorEntry } from '../http/errors.ts';
import { itemErrors, type BulkItemT } from '../crm/customers/bulk.ts';

export interface StagedLine {
  line: number;
  /** The item, when valid. */
  item: BulkItemT | null;
  errors: ErrorEntry[] | null;
  /** A line that is not a customer patch (a TGEN note record, item null): the record, applied by its own step. */
  record?: Record<string, unknown>;
  /** The uuid the customer takes if the line creates it (a TGEN record's uuid that no customer has). */
  uuid?: string;
}

export const MAX_LINE = 1024 * 1024;

/** The charsets an import file may declare (Content-Type's charset parameter), as TextDecoder encodings. */
const CHARSETS: Record<string, string> = {
  'utf-8': 'utf-8', utf8: 'utf-8', 'us-ascii': 'utf-8', ascii: 'utf-8',
  // The WHATWG Encoding Standard (TextDecoder) reads latin1 and iso-8859-1 as windows-1252, its superset.
  latin1: 'windows-1252', 'iso-8859-1': 'windows-1252', 'iso_8859-1': 'windows-1252', 'windows-1252': 'windows-1252', cp1252: 'windows-1252',
};

/** The TextDecoder encoding of a declared charset (none: UTF-8); another one is refused with 415. */
export function encodingOf(charset: string | undefined): string {
  if (charset === undefined) return 'utf-8';
  const enc = CHARSETS[charset.trim().replace(/^"|"$/g, '').toLowerCase()];
  if (!enc) {
    throw new ApiError('UnsupportedMediaType', `charset "${charset.slice(0, 50)}" is not supported; send the file as utf-8, or declare latin1 (iso-8859-1) or windows-1252`, 'Content-Type: charset');
  }
  return enc;
}

/**
 * Counts bytes (413 beyond maxBytes) and decodes the file's charset (`encoding`, from encodingOf; UTF-8 strictly: invalid
 * UTF-8 is refused); a NUL byte or invalid UTF-8 means not a text file (400).
 */
export function textGuard(maxBytes: number, encoding = 'utf-8'): Transform {
  const decoder = new TextDecoder(encoding, { fatal: true });
  let bytes = 0;
  const notText = () => new ApiError('InvalidParameterError', `the file is not text (binary content or invalid ${encoding === 'utf-8' ? 'UTF-8' : encoding}); send NDJSON or CSV`, 'body');
  return new Transform({
    readableObjectMode: true,
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length;
      if (bytes > maxBytes) return cb(new ApiError('PayloadTooLarge', `the file is larger than ${maxBytes} bytes`, `limit: ${maxBytes} bytes`));
      if (chunk.includes(0)) return cb(notText());
      try {
        cb(null, decoder.decode(chunk, { stream: true }));
      } catch {
        cb(notText());
      }
    },
    flush(cb) {
      try {
        const rest = decoder.decode();
        cb(null, rest || undefined);
      } catch {
        cb(notText());
      }
    },
  });
}

/** A staged line of an item: the item if valid, else its errors. */
export function lineOf(line: number, value: unknown): StagedLine {
  const errors = itemErrors(value);
  return errors.length ? { line, item: null, errors } : { line, item: value as BulkItemT, errors: null };
}

/**
 * A TGEN record naming its customer by uuid alone, staged by the externalId the customer has (`externalId`, resolved,
 * not written): checked as the record is, so that a stored externalId new writes refuse (`export`, `bulk`, kept from
 * before they were reserved) does not fail a record that never gave it, as PATCH and PUT by uuid take it (found by a
 * probe, 2026-11-29).
 */
export function resolvedLineOf(line: number, value: Record<string, unknown>, externalId: string): StagedLine {
  const errors = itemErrors({ ...value, externalId: '-' });
  return errors.length ? { line, item: null, errors } : { line, item: { ...value, externalId } as BulkItemT, errors: null };
}

/**
 * A TGEN customers record without an externalId (Tulip's is optional): checked as a bulk item is, but for the key, and
 * staged by `uuid` (the customer with it, or the one created with it) or, with none, as a new customer.
 */
export function keylessLineOf(line: number, value: Record<string, unknown>, uuid?: string): StagedLine {
  const errors = itemErrors({ ...value, externalId: '-' });
  return errors.length ? { line, item: null, errors } : { line, item: value as BulkItemT, errors: null, ...(uuid === undefined ? {} : { uuid }) };
}

/**
 * NDJSON: one bulk item per line; blank lines are skipped (line numbers still count them). A line that is
 * not JSON is reported; if none of the first 10 non-blank lines is JSON the file is refused (400).
 */
export function ndjsonRows(): Transform {
  let partial = '';
  let tooLong = false;
  let line = 0;
  let seen = 0;
  let json = 0;
  const take = (self: Transform, text: string) => {
    line++;
    if (tooLong) {
      tooLong = false;
      self.push({ line, item: null, errors: [{ message: `line ${line} is longer than ${MAX_LINE} characters`, errorCode: 'InvalidParameterError', moreInfo: 'line' }] });
      // A line too long to be an item counts as a line that is not JSON (a file of nothing else was accepted).
      if (++seen === 10 && json === 0) throw notNdjson();
      return;
    }
    const t = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (t.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(t);
      json++;
    } catch (e) {
      value = undefined;
      self.push({ line, item: null, errors: [{ message: `line ${line} is not valid JSON: ${(e as Error).message}`, errorCode: 'InvalidJson', moreInfo: 'line' }] });
    }
    if (value !== undefined) self.push(lineOf(line, value));
    if (++seen === 10 && json === 0) throw notNdjson();
  };
  return new Transform({
    writableObjectMode: true,
    readableObjectMode: true,
    transform(chunk: string, _enc, cb: TransformCallback) {
      try {
        let start = 0;
        for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
          const text = tooLong ? '' : partial + chunk.slice(start, nl);
          // Whatever the chunks: a line that came whole inside one, or ended in the chunk after its start, is measured too.
          if (lineLength(text) > MAX_LINE) tooLong = true;
          take(this, tooLong ? '' : text);
          partial = '';
          start = nl + 1;
        }
        if (!tooLong) {
          partial += chunk.slice(start);
          // + 1: the line may end in a CR of its CR LF, not counted.
          if (partial.length > MAX_LINE + 1) {
            tooLong = true;
            partial = '';
          }
        }
        cb();
      } catch (err) {
        cb(err as Error);
      }
    },
    flush(cb) {
      try {
        if (lineLength(partial) > MAX_LINE) tooLong = true;
        if (partial !== '' || tooLong) take(this, tooLong ? '' : partial);
        if (seen > 0 && json === 0) throw notNdjson();
        cb();
      } catch (err) {
        cb(err as Error);
      }
    },
  });
}

/** A line's length in characters, without the CR of a CR LF ending. */
const lineLength = (text: string) => (text.endsWith('\r') ? text.length - 1 : text.length);

const notNdjson = () => new ApiError('InvalidParameterError', 'the file is not NDJSON: none of its first lines is JSON', 'body');

/** A CSV boolean: true/false in any case; anything else stays text, for the item check to refuse naming the column. */
const bool = (c: string): unknown => (/^true$/i.test(c) ? true : /^false$/i.test(c) ? false : c);
const text = (c: string) => (c === '' ? null : c);

/**
 * CSV columns and how a cell becomes an item field; an empty cell clears the field (null or [], excludeFromCampaigns
 * false), but for `disabled`, where it leaves the status as it is (undefined: the field is not carried).
 */
const CSV_FIELDS: Record<string, (cell: string) => unknown> = {
  externalId: (c) => (c === '' ? undefined : c), // empty: the required field missing (invalidResourceMissingRequiredFields)
  prefix: text,
  firstName: text,
  lastName: text,
  suffix: text,
  loyaltyTier: text,
  image: text,
  excludeFromCampaigns: (c) => (c === '' ? null : bool(c)),
  disabled: (c) => (c === '' ? undefined : bool(c)),
  emails: (c) => split(c).map((email) => ({ email })),
  phones: (c) => split(c).map((number) => ({ number })),
};
const split = (c: string) => c.split(';').map((s) => s.trim()).filter((s) => s !== '');

/** Bounds of a CSV header row (documented in docs/imports-tgen.md): more is refused before any column is looked at. */
export const MAX_HEADER_COLUMNS = 1000;
export const MAX_HEADER_BYTES = 64 * 1024;
/** A header's problems, capped as every refusal's (the count's entry names the header). */
export const capProblems = <T extends { message: string; moreInfo?: string }>(problems: T[]) => capped(problems, { moreInfo: 'header' } as Omit<T, 'message'>);

/**
 * Refuses a header row that is too wide (columns or bytes) before looking at its names; the checks are linear in the
 * header's size (a Set for duplicates: indexOf per column was quadratic, 9-18 s of blocked event loop for 100,000 columns).
 */
export function boundHeader(names: string[]): void {
  if (names.length > MAX_HEADER_COLUMNS) {
    throw new ApiError('InvalidParameterError', `the CSV header row has ${names.length} columns; at most ${MAX_HEADER_COLUMNS} are allowed`, `header: at most ${MAX_HEADER_COLUMNS} columns`);
  }
  let bytes = names.length; // a separator per column
  for (const n of names) bytes += Buffer.byteLength(n);
  if (bytes > MAX_HEADER_BYTES) throw headerTooLong(String(bytes));
}

const headerTooLong = (bytes: string) =>
  new ApiError('InvalidParameterError', `the CSV header row is ${bytes} bytes long; at most ${MAX_HEADER_BYTES} are allowed`, `header: at most ${MAX_HEADER_BYTES} bytes`);

/** The first column name that appears twice (linear). */
export function duplicateColumn(names: string[]): string | undefined {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) return n;
    seen.add(n);
  }
  return undefined;
}

function checkHeader(header: string[]): string[] {
  boundHeader(header);
  const names = header.map((h) => h.trim());
  const unknown = names.filter((n) => !Object.hasOwn(CSV_FIELDS, n)); // not `in`: "toString", "__proto__"… are no columns
  const problems: { message: string; moreInfo: string }[] = unknown.map((n) => ({
    message: `unknown CSV column "${n.slice(0, 100)}"`,
    moreInfo: `columns: ${Object.keys(CSV_FIELDS).join(', ')}`,
  }));
  if (!names.includes('externalId')) problems.push({ message: 'the CSV header row must name an externalId column', moreInfo: 'header' });
  const dup = duplicateColumn(names);
  if (dup !== undefined) problems.push({ message: `CSV column "${dup.slice(0, 100)}" appears twice`, moreInfo: 'header' });
  if (problems.length) throw ApiError.many('InvalidParameterError', capProblems(problems));
  return names;
}

/**
 * Where the lines of a CSV file end, as byte offsets (LF, CR LF or a lone CR each end one line), for the line numbers
 * of records: csv-parse's own count (info.lines) takes a CR LF inside a quoted field for two lines, so every record
 * after such a field was reported one line late. `input` takes the decoded text and passes it on as bytes. The ends
 * of blank lines (which csv-parse skips) are kept too, until the parser is past them, for `openedAt`.
 */
function lineCounter(): { input: Transform; lineAt: (end: number) => number; openedAt: (at: number) => number } {
  const ends: number[] = [];
  const blank = new Set<number>(); // ends of blank lines not yet behind the parser
  let head = 0; // ends before head are behind the parser
  let behind = 0; // how many
  let offset = 0;
  let pendingCr = -1; // a CR at the end of a chunk: a line end unless the next chunk starts with LF
  let headerSeen = false; // the first line's end
  let lineStart = 0; // where the line after the last end noted begins
  let lastByte = -1; // the previous chunk's last byte
  /** Notes the blank lines among ends[from…] (bytes: the chunk that starts at `base`, or none). */
  const noteBlanks = (from: number, buf: Buffer | null, base: number) => {
    const byteAt = (x: number) => (buf !== null && x >= base ? buf[x - base] : x === base - 1 ? lastByte : -1);
    for (let k = from; k < ends.length; k++) {
      const e = ends[k];
      if (e === lineStart || (e === lineStart + 1 && byteAt(e) === 10 && byteAt(lineStart) === 13)) blank.add(e);
      lineStart = e + 1;
    }
  };
  const input = new Transform({
    writableObjectMode: true,
    transform(chunk: string, _enc, cb) {
      const buf = Buffer.from(chunk, 'utf8');
      const from = ends.length;
      if (pendingCr !== -1 && buf.length > 0) {
        if (buf[0] !== 10) ends.push(pendingCr);
        pendingCr = -1;
      }
      const at = ends.length;
      for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) ends.push(offset + i);
      if (buf.includes(13)) {
        for (let i = buf.indexOf(13); i !== -1; i = buf.indexOf(13, i + 1)) {
          if (i + 1 === buf.length) pendingCr = offset + i;
          else if (buf[i + 1] !== 10) ends.push(offset + i);
        }
        const mine = ends.splice(at).sort((a, b) => a - b);
        for (const e of mine) ends.push(e);
      }
      noteBlanks(from, buf, offset);
      offset += buf.length;
      if (buf.length > 0) lastByte = buf[buf.length - 1];
      // The header row is at least the first line: when that alone is over the bound, refuse before csv-parse reads it
      // (parsing a 689 KB header of 100,000 columns took csv-parse ~0.9 s of event loop).
      if (!headerSeen) {
        const firstEnd = ends.length ? ends[0] : pendingCr !== -1 ? pendingCr : undefined;
        if (firstEnd !== undefined) headerSeen = true;
        if ((firstEnd ?? offset) > MAX_HEADER_BYTES) return cb(headerTooLong(`over ${MAX_HEADER_BYTES}`));
      }
      cb(null, buf);
    },
    flush(cb) {
      if (pendingCr !== -1) {
        ends.push(pendingCr);
        noteBlanks(ends.length - 1, null, offset);
      }
      cb();
    },
  });
  /** The (1-based) line on which a record or error ending at byte `end` (csv-parse's info.bytes) ends. */
  const lineAt = (end: number) => {
    while (head < ends.length && ends[head] < end - 1) {
      if (blank.size) blank.delete(ends[head]);
      head++;
      behind++;
    }
    if (head > 65536) {
      ends.splice(0, head);
      head = 0;
    }
    return behind + 1;
  };
  /**
   * The line of the first byte after `at` (csv-parse's info.bytes when a quote opened: the delimiter before the quoted
   * field, or the start of its record's line) that is not a blank line's: the line where the quote opened.
   */
  const openedAt = (at: number) => {
    lineAt(at + 1);
    let i = head;
    while (i < ends.length && blank.has(ends[i])) i++;
    return behind + 1 + (i - head);
  };
  return { input, lineAt, openedAt };
}

/**
 * CSV (csv-parse, streaming): a header row naming item fields, then one customer per record; emails and
 * phones are ;-separated. A malformed record is reported with its line number and skipped. Pipe the stages in order.
 * A quote inside a field that does not start with one, or after a closing quote (`Bob "B" Smith`, `"ab"c`), is kept
 * as text (relax_quotes): strict, csv-parse reported such a record twice under one line number (a 409 for the whole
 * file) and read on in quoting mode, swallowing the records after it. A record over 1 MiB (in practice an unclosed
 * quote) refuses the file: csv-parse cannot skip it (it dropped the rest of the chunk and reported the line again per chunk).
 * So does a quote left open at the end of a smaller file, naming the line where it opened: skipped as a bad record, it
 * took every line after it along unreported, and the import completed (a probe, 2026-11-29).
 * A record's line is the one it ends on.
 */
export function csvRows(): Transform[] {
  return csvRecords(checkHeader, (record, line) => {
    const item: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(record)) {
      const value = CSV_FIELDS[k](v);
      if (value !== undefined) item[k] = value;
    }
    return lineOf(line, item);
  });
}

/**
 * The CSV reader under csvRows and TGEN (tgen.ts): `header` checks the header row and returns the column names (or
 * throws an ApiError refusing the file); `toLine` makes a record (column name → cell) into a staged line.
 */
export function csvRecords(header: (names: string[]) => string[], toLine: (record: Record<string, string>, line: number) => StagedLine): Transform[] {
  const lines = lineCounter();
  // Records and errors come in file order, each ending on a later line than the one before; an error's offset
  // (csv-parse's err.bytes) can lag behind it (an unclosed quote at the end reports where its record began). The
  // header is line 1: the first record's error is on line 2 at least (an unclosed quote there was reported on line 1).
  let last = 1;
  const next = (at: number) => (last = Math.max(at, last + 1));
  const parser = csvParse({
    columns: header,
    bom: true,
    // Every record ends at LF, CR LF or a lone CR, whichever each line uses: left to itself csv-parse takes the first
    // line's ending for the whole file, and a file whose header ends in LF and rows in CR LF kept a CR in each row's
    // last cell (one in CR LF then rows in LF ran the rows together): a probe, 2026-11-28.
    record_delimiter: ['\r\n', '\n', '\r'],
    skip_empty_lines: true,
    skip_records_with_error: true,
    relax_quotes: true,
    max_record_size: MAX_LINE,
    // (The record's info is on_record's second argument: `info: true` would build it a second time per record.)
    on_record: (record: Record<string, string>, info: { bytes: number }) => ({ record, line: next(lines.lineAt(info.bytes)) }),
    // A skipped record becomes an error row, flagged by record: null. A quote still open at the end of the file is no
    // bad record but the rest of the file read as one field: the file is refused, as one over 1 MiB is.
    on_skip: (err: any) => {
      if (err?.code === 'CSV_MAX_RECORD_SIZE') throw err;
      if (err?.code === 'CSV_QUOTE_NOT_CLOSED') throw unclosedQuote(lines.openedAt(Number(err?.bytes) || 0));
      output.write({ record: null, line: next(lines.lineAt(Number(err?.bytes) || 0)), reason: csvReason(err) });
    },
  } as any);
  const output = new Transform({
    objectMode: true,
    transform({ record, line, reason }: { record: Record<string, string> | null; line: number; reason?: string }, _enc, cb) {
      if (record === null) {
        return cb(null, { line, item: null, errors: [{ message: `line ${line} is not a valid CSV record: ${reason}`, errorCode: 'InvalidParameterError', moreInfo: 'line' }] });
      }
      cb(null, toLine(record, line));
    },
  });
  return [lines.input, parser, output];
}

/** The 400 of a file whose quote opened on `line` is still open at its end. */
const unclosedQuote = (line: number) =>
  new ApiError('InvalidParameterError', `the file is not CSV: the quote opened on line ${line} is never closed, so every line after it would be one field; close it (a quote inside a quoted field is written twice: "")`, `line ${line}`);

/**
 * csv-parse's reason for refusing a record ("Invalid Record Length: columns length is 2, got 3"), without its line
 * number: csv-parse counts a CR LF inside a quoted field as two lines, ours is the file's (lineCounter).
 */
export function csvReason(err: any): string {
  return String(err?.message ?? 'unreadable record').replace(/ (on|at) line \d+/, '').slice(0, 300);
}

/** A csv-parse error that stopped the whole file (not a skippable record): the file is not CSV. */
export function csvError(err: any): ApiError {
  if (err instanceof ApiError) return err;
  // Without csv-parse's line number (csvReason): it miscounts (line 88383 for a quote left open on line 1002).
  return new ApiError('InvalidParameterError', `the file is not CSV: ${csvReason(err ?? {}).slice(0, 200)}`, 'body');
}
