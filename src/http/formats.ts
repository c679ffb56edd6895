// String formats for TypeBox's own checker (bulk items and import lines: one bad item must not fail a whole
// request). The email and uuid checks are ajv-formats' own, the ones every route's Ajv validator applies
// (app.ts), so a value bulk or an import stores is one POST would accept and one the OpenAPI document's
// `format` promises to clients that validate answers.
import { FormatRegistry } from '@sinclair/typebox';
import { fullFormats } from 'ajv-formats/dist/formats.js';

const EMAIL = fullFormats.email as RegExp;
/** A uuid in its canonical text form, any case: the one uuid check (the `uuid` format, and references that may be one). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const URI = fullFormats.uri as (v: string) => boolean;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

if (!FormatRegistry.Has('email')) FormatRegistry.Set('email', (v) => EMAIL.test(v));
if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', (v) => UUID.test(v));
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (v) => DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)));
if (!FormatRegistry.Has('uri')) FormatRegistry.Set('uri', (v) => URI(v));
