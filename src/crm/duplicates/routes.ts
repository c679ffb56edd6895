// Possible duplicates (SPEC §14, from 2026-11): GET /crm/customers/{id}/duplicates (one customer's likely
// twins, best first) and GET /crm/duplicates (candidate pairs across all active customers, best first).
// Reads never do the refresher's work (at 1M customers a read that folded in a dirty queue took 43–64 s): they
// serve the pairs as they stand and say how many customers are still queued (pendingCustomers, counted up to
// store.PENDING_COUNTED); the worker's refresher folds changes in.
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { invalid, notFound } from '../../http/errors.ts';
import { cursorText } from '../../http/pagination.ts';
import { CustomerIdParams } from '../customers/schema.ts';
import { shapeCustomer } from '../customers/wire.ts';
import { errorsFor } from '../merge/schema.ts';
import { DEFAULT_MIN_SCORE } from './score.ts';
import * as S from './schema.ts';
import * as store from './store.ts';

const encodeCursor = (p: store.PairRow) => Buffer.from(`d1:${p.score}:${p.a}:${p.b}`, 'utf8').toString('base64url');
function decodeCursor(cursor: string | undefined): [number, string, string] | null {
  if (cursor === undefined || cursor === '') return null;
  const m = /^d1:(\d{1,4}):(\d{1,18}):(\d{1,18})$/.exec(cursorText(cursor) ?? '');
  if (!m) throw invalid('cursor is not valid', 'cursor');
  return [Number(m[1]), m[2], m[3]];
}

export function duplicateRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Possible duplicates', scope: 'read' as const, since: '2026-11', method: 'GET' as const };
  return [
    {
      ...base, id: 'customers.duplicates', path: '/crm/customers/:id/duplicates',
      summary: 'Active customers likely to be the same person as this one, best first, with a score and its reasons',
      schema: { params: CustomerIdParams, querystring: S.DuplicatesOfQuery, response: { 200: S.DuplicatesOf, ...errorsFor(400, 401, 403, 404) } },
      handler: async (req) => {
        const { id } = req.params as { id: string };
        const limit = (req.query as { limit?: number }).limit ?? 50;
        // One round trip: the customer, the queue's length, the pairs.
        const found = await store.duplicatesOf(s.db, id, limit);
        if (!found) throw notFound(`customer "${id}" not found`, 'id');
        return { data: found.rows.map((r) => ({ customer: shapeCustomer(r), score: r.pair_score / 1000, reasons: r.reasons })), pendingCustomers: found.pending };
      },
    },
    {
      ...base, id: 'duplicates.list', path: '/crm/duplicates',
      summary: 'Candidate duplicate pairs across all active customers, best first (minScore, default 0.8)',
      schema: { querystring: S.DuplicatePairsQuery, response: { 200: S.DuplicatePairs, ...errorsFor(400, 401, 403) } },
      handler: async (req) => {
        const q = req.query as { minScore?: number; cursor?: string; limit?: number };
        const limit = q.limit ?? 50;
        const after = decodeCursor(q.cursor);
        const rows = await store.listPairs(s.db, Math.ceil((q.minScore ?? DEFAULT_MIN_SCORE) * 1000 - 1e-9), after, limit);
        const page = rows.slice(0, limit);
        const byId = await store.activeCustomersById(s.db, page.flatMap((p) => [p.a, p.b]));
        // A pair whose customer stopped being active since the pairs were read is left out (the list is over active
        // customers only; a probe saw them listed disabled, with mergedInto null); the cursor still follows the pairs.
        const shown = page.filter((p) => byId.has(p.a) && byId.has(p.b));
        return {
          data: shown.map((p) => ({ customers: [shapeCustomer(byId.get(p.a)!), shapeCustomer(byId.get(p.b)!)], score: p.score / 1000, reasons: p.reasons })),
          nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]) : null,
          pendingCustomers: await store.pendingCustomers(s.db),
        };
      },
    },
  ];
}
