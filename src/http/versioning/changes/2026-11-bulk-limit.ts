// How many items one bulk request takes. Tulip's versions 2025-08 and 2025-12 take up to 1,000, as Tulip documents its
// bulk endpoints (https://docs.tulip.com/integrating/aerial/asyncbulk: "async bulk endpoints only support ingestion of
// 1000 records … per API call"), so an integration written from those docs that sends 101–1,000 customers is not
// refused; the route's body limit is scaled with the items (10 × the server's 1 MiB). Bulb's own versions take 1–100
// (SPEC §5): until 2025-04, and again from 2026-11. Bulb answers such a bulk synchronously, one result per item, as
// every other bulk (docs/tulip-api.md).
//
// Two changes, as the versions order them: the one of 2026-11 gives every older version Tulip's limit, the one of
// 2025-08 gives the versions before it Bulb's back (the oldest newer change that overrides a part wins).
import type { RouteSchema, VersionChange } from '../route.ts';
import { bulkBodies } from '../../../crm/customers/bulk.ts';
import { BULK_MAX_ITEMS, TULIP_BULK_MAX_ITEMS } from '../../../crm/customers/schema.ts';

const BULK_ROUTES = ['customers.bulk', 'customers.bulkPut'];

function limit(max: number): RouteSchema {
  return {
    ...bulkBodies(max),
    bodyLimitScale: max === BULK_MAX_ITEMS ? undefined : max / BULK_MAX_ITEMS,
  };
}

const over = (schema: RouteSchema) => Object.fromEntries(BULK_ROUTES.map((id) => [id, { schema }]));

export const bulkLimitBulb: VersionChange = {
  version: '2026-11',
  description: `A bulk request takes 1–${BULK_MAX_ITEMS} customers (in Tulip's 2025-08 and 2025-12: up to ${TULIP_BULK_MAX_ITEMS})`,
  routes: over(limit(TULIP_BULK_MAX_ITEMS)),
};

export const bulkLimitTulip: VersionChange = {
  version: '2025-08',
  description: `A bulk request takes up to ${TULIP_BULK_MAX_ITEMS} customers, as Tulip documents it (before 2025-08: 1–${BULK_MAX_ITEMS})`,
  routes: over(limit(BULK_MAX_ITEMS)),
};
