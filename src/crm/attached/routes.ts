// Routes of the data attached to customers: list/create for each kind under /crm/customers/{id}/…,
// and POST /crm/customerNotes, GET/PUT /crm/customerNotes/{id} (uuid or externalId). All from 2022-08 (SPEC §5, §16).
import { Type } from '@sinclair/typebox';
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { ErrorBody } from '../../http/schema.ts';
import { decodeCursor, Page, pageOf, PageQuery } from '../../http/pagination.ts';
import { listOf } from '../../http/cursor-scope.ts';
import { sourceOf } from '../../http/context.ts';
import { withRetry } from '../../db/db.ts';
import { createOnce } from '../idempotency/service.ts';
import { CustomerIdParams } from '../customers/schema.ts';
import { KINDS } from './kinds.ts';
import * as notes from './notes.ts';
import * as service from './service.ts';

const ListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export function dataRoutes(s: Services): RouteDef[] {
  const routes: RouteDef[] = [];
  for (const k of KINDS) {
    const base = { tag: 'Customer data', since: '2022-08', path: `/crm/customers/:id/${k.name}` };
    routes.push(
      {
        ...base, id: `customers.${k.name}.list`, method: 'GET', scope: 'read',
        summary: `List a customer's ${k.label} records (cursor pagination)`,
        schema: { params: CustomerIdParams, querystring: ListQuery, response: { 200: Page(k.out) } },
        handler: async (req) => {
          const q = req.query as { limit?: number; cursor?: string };
          const limit = q.limit ?? 50;
          const { customerId, rows } = await service.listRows(s.db, k, (req.params as { id: string }).id, decodeCursor(q.cursor), limit);
          listOf(req, customerId);
          return pageOf(rows, limit, k.shape);
        },
      },
      {
        ...base, id: `customers.${k.name}.create`, method: 'POST', scope: 'write',
        summary: `Add a ${k.label} to a customer${k.name === 'associates' ? ' (409 when the pair exists)' : ''}`,
        schema: { params: CustomerIdParams, body: k.create, response: { 201: k.out, 409: ErrorBody } },
        idempotencyKey: true,
        handler: (req, reply) => createOnce(s.db, req, reply, 201, async (tx) => k.shape(await service.createRow(tx, k, (req.params as { id: string }).id, req.body, sourceOf(req, s)))),
      },
    );
  }
  const noteBase = { tag: 'Customer data', since: '2022-08' };
  routes.push(
    {
      ...noteBase, id: 'customerNotes.create', method: 'POST', scope: 'write', path: '/crm/customerNotes',
      summary: 'Add a note to the customer its `customer` field names (emits customerNoteCreate)',
      schema: { body: notes.CustomerNoteCreate, response: { 201: notes.Note, 409: ErrorBody } },
      idempotencyKey: true,
      handler: (req, reply) => createOnce(s.db, req, reply, 201, async (tx) => notes.shapeNote(await notes.createNote(tx, undefined, req.body as notes.NoteBody, sourceOf(req, s)))),
    },
    {
      ...noteBase, id: 'customerNotes.get', method: 'GET', scope: 'read', path: '/crm/customerNotes/:id',
      summary: 'Get a customer note by uuid or externalId',
      schema: { params: notes.NoteIdParams, response: { 200: notes.Note } },
      handler: async (req) => notes.shapeNote(await notes.getNote(s.db, (req.params as { id: string }).id)),
    },
    {
      ...noteBase, id: 'customerNotes.put', method: 'PUT', scope: 'write', path: '/crm/customerNotes/:id',
      summary: 'Replace a customer note, by uuid or externalId (emits customerNoteUpdate when it changes)',
      schema: { params: notes.NoteIdParams, body: notes.NoteReplace, response: { 200: notes.Note, 409: ErrorBody } },
      handler: async (req) => {
        const row = await withRetry(s.db, (tx) => notes.replaceNote(tx, (req.params as { id: string }).id, req.body as notes.NoteBody, sourceOf(req, s)));
        return notes.shapeNote(row);
      },
    },
  );
  return routes;
}
