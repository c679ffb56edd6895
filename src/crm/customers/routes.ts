// /crm/customers routes: thin handlers over the customer service.

import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { notFound } from '../../http/errors.ts';
import { ErrorBody } from '../../http/schema.ts';
import { decodeCursor, decodeTimeCursor, encodeCursor, encodeTimeCursor, pageOf, Page } from '../../http/pagination.ts';
import { sourceOf } from '../../http/context.ts';
import { withRetry, type Queryable } from '../../db/db.ts';
import { createOnce } from '../idempotency/service.ts';
import * as S from './schema.ts';
import * as store from './store.ts';
import { createCustomer, lockForWrite, patchCustomer, putCustomer } from './service.ts';
import { shapeCustomer } from './wire.ts';

export function customerRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Customers' };
  return [
    {
      ...base, id: 'customers.list', method: 'GET', path: '/crm/customers', scope: 'read', since: '2022-04',
      summary: 'List customers (cursor pagination; filters externalId, email, status, updatedSince)',
      schema: { querystring: S.ListQuery, response: { 200: Page(S.Customer) } },
      handler: async (req) => {
        const q = req.query as S.ListQueryT;
        const limit = q.limit ?? 50;
        if (q.updatedSince === undefined) {
          const rows = await store.listCustomers(s.db, q, decodeCursor(q.cursor));
          const page = pageOf(rows, limit, shapeCustomer);
          // A search by a term without a trigram (or of trigrams most customers hold) reads a budget of customers per
          // page: it goes on after the last one read.
          if (page.nextCursor === null && typeof rows.scanEnd === 'string') page.nextCursor = encodeCursor(rows.scanEnd);
          return page;
        }
        // An incremental sync walks in (updated_at, id) order: its cursor holds both (docs/scaling.md "updatedSince").
        const rows = await store.listCustomers(s.db, q, decodeTimeCursor(q.cursor));
        const page = rows.slice(0, limit);
        const last = page.at(-1);
        // A search in a sync reads a budget per page too (above), in this order: it goes on after the last one read.
        const end = rows.length > limit && last ? { at: last.sync_at!, id: last.id } : typeof rows.scanEnd === 'object' ? rows.scanEnd : null;
        return { data: page.map(shapeCustomer), nextCursor: end && encodeTimeCursor(end.at, end.id) };
      },
    },
    {
      ...base, id: 'customers.create', method: 'POST', path: '/crm/customers', scope: 'write', since: '2022-04',
      summary: 'Create a customer (409 when the externalId exists)',
      schema: { body: S.CustomerCreate, response: { 201: S.Customer, 409: ErrorBody } },
      idempotencyKey: true,
      handler: async (req, reply) => {
        const create = async (q: Queryable) => shapeCustomer(await createCustomer(q, req.body as any, sourceOf(req, s)));
        // Without a key: one statement (customer, event, deliveries, NOTIFY), its own transaction, one round trip.
        return createOnce(s.db, req, reply, 201, create, () => create(s.db));
      },
    },
    {
      ...base, id: 'customers.get', method: 'GET', path: '/crm/customers/:id', scope: 'read', since: '2022-04',
      summary: 'Get a customer by uuid or externalId (merged-away customers show status and mergedInto)',
      schema: { params: S.CustomerIdParams, response: { 200: S.Customer } },
      handler: async (req) => {
        const row = await store.findCustomer(s.db, (req.params as any).id);
        if (!row) throw notFound(`customer "${(req.params as any).id}" not found`, 'id');
        return shapeCustomer(row);
      },
    },
    {
      ...base, id: 'customers.put', method: 'PUT', path: '/crm/customers/:id', scope: 'write', since: '2022-04',
      summary: 'Replace a customer, or create it (201) when the externalId is unknown',
      schema: { params: S.CustomerIdParams, body: S.CustomerPut, response: { 200: S.Customer, 201: S.Customer, 409: ErrorBody } },
      handler: async (req, reply) => {
        const { row, created } = await withRetry(s.db, (tx) => putCustomer(tx, (req.params as any).id, req.body as any, sourceOf(req, s)));
        reply.code(created ? 201 : 200);
        return shapeCustomer(row);
      },
    },
    {
      ...base, id: 'customers.patch', method: 'PATCH', path: '/crm/customers/:id', scope: 'write', since: '2022-08',
      summary: 'Update some fields of a customer',
      schema: { params: S.CustomerIdParams, body: S.CustomerPatch, response: { 200: S.Customer, 409: ErrorBody } },
      handler: async (req) => {
        const id = (req.params as any).id;
        const row = await withRetry(s.db, async (tx) => {
          const current = await lockForWrite(tx, id, (req.body as any).externalId);
          if (!current) throw notFound(`customer "${id}" not found`, 'id');
          return patchCustomer(tx, current, req.body as any, sourceOf(req, s));
        });
        return shapeCustomer(row);
      },
    },
  ];
}

