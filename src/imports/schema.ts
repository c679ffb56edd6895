// Import shapes on the wire (SPEC §12).
import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from '../http/schema.ts';
import { PageQuery } from '../http/pagination.ts';

export const ImportStatus = StringEnum(['receiving', 'queued', 'running', 'completed', 'failed', 'cancelled']);

export const Import = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  status: ImportStatus,
  format: StringEnum(['ndjson', 'csv', 'tgen']),
  tgenFile: Type.Union([Type.String(), Type.Null()], { description: 'format tgen: the TGEN file read, "<kind> <importType> <apiVersion>" (e.g. "customers partialupdate 2025-08"), from its name, or read from its header as a fullupdate; null for other formats' }),
  events: Type.Boolean({ description: 'whether the import emits customerCreate/customerUpdate events (events=true)' }),
  rowsReceived: Type.Integer({ description: 'data lines received (blank lines not counted)' }),
  rowsDone: Type.Integer({ description: 'lines processed so far, failed ones included' }),
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer(),
  failed: Type.Integer({ description: 'lines refused (see …/errors)' }),
  createdAt: Type.String({ format: 'date-time' }),
  startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  rowsPerSecond: Type.Number({ description: 'rows processed per second since the work started' }),
  estimatedSecondsLeft: Type.Union([Type.Number(), Type.Null()], { description: 'at the current rate; null while unknown' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why a failed import failed' }),
});
export type ImportT = Static<typeof Import>;

export const CreateQuery = Type.Object(
  {
    format: Type.Optional(StringEnum(['ndjson', 'csv', 'tgen'], { description: 'default: from the Content-Type (tgen when a name is given); tgen: a Tulip TGEN CSV file, sent as text/csv' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "format tgen: the TGEN file's name (TGEN_customers_partialupdate_2025-08_x.csv), which gives its kind, import type and API version" })),
    events: Type.Optional(Type.Boolean({ default: true, description: 'false: write no events (first loads)' })),
  },
  { additionalProperties: false },
);
export type CreateQueryT = Static<typeof CreateQuery>;

export const ImportParams = Type.Object({ uuid: Type.String({ format: 'uuid' }) });
export const ListQuery = Type.Object(PageQuery, { additionalProperties: false });
