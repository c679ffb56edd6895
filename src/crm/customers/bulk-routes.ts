// POST and PUT /crm/customers/bulk: validates each item, then upserts the valid ones set-based in one transaction
// (src/crm/customers/bulk.ts), or in one statement when they are all new customers. One result per item, in order;
// a bad or conflicting item does not stop the others. PUT is Tulip's documented bulk update, which creates an
// externalId it does not know (https://docs.tulip.com/integrating/aerial/singlevsbulkendpoints): the same upsert.
// POST in Tulip's versions 2025-08 and 2025-12 creates only, as that page says (changes/2026-11-bulk-post-upserts.ts).
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { sourceOf } from '../../http/context.ts';
import { withRetry } from '../../db/db.ts';
import * as S from './schema.ts';
import { shapeCustomer } from './wire.ts';
import { bulkBodies, createOnlyRepeats, insertIfAllNew, itemErrors, upsertItems, type BulkItemT } from './bulk.ts';
import { externalIdTaken } from './service.ts';
import { attributeProblems, unknownAttributeIds } from './validate.ts';
import { checkBudget } from '../../http/validator.ts';

export function bulkRoutes(s: Services): RouteDef[] {
  const bulk: Omit<RouteDef, 'id' | 'method' | 'summary'> = {
    tag: 'Customers', path: '/crm/customers/bulk', scope: 'write', since: '2022-08', checksItems: true,
    schema: { ...bulkBodies(S.BULK_MAX_ITEMS), response: { 200: S.BulkResult } },
    handler: async (req) => {
      const items = req.body as unknown[];
      const results: unknown[] = new Array(items.length);
      const valid: BulkItemT[] = [];
      const at: number[] = [];
      const budget = checkBudget();
      const checked = items.map((item) => itemErrors(item, budget, req.bodyMayHoldUnstorable !== false));
      // Attribute values must name existing customer attributes: one look-up for every item.
      const unknown = await unknownAttributeIds(s.db, items.filter((_, i) => checked[i].length === 0) as BulkItemT[]);
      items.forEach((item, index) => {
        const errors = checked[index].length > 0 ? checked[index]
          : attributeProblems(item as BulkItemT, unknown).map((p) => ({ ...p, errorCode: 'InvalidParameterError' }));
        if (errors.length > 0) results[index] = { index, status: 400, errors };
        else {
          valid.push(item as BulkItemT);
          at.push(index);
        }
      });
      // Create only (POST in Tulip's 2025-08 and 2025-12): an item repeating an earlier item's externalId is a 409.
      const createOnly = req.bulkCreateOnly === true;
      if (createOnly) {
        const repeats = createOnlyRepeats(valid);
        for (const k of repeats) results[at[k]] = { index: at[k], status: 409, errors: externalIdTaken(valid[k].externalId).entries };
        for (const k of [...repeats].reverse()) {
          valid.splice(k, 1);
          at.splice(k, 1);
        }
      }
      if (valid.length > 0) {
        const opts = { source: sourceOf(req, s), createOnly };
        const outcomes = (await insertIfAllNew(s.db, valid, opts)) ?? (await withRetry(s.db, (tx) => upsertItems(tx, valid, opts)));
        outcomes.forEach((o, k) => {
          const index = at[k];
          results[index] = o.row ? { index, status: o.status, customer: shapeCustomer(o.row) } : { index, status: o.status, errors: o.errors };
        });
      }
      return { results };
    },
  };
  return [
    // One summary for every version's document, so it says what each version does (it said "a patch" everywhere, which
    // only 2026-11 does; a probe).
    { ...bulk, id: 'customers.bulk', method: 'POST', summary: "Create or update 1–100 customers by externalId, one result per item: until 2025-04 an item for an existing customer replaces it; in Tulip's 2025-08 and 2025-12 (1,000 items) POST creates only (409 for an existing one); from 2026-11 an item is a patch" },
    { ...bulk, id: 'customers.bulkPut', method: 'PUT', summary: "Tulip's bulk update of 1–100 customers by externalId (1,000 in Tulip's 2025-08 and 2025-12), one result per item: an item for an existing customer replaces it (from 2026-11 it is a patch), an unknown one is created" },
  ];
}
