// The JSON Schema validators of the API (Ajv with ajv-formats), shared by Fastify's route validation (app.ts) and by
// the checks that validate items one by one (bulk items, import lines), so that both speak the same per-field
// messages (`"emails.0.email" must match format "email"`) through errors.ts validationEntries.
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';

const options = { allErrors: true, removeAdditional: false, useDefaults: true, addUsedSchema: false, strict: false } as const;

/** Query strings and path parameters arrive as text and are coerced ("limit=5" → 5). */
export const coercingAjv = addFormats.default(new Ajv({ ...options, coerceTypes: 'array' }));
/** JSON bodies are typed already and are not coerced ({"firstName":5} is a 400, not "5"). */
export const strictAjv = addFormats.default(new Ajv({ ...options, coerceTypes: false }));
