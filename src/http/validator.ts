// The JSON Schema validators of the API (Ajv with ajv-formats), shared by Fastify's route validation (app.ts) and by
// the checks that validate items one by one (bulk items, import lines), so that both speak the same per-field
// messages (`"emails.0.email" must match format "email"`) through errors.ts validationEntries.
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';

const options = { allErrors: true, removeAdditional: false, useDefaults: true, addUsedSchema: false, strict: false } as const;

/**
 * RFC 3339 date-times PostgreSQL can hold: ajv-formats' check, and a year from 0001 (PostgreSQL has no year 0) and a
 * UTC offset under 16 hours (PostgreSQL's bound), and an instant within UTC years 0001–9999 (inUtcYears). Outside them the database refused the value: a 400 that named no
 * parameter ("a value in the request is out of range"), where this names the field like any bad date.
 */
const RFC3339 = fullFormats['date-time'] as { validate: (s: string) => boolean; compare: (a: string, b: string) => number | undefined };
const FIRST_MS = Date.parse('0001-01-01T00:00:00Z');
const LAST_MS = Date.parse('9999-12-31T23:59:59.999Z');
/**
 * Its instant, in UTC, within years 0001–9999 too: the API answers every time in UTC with a four-digit year
 * (`9999-12-31T23:30:00-01:00` had been stored, and served as `+010000-01-01T00:30:00.000Z`, which no client parses
 * and this API refused when sent back). A leap second is read as the second before it.
 */
const inUtcYears = (s: string) => {
  const t = instantOf(s);
  return Number.isNaN(t) || (t >= FIRST_MS && t <= LAST_MS);
};

/**
 * The instant (ms) of a date-time the validator took, a leap second read as the second before it, as above
 * (Date.parse gives NaN for `23:59:60Z`, which PostgreSQL takes: a replay's window became "Invalid time value", a 500).
 */
export function instantOf(s: string): number {
  return Date.parse(s.replace(/:60(?=[.Zz+-])/, ':59'));
}
const dateTime = {
  type: 'string' as const,
  validate: (s: string) => RFC3339.validate(s) && !/^0000/.test(s) && !/[+-](1[6-9]|[2-9]\d):?\d\d$/.test(s) && inUtcYears(s),
  compare: RFC3339.compare,
};
const withFormats = (ajv: Ajv) => addFormats.default(ajv).addFormat('date-time', dateTime);

/** Query strings and path parameters arrive as text and are coerced ("limit=5" → 5). */
export const coercingAjv = withFormats(new Ajv({ ...options, coerceTypes: 'array' }));
/** JSON bodies are typed already and are not coerced ({"firstName":5} is a 400, not "5"). */
export const strictAjv = withFormats(new Ajv({ ...options, coerceTypes: false }));
