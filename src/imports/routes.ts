// /crm/imports (SPEC §12, from 2026-11, write scope): upload a file (streamed, 202), list, get with
// progress, download errors as NDJSON, cancel. Thin handlers over receive.ts and store.ts.
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import { ApiError, conflict, invalid, notFound } from '../http/errors.ts';
import { sourceOf } from '../http/context.ts';
import { decodeCursor, encodeCursor, Page } from '../http/pagination.ts';
import { iso, isoNN } from '../http/time.ts';
import * as S from './schema.ts';
import { ErrorBody } from '../http/schema.ts';
import * as store from './store.ts';
import { receiveImport } from './receive.ts';
import { encodingOf } from './parse.ts';
import { tgenFileOf } from './tgen.ts';
import { auditOf } from '../audit/record.ts';

/** Content types of an import body; the route receives them as a raw stream (see rawBody in app.ts). */
export const IMPORT_TYPES: Record<string, 'ndjson' | 'csv'> = {
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'text/csv': 'csv',
};

export function shapeImport(r: store.ImportRow): S.ImportT {
  const done = Number(r.rows_done);
  const received = Number(r.rows_received);
  const rate = r.elapsed && r.elapsed > 0 ? done / r.elapsed : 0;
  const left = r.status === 'completed' ? 0 : rate > 0 && (r.status === 'running' || r.status === 'queued') ? (received - done) / rate : null;
  return {
    uuid: r.uuid,
    status: r.status,
    format: r.format,
    tgenFile: r.tgen_file,
    events: r.with_events,
    rowsReceived: received,
    rowsDone: done,
    created: Number(r.created),
    updated: Number(r.updated),
    unchanged: Number(r.unchanged),
    failed: Number(r.failed),
    createdAt: isoNN(r.created_at),
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
    rowsPerSecond: Math.round(rate * 10) / 10,
    estimatedSecondsLeft: left === null ? null : Math.ceil(left),
    error: r.error,
  };
}

async function found(s: Services, req: FastifyRequest): Promise<store.ImportRow> {
  const uuid = (req.params as { uuid: string }).uuid;
  const imp = await store.getImport(s.db, uuid);
  if (!imp) throw notFound(`import "${uuid}" not found`, 'uuid');
  return imp;
}

export function importRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Imports', scope: 'write' as const, since: '2026-11' };
  return [
    {
      ...base, id: 'imports.create', method: 'POST', path: '/crm/imports', rawBody: true,
      summary: 'Import customers from an NDJSON (application/x-ndjson), CSV (text/csv) or Tulip TGEN (text/csv, format=tgen) file sent as the body, up to 2 GiB; answers 202 once received',
      schema: {
        querystring: S.CreateQuery,
        rawBodyTypes: {
          'application/x-ndjson': 'one bulk item (a customer, 2026-11 bulk semantics) per line',
          'text/csv': 'a header row naming item fields, then one customer per row; emails and phones as ;-separated values. With format=tgen: a Tulip TGEN customers file, unchanged (docs/imports-tgen.md)',
        },
        response: { 202: S.Import, 408: ErrorBody },
      },
      audit: { action: 'import.started', target: (_req, b) => ({ type: 'Import', id: b.uuid, details: { format: b.format, events: b.events, rowsReceived: b.rowsReceived } }) },
      handler: async (req, reply) => {
        try {
          const q = req.query as S.CreateQueryT;
          const [type, ...params] = String(req.headers['content-type'] ?? '').split(';');
          const ctype = type.trim().toLowerCase();
          const kind = IMPORT_TYPES[ctype];
          const format = q.format ?? (q.name !== undefined ? 'tgen' : kind);
          if (!kind || (format === 'tgen' ? kind !== 'csv' : format !== kind)) {
            const want = format === 'csv' || format === 'tgen' ? 'text/csv' : format === 'ndjson' ? 'application/x-ndjson' : 'application/x-ndjson (NDJSON) or text/csv (CSV, and TGEN with format=tgen)';
            throw new ApiError('UnsupportedMediaType', `an import body must be sent as ${want}, not ${ctype ? `"${ctype.slice(0, 100)}"` : 'without a Content-Type'}`, 'Content-Type');
          }
          if (q.name !== undefined && format !== 'tgen') throw invalid('name is the name of a TGEN file: it goes with format=tgen', 'name');
          const tgen = q.name !== undefined ? tgenFileOf(q.name) : undefined;
          const charset = params.map((p) => p.split('=')).find(([k]) => k.trim().toLowerCase() === 'charset')?.[1];
          const encoding = encodingOf(charset);
          const length = Number(req.headers['content-length']);
          if (length > s.config.importMaxBytes) {
            throw new ApiError('PayloadTooLarge', `the file is larger than ${s.config.importMaxBytes} bytes`, `limit: ${s.config.importMaxBytes} bytes`);
          }
          const audit = auditOf(req);
          const request = { format, tgen, encoding, withEvents: q.events ?? true, source: sourceOf(req, s), tokenUuid: req.principal?.uuid ?? null };
          const imp = await receiveImport(s, req.raw, request, (tx, queued) => audit(tx, shapeImport(queued)));
          reply.code(202);
          return shapeImport(imp);
        } catch (err) {
          // The rest of a refused body is not read: close the connection after the answer.
          reply.header('connection', 'close');
          throw err;
        }
      },
    },
    {
      ...base, id: 'imports.list', method: 'GET', path: '/crm/imports',
      summary: 'List imports, newest first',
      schema: { querystring: S.ListQuery, response: { 200: Page(S.Import) } },
      handler: async (req) => {
        const q = req.query as { limit?: number; cursor?: string };
        const limit = q.limit ?? 50;
        const rows = await store.listImports(s.db, decodeCursor(q.cursor), limit);
        const page = rows.slice(0, limit);
        return { data: page.map(shapeImport), nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1].id) : null };
      },
    },
    {
      ...base, id: 'imports.get', method: 'GET', path: '/crm/imports/:uuid',
      summary: 'An import with its progress (rowsDone, rowsPerSecond, estimatedSecondsLeft)',
      schema: { params: S.ImportParams, response: { 200: S.Import } },
      handler: async (req) => shapeImport(await found(s, req)),
    },
    {
      ...base, id: 'imports.errors', method: 'GET', path: '/crm/imports/:uuid/errors',
      summary: 'The lines that failed, as NDJSON: {"line","errors":[…]} per line, in line order',
      schema: { params: S.ImportParams, response: { 200: Type.String({ description: 'one error per line', contentMediaType: 'application/x-ndjson' }) } },
      handler: async (req, reply) => {
        const imp = await found(s, req);
        reply.type('application/x-ndjson; charset=utf-8');
        async function* lines() {
          for (let after = '0'; ;) {
            const page = await store.errorPage(s.db, imp.id, after, 1000);
            if (page.length === 0) return;
            yield page.map((e) => JSON.stringify({ line: Number(e.line), errors: e.errors }) + '\n').join('');
            after = page[page.length - 1].line;
          }
        }
        return reply.send(Readable.from(lines()));
      },
    },
    {
      ...base, id: 'imports.cancel', method: 'POST', path: '/crm/imports/:uuid/cancel',
      summary: 'Cancel an import; chunks already applied stay',
      schema: { params: S.ImportParams, response: { 200: S.Import, 409: ErrorBody } },
      audit: { action: 'import.cancelled', target: (_req, b) => ({ type: 'Import', id: b.uuid, details: { rowsDone: b.rowsDone, rowsReceived: b.rowsReceived } }) },
      handler: async (req) => {
        const imp = await found(s, req);
        return s.db.transaction(async (tx) => {
          const cancelled = await store.cancelImport(tx, imp.uuid);
          // Its status as it is now (read again: a cancel that lost a race to another said "running" of a cancelled import).
          if (!cancelled) throw conflict(`import ${imp.uuid} is ${(await store.getImport(tx, imp.uuid))?.status ?? imp.status} already`, 'status');
          await store.dropApplied(tx, imp.id);
          const answer = shapeImport(cancelled);
          await auditOf(req)(tx, answer);
          return answer;
        });
      },
    },
  ];
}
