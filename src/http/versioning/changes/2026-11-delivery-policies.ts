// 2026-11 (issue 26, docs/delivery-policies.md): a webhook subscription states its own retry schedule, jitter
// and rate cap (`retrySchedule`, `retryJitter`, `maxPerSecond`). Older versions neither see nor accept them: their
// answers leave the three fields out, and their request schemas (S.Subscription*Before202611, declared by
// 2026-11-subscription-event-types.ts on the same routes) are closed without them, so a write naming one is a 400.
// A subscription written by an older version keeps whatever policy it had.
import type { VersionChange } from '../route.ts';

const POLICY_FIELDS = ['retrySchedule', 'retryJitter', 'maxPerSecond'];

function strip(sub: unknown): unknown {
  if (!sub || typeof sub !== 'object' || !('retrySchedule' in sub)) return sub; // an error answer passes as it is
  return Object.fromEntries(Object.entries(sub).filter(([k]) => !POLICY_FIELDS.includes(k)));
}

function stripList(body: unknown): unknown {
  const page = body as { data?: unknown[] };
  if (!page || !Array.isArray(page.data)) return body;
  return { ...page, data: page.data.map(strip) };
}

export const deliveryPolicies: VersionChange = {
  version: '2026-11',
  description: 'Webhook subscriptions carry their delivery policies: retrySchedule, retryJitter, maxPerSecond',
  routes: {
    'webhooks.subscriptions.list': { downgradeResponse: stripList },
    'webhooks.subscriptions.get': { downgradeResponse: strip },
    'webhooks.subscriptions.create': { downgradeResponse: strip },
    'webhooks.subscriptions.patch': { downgradeResponse: strip },
  },
};
