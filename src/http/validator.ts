// The JSON Schema validators of the API (Ajv with ajv-formats), shared by Fastify's route validation (app.ts) and by
// the checks that validate items one by one (bulk items, import lines), so that both speak the same per-field
// messages (`"emails.0.email" must match format "email"`) through errors.ts validationEntries.
import { Ajv, type AnySchema, type ErrorObject } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { MAX_LISTED_PROBLEMS } from './errors.ts';

const options = { allErrors: true, removeAdditional: false, useDefaults: true, addUsedSchema: false, strict: false } as const;

/**
 * RFC 3339 date-times PostgreSQL can hold: ajv-formats' check, and a year from 0001 (PostgreSQL has no year 0) and a
 * UTC offset under 16 hours (PostgreSQL's bound), and an instant within UTC years 0001–9999 (inUtcYears). Outside them the database refused the value: a 400 that named no
 * parameter ("a value in the request is out of range"), where this names the field like any bad date.
 */
const RFC3339 = fullFormats['date-time'] as { validate: (s: string) => boolean; compare: (a: string, b: string) => number | undefined };
const FIRST_MS = Date.parse('0001-01-01T00:00:00Z');
const END_MS = Date.UTC(10000, 0, 1);
/**
 * Its instant, in UTC, within years 0001–9999 too: the API answers every time in UTC with a four-digit year
 * (`9999-12-31T23:30:00-01:00` had been stored, and served as `+010000-01-01T00:30:00.000Z`, which no client parses
 * and this API refused when sent back), read as PostgreSQL stores it (instantOf): `9999-12-31T23:59:59.9999999Z`
 * and `9999-12-31T23:59:60Z` are year 10000 there.
 */
const inUtcYears = (s: string) => {
  const t = secondOf(s);
  return t !== null && t.ms >= FIRST_MS && t.ms < END_MS;
};

const PARTS = /^(\d{4}-\d\d-\d\d)[Tt\s](\d\d:\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d(?::?\d\d)?)$/;
/** Round half to even, as PostgreSQL's rint does with a fraction's microseconds. */
function rint(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * A date-time as PostgreSQL reads it: its whole second (ms since the epoch) and the microseconds within it, the
 * fraction rounded to microseconds (half to even; a carry moves to the next second), a leap second `:60` read as the
 * next second, and null for what PostgreSQL refuses (a leap second with a fraction: "out of range", a 400 that named
 * no field). Kept apart because one double cannot hold a year-9999 instant to the microsecond.
 */
function secondOf(s: string): { ms: number; us: number } | null {
  const m = PARTS.exec(s);
  if (!m) return null;
  const [, date, hm, sec, frac = '', zone] = m;
  const us = frac ? rint(Number(`0.${frac}`) * 1e6) : 0;
  if (sec === '60' && us !== 0) return null;
  const offset = /^[Zz]$/.test(zone) ? 'Z' : `${zone.slice(0, 3)}:${zone.length > 3 ? zone.slice(-2) : '00'}`;
  const ms = Date.parse(`${date}T${hm}:${sec === '60' ? '59' : sec}${offset}`) + (sec === '60' || us === 1e6 ? 1000 : 0);
  return Number.isNaN(ms) ? null : { ms, us: us % 1e6 };
}

/**
 * The instant (ms) of a date-time the validator took, as PostgreSQL stores it (secondOf); NaN for one it refuses.
 * Date.parse alone cut the fraction to milliseconds, read `:60` as NaN (a replay's window became "Invalid time
 * value", a 500) and an offset `+05` as NaN.
 */
export function instantOf(s: string): number {
  const t = secondOf(s);
  return t === null ? NaN : t.ms + t.us / 1000;
}
const dateTime = {
  type: 'string' as const,
  validate: (s: string) => RFC3339.validate(s) && !/^0000/.test(s) && !/[+-](1[6-9]|[2-9]\d):?\d\d$/.test(s) && inUtcYears(s),
  compare: RFC3339.compare,
};
const withFormats = (ajv: Ajv) => addFormats.default(ajv).addFormat('date-time', dateTime);

/**
 * Values with more parts than this (array elements and object members, nested ones included) are checked for their
 * first problem only. Listing every problem (Ajv's allErrors) costs about a microsecond per problem, all of it on the
 * event loop: a 10 MiB bulk item of 500,000 bad emails held the process for 6 s, 523 items of 1,000 for 1.8 s.
 */
export const MAX_CHECKED_PARTS = 10_000;

/** What a request may still spend on listing every problem, in parts (shared by the items of one bulk request). */
export interface CheckBudget {
  parts: number;
}
export const checkBudget = (): CheckBudget => ({ parts: MAX_CHECKED_PARTS });

/**
 * A validator: true, or false with `errors` set. `dataCtx`: Ajv's (Fastify passes the request as the root's parent, so
 * that a coerced root is written back); `budget`: shared by the values of one request (else the value's own).
 */
export interface BoundedValidate {
  (data: unknown, dataCtx?: DataValidationCxt, budget?: CheckBudget): boolean;
  errors?: ErrorObject[] | null;
  /** Ajv's, which tells Fastify to pass dataCtx. */
  schemaEnv?: unknown;
}

/**
 * How many parts a value has, counted up to `limit` + 1 (a larger value stops the count, within an array or object too:
 * it took Object.values of each, which for one object of 850,000 keys cost more than the body's JSON.parse).
 */
function partsUpTo(value: unknown, limit: number): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const x = stack.pop();
    if (x === null || typeof x !== 'object') continue;
    if (Array.isArray(x)) {
      for (let i = 0; i < x.length; i++) {
        if (++n > limit) return n;
        if (x[i] !== null && typeof x[i] === 'object') stack.push(x[i]);
      }
    } else {
      for (const k in x) {
        if (++n > limit) return n;
        const p = (x as Record<string, unknown>)[k];
        if (p !== null && typeof p === 'object') stack.push(p);
      }
    }
  }
  return n;
}

/** The fields a closed object schema (additionalProperties false, no patternProperties) can hold; else undefined. */
function closedFields(schema: AnySchema): Set<string> | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as { type?: unknown; properties?: Record<string, unknown>; additionalProperties?: unknown; patternProperties?: unknown };
  const object = s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'));
  if (!object || s.additionalProperties !== false || s.patternProperties !== undefined) return undefined;
  return new Set(Object.keys(s.properties ?? {}));
}

/**
 * How many fields past its closed schema's an object may have and still be checked as any other: more unknown fields
 * than an answer lists (MAX_LISTED_PROBLEMS) are refused at once.
 */
const UNKNOWN_FIELDS_CHECKED = MAX_LISTED_PROBLEMS;

/**
 * The first unknown field of an object with more than fields.size + UNKNOWN_FIELDS_CHECKED fields (so more unknown
 * fields than an answer lists), read within the first fields.size + UNKNOWN_FIELDS_CHECKED + 1 (no more of them are
 * read); undefined for a smaller object.
 */
function unknownOfTooMany(data: object, fields: Set<string>): string | undefined {
  const limit = fields.size + UNKNOWN_FIELDS_CHECKED;
  let n = 0;
  let unknown: string | undefined;
  for (const k in data) {
    if (unknown === undefined && !fields.has(k)) unknown = k;
    if (++n > limit) return unknown;
  }
  return undefined;
}

/**
 * Ajv pairs compiling one schema twice: stopping at the first problem (run first: a valid value costs no more), and
 * listing every problem, run only for an invalid value within the budget; a larger one answers its first problem and
 * says the rest were not listed. An object with more unknown fields than an answer lists (unknownOfTooMany) is refused
 * before either runs, naming its first: Ajv read every field of it, then partsUpTo again (95,000 unknown keys in 1 MiB:
 * half a second, more than the JSON.parse of the body).
 */
class BoundedAjv {
  constructor(readonly first: Ajv, readonly all: Ajv) {}

  compile(schema: AnySchema): BoundedValidate {
    const first = this.first.compile(schema);
    const fields = closedFields(schema);
    let all: ReturnType<Ajv['compile']> | undefined;
    const validate: BoundedValidate = (data, dataCtx, given) => {
      const unknown = fields !== undefined && typeof data === 'object' && data !== null && !Array.isArray(data) ? unknownOfTooMany(data, fields) : undefined;
      if (unknown !== undefined) {
        validate.errors = [
          { keyword: 'additionalProperties', instancePath: '', schemaPath: '#/additionalProperties', params: { additionalProperty: unknown }, message: 'must NOT have additional properties' },
          { keyword: 'bulbTooManyFields', instancePath: '', schemaPath: '#', params: { limit: fields!.size },
            message: `has more than ${fields!.size + UNKNOWN_FIELDS_CHECKED} fields (it can have ${fields!.size}): not checked further, its first unknown field is listed` },
        ];
        return false;
      }
      if (first(data, dataCtx)) {
        validate.errors = null;
        return true;
      }
      const budget = given ?? checkBudget(); // made for an invalid value only: a valid one allocates nothing
      const parts = partsUpTo(data, budget.parts);
      if (parts > budget.parts) {
        budget.parts = 0;
        validate.errors = [...(first.errors ?? []), {
          keyword: 'bulbTooLarge', instancePath: '', schemaPath: '#', params: {},
          message: `is not checked further: its first problem is listed (a request lists every problem of its first ${MAX_CHECKED_PARTS} values only)`,
        }];
        return false;
      }
      budget.parts -= parts;
      all ??= this.all.compile(schema);
      validate.errors = all(data, dataCtx) ? first.errors : all.errors;
      return false;
    };
    validate.schemaEnv = first.schemaEnv;
    return validate;
  }
}

const bounded = (extra: { coerceTypes: false | 'array' }) =>
  new BoundedAjv(withFormats(new Ajv({ ...options, ...extra, allErrors: false })), withFormats(new Ajv({ ...options, ...extra })));

/** Query strings and path parameters arrive as text and are coerced ("limit=5" → 5). */
export const coercingAjv = bounded({ coerceTypes: 'array' });
/** JSON bodies are typed already and are not coerced ({"firstName":5} is a 400, not "5"). */
export const strictAjv = bounded({ coerceTypes: false });
