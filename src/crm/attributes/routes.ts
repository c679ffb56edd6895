// /crm/customerAttributes: create (write scope), list and get (read scope), in every version that serves customers
// (Tulip's custom attributes, docs.tulip.com/integrating/aerial/customattributes). Customers carry values of them.
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { ErrorBody } from '../../http/schema.ts';
import { decodeCursor, Page, pageOf } from '../../http/pagination.ts';
import { isoNN } from '../../http/time.ts';
import type { Queryable } from '../../db/db.ts';
import * as S from './schema.ts';
import { createOnce } from '../idempotency/service.ts';
import * as store from './store.ts';
import { checkNotDotSegment } from '../dot-segments.ts';

export function shapeAttribute(r: store.AttributeRow): S.CustomerAttributeT {
  return { uuid: r.uuid, externalId: r.external_id, type: r.type, description: r.description, createdAt: isoNN(r.created_at) };
}

export function attributeRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Customer attributes', since: '2022-04' };
  return [
    {
      ...base, id: 'customerAttributes.list', method: 'GET', path: '/crm/customerAttributes', scope: 'read',
      summary: 'List customer attributes (cursor pagination)',
      schema: { querystring: S.AttributeListQuery, response: { 200: Page(S.CustomerAttribute) } },
      handler: async (req) => {
        const q = req.query as { limit?: number; cursor?: string };
        const limit = q.limit ?? 50;
        return pageOf(await store.listAttributes(s.db, decodeCursor(q.cursor), limit), limit, shapeAttribute);
      },
    },
    {
      ...base, id: 'customerAttributes.create', method: 'POST', path: '/crm/customerAttributes', scope: 'write',
      summary: 'Create a customer attribute (409 when the externalId exists)',
      schema: { body: S.CustomerAttributeCreate, response: { 201: S.CustomerAttribute, 409: ErrorBody } },
      idempotencyKey: true,
      handler: (req, reply) => {
        const body = req.body as S.CustomerAttributeCreateT;
        checkNotDotSegment(body.externalId, '/crm/customerAttributes');
        const create = async (q: Queryable) => {
          const row = await store.insertAttribute(q, body);
          if (!row) throw conflict(`a customer attribute with externalId "${body.externalId}" already exists`, 'externalId');
          return shapeAttribute(row);
        };
        return createOnce(s.db, req, reply, 201, create, () => create(s.db));
      },
    },
    {
      ...base, id: 'customerAttributes.get', method: 'GET', path: '/crm/customerAttributes/:id', scope: 'read',
      summary: 'Get a customer attribute by uuid or externalId',
      schema: { params: S.AttributeIdParams, response: { 200: S.CustomerAttribute } },
      handler: async (req) => {
        const id = (req.params as { id: string }).id;
        const row = await store.findAttribute(s.db, id);
        if (!row) throw notFound(`customer attribute "${id}" not found`, 'id');
        return shapeAttribute(row);
      },
    },
  ];
}
