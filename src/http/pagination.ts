// Cursor pagination shared by every list (SPEC §3): limit 1–250 (default 50), an opaque cursor.
import { Type, type Static } from '@sinclair/typebox';
import { invalid } from './errors.ts';

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, default: 50, description: 'page size, 1–250' })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'opaque cursor from a previous nextCursor' })),
};

/** A list answer; a page of a named item (`title: 'Customer'`) is named too (`CustomerPage`). */
export function Page<T extends import('@sinclair/typebox').TSchema>(item: T) {
  const name = typeof item.title === 'string' ? { title: `${item.title}Page` } : {};
  return Type.Object(
    {
      data: Type.Array(item),
      nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'pass as `cursor` for the next page; null on the last page' }),
    },
    { ...name, description: 'One page of a list' },
  );
}

/** Cursors wrap the last internal id seen; they are opaque to clients. */
export function encodeCursor(lastId: string | number): string {
  return Buffer.from(`c1:${lastId}`, 'utf8').toString('base64url');
}

/**
 * A cursor's text: null when it is not base64url written as Bulb writes it (Node's decoder skips what it cannot read,
 * so `YzE6Ng!!` would read as `YzE6Ng`'s text).
 */
export function cursorText(cursor: string): string | null {
  const bytes = Buffer.from(cursor, 'base64url');
  return bytes.toString('base64url') === cursor ? bytes.toString('utf8') : null;
}

export function decodeCursor(cursor: string | undefined): string | null {
  if (cursor === undefined || cursor === '') return null;
  const raw = cursorText(cursor) ?? '';
  const m = /^c1:(\d{1,18})$/.exec(raw);
  if (!m) throw invalid('cursor is not valid', 'cursor');
  return m[1];
}

/**
 * A cursor of a walk in (time, id) order (the customers changed since a time): the last row's time, exact to the
 * microsecond in UTC, and its id.
 */
export function encodeTimeCursor(at: string, id: string): string {
  return Buffer.from(`t1:${at}:${id}`, 'utf8').toString('base64url');
}

export function decodeTimeCursor(cursor: string | undefined): { at: string; id: string } | null {
  if (cursor === undefined || cursor === '') return null;
  const raw = cursorText(cursor) ?? '';
  const m = /^t1:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z):(\d{1,18})$/.exec(raw);
  // A time that does not exist (month 13, 30 February…) is as invalid as a malformed one (not the database's 22008).
  if (!m || !realTime(m[1])) throw invalid('cursor is not valid', 'cursor');
  return { at: m[1], id: m[2] };
}

/** Whether a UTC time to the microsecond names a real instant: it reads back as written (to the millisecond). */
function realTime(at: string): boolean {
  const t = new Date(at.slice(0, 23) + 'Z');
  return !Number.isNaN(t.getTime()) && t.toISOString() === at.slice(0, 23) + 'Z';
}

/** Given limit+1 rows fetched, returns the page and the next cursor. */
export function pageOf<R extends { id: string }, O>(rows: R[], limit: number, shape: (r: R) => O): { data: O[]; nextCursor: string | null } {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { data: page.map(shape), nextCursor: more ? encodeCursor(page[page.length - 1].id) : null };
}

export type PageQueryT = Static<ReturnType<typeof Type.Object<typeof PageQuery>>>;
