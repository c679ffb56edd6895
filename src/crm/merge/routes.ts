// The three doors of the merge, thin handlers over one core (service.ts):
//   2025-04+           POST /crm/customers/{id}/merge {"mergeWithCustomerIds"} → MergeResult (?dryRun=true);
//                      each customer by uuid or externalId (a uuid match wins), as every other customer {id}
//   2022-04 … 2022-08  PUT  /crm/customers/{id}/merge {"ids":[id…]} → the primary Customer; Tulip ids
//                      (the customer's numeric `id`, JSON numbers or numeric strings) or uuids
//   2022-04 … 2022-08  PUT  /crm/customers/{externalId}/merge_by_external_id {"ids":[externalId…]} → the primary Customer
// the merge history GET /crm/customers/{id}/merges (2022-08+), and the undo (2026-11):
//   POST /crm/merges/{mergeUuid}/undo → UndoResult (?dryRun=true; Idempotency-Key).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { notFound } from '../../http/errors.ts';
import { decodeCursor, Page, pageOf } from '../../http/pagination.ts';
import { listOf } from '../../http/cursor-scope.ts';
import { sourceOf } from '../../http/context.ts';
import { isoNN } from '../../http/time.ts';
import { withRetry, type Queryable } from '../../db/db.ts';
import { Customer, CustomerIdParams } from '../customers/schema.ts';
import { shapeCustomer } from '../customers/wire.ts';
import * as customers from '../customers/store.ts';
import { idempotent, keyOf } from '../idempotency/service.ts';
import { auditOf } from '../../audit/record.ts';
import * as S from './schema.ts';
import { MOVED_KEYS, type Moved } from './schema.ts';
import { checkRequest, DryRunRollback, mergeCustomers, type MergeInput, type MergeOutcome } from './service.ts';
import * as store from './store.ts';
import { undoMerge, UndoDryRun, type UndoOutcome } from './undo.ts';

export function shapeMergeResult(o: MergeOutcome): S.MergeResultT {
  return {
    mergeUuid: o.mergeUuid,
    primary: shapeCustomer(o.primary),
    mergedCustomerIds: o.secondaryExternalIds,
    moved: o.moved,
    duplicateAssociatesRemoved: o.duplicatesRemoved,
    dryRun: o.dryRun,
  };
}

const shapeRecord = (m: store.MergeRow) => ({
  uuid: m.uuid,
  primary: { uuid: m.primary_uuid, externalId: m.primary_external_id },
  secondaries: m.secondaries,
  // In MergeResult's key order (the stored jsonb keeps its own: shorter keys first).
  moved: Object.fromEntries(MOVED_KEYS.map((k) => [k, m.moved[k] ?? 0])) as Moved,
  duplicateAssociatesRemoved: m.duplicates_removed,
  tokenUuid: m.principal_uuid,
  source: m.source,
  createdAt: isoNN(m.created_at),
  undoneAt: m.undone_at ? isoNN(m.undone_at) : null,
});

const shapeUndo = (o: UndoOutcome): S.UndoResultT => ({ ...o, primary: shapeCustomer(o.primary) });

/**
 * Runs a merge or an undo under the request's Idempotency-Key (if any) in a retried transaction, with its audit
 * row, and answers it (a replay says so); a dry run rolls back by throwing `DryRun`, whose outcome is the answer.
 */
async function answerIdempotently<O>(s: Services, req: FastifyRequest, reply: FastifyReply, run: (tx: Queryable) => Promise<O>, shape: (o: O) => unknown, DryRun: new (outcome: O) => { outcome: O }, acted: (o: O) => boolean = () => true, audited: (o: O) => unknown = shape) {
  const key = keyOf(req);
  const audit = auditOf(req);
  try {
    const answer = await withRetry(s.db, (tx) => idempotent(tx, key, async () => {
      const outcome = await run(tx);
      const body = shape(outcome);
      await audit(tx, audited === shape ? body : audited(outcome), acted(outcome));
      return { status: 200, body };
    }), 10);
    if (answer.replayed) reply.header('idempotent-replayed', 'true');
    reply.code(answer.status);
    return answer.body;
  } catch (err) {
    if (err instanceof DryRun) return shape(err.outcome);
    throw err;
  }
}

/**
 * A secondary as the merge reads it: a string, or the legacy door's number; anything else is refused by checkRequest
 * from `raw` (String() of a deeply nested array overflowed the stack first: a 500 for a 10 KB body).
 */
const asId = (x: unknown) => (typeof x === 'string' || typeof x === 'number' ? String(x) : '');

/** Every door: body checks (each secondary as sent, `raw`), then the merge (idempotent, retried). */
function runMerge(s: Services, req: FastifyRequest, reply: FastifyReply, input: Omit<MergeInput, 'principalUuid' | 'source' | 'secondaries'> & { raw: unknown[] }, shape: (o: MergeOutcome) => unknown) {
  const { raw, ...rest } = input;
  const full: MergeInput = { ...rest, secondaries: raw.map(asId), principalUuid: req.principal?.uuid ?? null, source: sourceOf(req, s) };
  checkRequest(full, raw);
  // A merge whose secondaries were all merged into the primary already writes nothing (docs/merge.md): no act to audit.
  // Every door's audit row is made from the whole result (its merge's uuid, the merged customers' externalIds), whatever
  // the door answers (the legacy doors answer the primary alone, and had recorded the ids as the request typed them).
  return answerIdempotently(s, req, reply, (tx) => mergeCustomers(tx, full), shape, DryRunRollback, (o) => o.mergeUuid !== null, shapeMergeResult);
}

/** The audit row of a merge, by any door, from its whole result (shapeMergeResult); a dry run is no act. */
const mergeAudit: RouteDef['audit'] = {
  action: 'merge.created',
  target: (_req, b) => (b.dryRun ? null : { type: 'Customer', id: b.primary.uuid, details: { mergeUuid: b.mergeUuid, primary: b.primary.externalId, mergedCustomerIds: b.mergedCustomerIds } }),
};

export function mergeRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Customer merge', scope: 'write' as const };
  const legacy = { ...base, since: '2022-04', until: '2022-08', method: 'PUT' as const };
  const primaryOnly = (o: MergeOutcome) => shapeCustomer(o.primary);
  return [
    {
      ...base, id: 'customers.merge', idempotencyKey: true, method: 'POST', path: '/crm/customers/:id/merge', since: '2025-04',
      audit: mergeAudit,
      summary: 'Merge secondary customers into the primary (each by uuid or externalId); ?dryRun=true previews the counts',
      schema: { params: S.PrimaryParams, querystring: S.MergeQuery, body: S.listBody('mergeWithCustomerIds'), documentedBody: S.MergeBody, response: { 200: S.MergeResult, ...S.errorsFor(400, 401, 403, 404, 409) } },
      handler: (req, reply) => {
        const { id } = req.params as { id: string };
        const body = req.body as { mergeWithCustomerIds: unknown[] };
        const dryRun = (req.query as { dryRun?: boolean }).dryRun === true;
        return runMerge(s, req, reply, { by: 'uuidOrExternalId', primary: id, raw: body.mergeWithCustomerIds, dryRun, field: 'mergeWithCustomerIds' }, shapeMergeResult);
      },
    },
    {
      ...legacy, id: 'customers.mergeByUuid', idempotencyKey: true, path: '/crm/customers/:id/merge',
      audit: mergeAudit,
      summary: "Legacy merge by Tulip ids (the customers' numeric id) or uuids; answers the primary customer",
      schema: { params: S.LegacyIdParams, body: S.listBody('ids'), documentedBody: S.LegacyIdBody, response: { 200: Customer, ...S.errorsFor(400, 401, 403, 404, 409) } },
      handler: (req, reply) => {
        const { id } = req.params as { id: string };
        const { ids } = req.body as { ids: unknown[] };
        return runMerge(s, req, reply, { by: 'uuidOrTulipId', primary: id, raw: ids, dryRun: false, field: 'ids' }, primaryOnly);
      },
    },
    {
      ...legacy, id: 'customers.mergeByExternalId', idempotencyKey: true, path: '/crm/customers/:id/merge_by_external_id',
      audit: mergeAudit,
      summary: 'Legacy merge by externalIds; answers the primary customer',
      schema: { params: S.ExternalIdParams, body: S.listBody('ids'), documentedBody: S.LegacyExternalIdBody, response: { 200: Customer, ...S.errorsFor(400, 401, 403, 404, 409) } },
      handler: (req, reply) => {
        const { id } = req.params as { id: string };
        const { ids } = req.body as { ids: unknown[] };
        return runMerge(s, req, reply, { by: 'externalId', primary: id, raw: ids, dryRun: false, field: 'ids' }, primaryOnly);
      },
    },
    {
      ...base, id: 'customers.merges', method: 'GET', path: '/crm/customers/:id/merges', scope: 'read', since: '2022-08',
      summary: 'Merge history of a customer (as primary or as secondary), oldest first',
      schema: { params: CustomerIdParams, querystring: S.MergesQuery, response: { 200: Page(S.MergeRecord), ...S.errorsFor(400, 401, 403, 404) } },
      handler: async (req) => {
        const { id } = req.params as { id: string };
        const q = req.query as { limit?: number; cursor?: string };
        const c = await customers.findCustomer(s.db, id);
        if (!c) throw notFound(`customer "${id}" not found`, 'id');
        listOf(req, c.id);
        const limit = q.limit ?? 50;
        return pageOf(await store.listMerges(s.db, c.id, decodeCursor(q.cursor), limit), limit, shapeRecord);
      },
    },
    {
      ...base, id: 'merges.undo', idempotencyKey: true, method: 'POST', path: '/crm/merges/:mergeUuid/undo', since: '2026-11',
      audit: { action: 'merge.undone', target: (_req, b) => (b.dryRun ? null : { type: 'Merge', id: b.mergeUuid, details: { primary: b.primary.externalId, restoredCustomerIds: b.restoredCustomerIds } }) },
      summary: 'Undo a merge within BULB_UNMERGE_WINDOW_DAYS: secondaries active again, journaled rows moved back; ?dryRun=true previews',
      schema: { params: S.MergeUuidParams, querystring: S.UndoQuery, response: { 200: S.UndoResult, ...S.errorsFor(400, 401, 403, 404, 409) } },
      handler: async (req, reply) => {
        const { mergeUuid } = req.params as { mergeUuid: string };
        const dryRun = (req.query as { dryRun?: boolean }).dryRun === true;
        const input = { mergeUuid: mergeUuid.toLowerCase(), dryRun, windowDays: s.config.unmergeWindowDays, source: sourceOf(req, s) };
        return answerIdempotently(s, req, reply, (tx) => undoMerge(tx, input), shapeUndo, UndoDryRun);
      },
    },
  ];
}
