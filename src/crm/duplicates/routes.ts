// Possible duplicates (SPEC §14, from 2026-11): GET /crm/customers/{id}/duplicates (one customer's likely
// twins, best first) and GET /crm/duplicates (candidate pairs across all active customers, best first).
// Both fold in what changed since the last refresh (bounded; not while an import is being applied), then
// read the pairs table by index; the per-customer route checks the queue in the statement that reads its pairs.
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { invalid, notFound } from '../../http/errors.ts';
import { RETRYABLE_SQLSTATES, sqlState } from '../../db/db.ts';
import { CustomerIdParams } from '../customers/schema.ts';
import { shapeCustomer } from '../customers/wire.ts';
import { errorsFor } from '../merge/schema.ts';
import { refreshDuplicates } from './refresh.ts';
import { DEFAULT_MIN_SCORE } from './score.ts';
import * as S from './schema.ts';
import * as store from './store.ts';

/** At most this many refresh batches run inside a request; a larger backlog is drained by the worker loop. */
const REQUEST_BATCHES = 4;

const encodeCursor = (p: store.PairRow) => Buffer.from(`d1:${p.score}:${p.a}:${p.b}`, 'utf8').toString('base64url');
function decodeCursor(cursor: string | undefined): [number, string, string] | null {
  if (cursor === undefined || cursor === '') return null;
  const m = /^d1:(\d{1,4}):(\d{1,18}):(\d{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw invalid('cursor is not valid', 'cursor');
  return [Number(m[1]), m[2], m[3]];
}

export function duplicateRoutes(s: Services): RouteDef[] {
  const base = { tag: 'Possible duplicates', scope: 'read' as const, since: '2026-11', method: 'GET' as const };
  // Best effort: a batch that loses a deadlock to a customer write (the write holds the customer, its trigger
  // waits for the batch's claim of the queue) rolls back, its customers stay queued, and the read answers the
  // pairs as they are, like while an import defers the refresher.
  const refresh = () => refreshDuplicates(s.db, s.config.defaultPhoneRegion, REQUEST_BATCHES).catch((err) => {
    if (!RETRYABLE_SQLSTATES.has(sqlState(err) ?? '')) throw err;
  });
  return [
    {
      ...base, id: 'customers.duplicates', path: '/crm/customers/:id/duplicates',
      summary: 'Active customers likely to be the same person as this one, best first, with a score and its reasons',
      schema: { params: CustomerIdParams, querystring: S.DuplicatesOfQuery, response: { 200: S.DuplicatesOf, ...errorsFor(400, 401, 403, 404) } },
      handler: async (req) => {
        const { id } = req.params as { id: string };
        const limit = (req.query as { limit?: number }).limit ?? 50;
        // One round trip when nothing changed since the last refresh: the customer, the queue's state, the pairs.
        let found = await store.duplicatesOf(s.db, id, limit);
        if (found && found.dirty && !found.importing) {
          await refresh();
          found = await store.duplicatesOf(s.db, id, limit);
        }
        if (!found) throw notFound(`customer "${id}" not found`, 'id');
        return { data: found.rows.map((r) => ({ customer: shapeCustomer(r), score: r.pair_score / 1000, reasons: r.reasons })) };
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
        await refresh();
        const rows = await store.listPairs(s.db, Math.ceil((q.minScore ?? DEFAULT_MIN_SCORE) * 1000 - 1e-9), after, limit);
        const page = rows.slice(0, limit);
        const byId = await store.customersById(s.db, page.flatMap((p) => [p.a, p.b]));
        return {
          data: page.map((p) => ({ customers: [shapeCustomer(byId.get(p.a)!), shapeCustomer(byId.get(p.b)!)], score: p.score / 1000, reasons: p.reasons })),
          nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]) : null,
        };
      },
    },
  ];
}
