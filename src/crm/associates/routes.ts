// /crm/associates routes: create, list, get (SPEC §5, from 2022-08).
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

export function shapeAssociate(r: store.AssociateRow): S.AssociateT {
  return {
    uuid: r.uuid,
    externalId: r.external_id,
    firstName: r.first_name,
    lastName: r.last_name,
    email: r.email,
    storeId: r.store_id,
    createdAt: isoNN(r.created_at),
  };
}

export function associateRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Associates', since: '2022-08' };
  return [
    {
      ...base, id: 'associates.list', method: 'GET', path: '/crm/associates', scope: 'read',
      summary: 'List associates (cursor pagination)',
      schema: { querystring: S.AssociateListQuery, response: { 200: Page(S.Associate) } },
      handler: async (req) => {
        const q = req.query as { limit?: number; cursor?: string };
        const limit = q.limit ?? 50;
        return pageOf(await store.listAssociates(s.db, decodeCursor(q.cursor), limit), limit, shapeAssociate);
      },
    },
    {
      ...base, id: 'associates.create', method: 'POST', path: '/crm/associates', scope: 'write',
      summary: 'Create an associate (409 when the externalId exists)',
      schema: { body: S.AssociateCreate, response: { 201: S.Associate, 409: ErrorBody } },
      idempotencyKey: true,
      handler: (req, reply) => {
        const body = req.body as S.AssociateCreateT;
        checkNotDotSegment(body.externalId, '/crm/associates');
        const create = async (q: Queryable) => {
          const row = await store.insertAssociate(q, body);
          if (!row) throw conflict(`an associate with externalId "${body.externalId}" already exists`, 'externalId');
          return shapeAssociate(row);
        };
        return createOnce(s.db, req, reply, 201, create, () => create(s.db));
      },
    },
    {
      ...base, id: 'associates.get', method: 'GET', path: '/crm/associates/:id', scope: 'read',
      summary: 'Get an associate by uuid or externalId',
      schema: { params: S.AssociateIdParams, response: { 200: S.Associate } },
      handler: async (req) => {
        const id = (req.params as { id: string }).id;
        const row = await store.findAssociate(s.db, id);
        if (!row) throw notFound(`associate "${id}" not found`, 'id');
        return shapeAssociate(row);
      },
    },
  ];
}
