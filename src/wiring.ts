// The one place above http/ that wires the domains together: every route module and every version
// change of the API, in one list each (version changes live under src/http/versioning/changes/).
import type { Services } from './services.ts';
import type { RouteDef, VersionChange } from './http/versioning/route.ts';
import { credentialRoutes } from './auth/routes.ts';
import { customerRoutes } from './crm/customers/routes.ts';
import { attributeRoutes } from './crm/attributes/routes.ts';
import { bulkRoutes } from './crm/customers/bulk-routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { replayRoutes } from './webhooks/replay-routes.ts';
import { associateRoutes } from './crm/associates/routes.ts';
import { dataRoutes } from './crm/attached/routes.ts';
import { mergeRoutes } from './crm/merge/routes.ts';
import { duplicateRoutes } from './crm/duplicates/routes.ts';
import { importRoutes } from './imports/routes.ts';
import { bulkItemsArePatches } from './http/versioning/changes/2026-11-bulk-patch.ts';
import { bulkPostUpserts } from './http/versioning/changes/2026-11-bulk-post-upserts.ts';
import { bulkLimitBulb, bulkLimitTulip } from './http/versioning/changes/2026-11-bulk-limit.ts';
import { eventRoutes } from './events/routes.ts';
import { mergeUndoneAt } from './http/versioning/changes/2026-11-merge-undone-at.ts';
import { exportRoutes } from './crm/customers/export.ts';
import { auditRoutes } from './audit/routes.ts';
import { withAudit } from './audit/record.ts';
import { subscriptionEventTypes } from './http/versioning/changes/2026-11-subscription-event-types.ts';
import { deliveryPolicies } from './http/versioning/changes/2026-11-delivery-policies.ts';
import { eventCatalog } from './http/versioning/changes/2026-11-event-catalog.ts';
import { subscriptionReceiverAuth } from './http/versioning/changes/2026-11-receiver-auth.ts';

/** Routes that declare `audit` record their act in the audit log, in the act's transaction (src/audit/record.ts). */
export function allRoutes(s: Services): RouteDef[] {
  const routes = [...customerRoutes(s), ...attributeRoutes(s), ...bulkRoutes(s), ...exportRoutes(s), ...associateRoutes(s), ...dataRoutes(s), ...mergeRoutes(s), ...duplicateRoutes(s), ...credentialRoutes(s), ...webhookRoutes(s), ...replayRoutes(s), ...eventRoutes(s), ...importRoutes(s)];
  return withAudit([...routes, ...auditRoutes(s)]);
}

/** Version changes, each a declared module under src/http/versioning/changes/. */
export const allChanges: VersionChange[] = [bulkItemsArePatches, bulkPostUpserts, bulkLimitBulb, bulkLimitTulip, mergeUndoneAt, subscriptionEventTypes, deliveryPolicies, eventCatalog, subscriptionReceiverAuth];
