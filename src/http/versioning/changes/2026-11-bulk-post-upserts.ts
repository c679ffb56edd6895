// POST /crm/customers/bulk in Tulip's versions 2025-08 and 2025-12 creates only, as Tulip documents it
// (https://docs.tulip.com/integrating/aerial/singlevsbulkendpoints: "If the externalId of the entity you pass into the
// request already exists in your Tulip instance, then an error will be thrown"; PUT …/bulk is the upsert). An item whose
// externalId exists is that item's 409 Conflict and changes nothing; an integration written from those docs never
// replaces a customer it meant to create. Bulb's own versions upsert (SPEC §5): until 2025-04, and again from 2026-11,
// where an item is a patch (changes/2026-11-bulk-patch.ts). The handler speaks 2026-11; this change marks the request.
import type { VersionChange } from '../route.ts';

const TULIP_CREATE_ONLY = new Set(['2025-08', '2025-12']);

export const bulkPostUpserts: VersionChange = {
  version: '2026-11',
  description: "POST /crm/customers/bulk upserts: in Tulip's 2025-08 and 2025-12 it created only (an existing externalId was that item's 409 Conflict; PUT …/bulk upserted)",
  routes: {
    'customers.bulk': {
      upgradeRequest: (req) => {
        if (TULIP_CREATE_ONLY.has(req.routeOptions.config.apiVersion ?? '')) req.bulkCreateOnly = true;
      },
    },
  },
};
