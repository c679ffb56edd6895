// Routes of the data attached to customers: list/create for each kind under /crm/customers/{id}/…,
// and GET/PUT /crm/customerNotes/{uuid}. All from 2022-08 (SPEC §5).
import { Type } from '@sinclair/typebox';
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { notFound } from '../../http/errors.ts';
import { ErrorBody } from '../../http/schema.ts';
import { decodeCursor, Page, pageOf, PageQuery } from '../../http/pagination.ts';
import { sourceOf } from '../../http/context.ts';
import { withRetry } from '../../db/db.ts';
import { CustomerIdParams } from '../customers/schema.ts';
import { KINDS, NoteUpdate, NoteUuidParams, kindByName } from './kinds.ts';
import * as service from './service.ts';
import * as store from './store.ts';

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
          const rows = await service.listRows(s.db, k, (req.params as { id: string }).id, decodeCursor(q.cursor), limit);
          return pageOf(rows, limit, k.shape);
        },
      },
      {
        ...base, id: `customers.${k.name}.create`, method: 'POST', scope: 'write',
        summary: `Add a ${k.label} to a customer${k.name === 'associates' ? ' (409 when the pair exists)' : ''}`,
        schema: { params: CustomerIdParams, body: k.create, response: { 201: k.out, 409: ErrorBody } },
        handler: async (req, reply) => {
          const row = await withRetry(s.db, (tx) => service.createRow(tx, k, (req.params as { id: string }).id, req.body, sourceOf(req, s)));
          reply.code(201);
          return k.shape(row);
        },
      },
    );
  }
  const notes = kindByName('notes');
  const noteBase = { tag: 'Customer data', since: '2022-08', path: '/crm/customerNotes/:uuid' };
  routes.push(
    {
      ...noteBase, id: 'customerNotes.get', method: 'GET', scope: 'read',
      summary: 'Get a customer note',
      schema: { params: NoteUuidParams, response: { 200: notes.out } },
      handler: async (req) => {
        const uuid = (req.params as { uuid: string }).uuid;
        const row = await store.findNote(s.db, uuid);
        if (!row) throw notFound(`note "${uuid}" not found`, 'uuid');
        return notes.shape(row);
      },
    },
    {
      ...noteBase, id: 'customerNotes.put', method: 'PUT', scope: 'write',
      summary: 'Replace a customer note (emits customerNoteUpdate when it changes)',
      schema: { params: NoteUuidParams, body: NoteUpdate, response: { 200: notes.out } },
      handler: async (req) => {
        const row = await withRetry(s.db, (tx) => service.replaceNote(tx, (req.params as { uuid: string }).uuid, req.body as any, sourceOf(req, s)));
        return notes.shape(row);
      },
    },
  );
  return routes;
}
