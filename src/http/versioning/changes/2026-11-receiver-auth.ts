// 2026-11 (docs/receiver-auth.md): receivers behind enterprise security. A subscription carries `oauth2` (OAuth2
// client credentials, with authMethod OAUTH2_CLIENT_CREDENTIALS) and `tls` (mutual TLS). Older versions neither show
// nor accept them: their request schemas have neither field nor the new authMethod (a 400 naming the field), and
// their answers drop both. A subscription set up through 2026-11 keeps both when changed through an older version
// (an omitted field is unchanged), and shows its authMethod as it is.
import type { VersionChange } from '../route.ts';
import { Page } from '../../pagination.ts';
import * as S from '../../../webhooks/schema.ts';

type Sub = Record<string, unknown>;

function strip(sub: Sub): Sub {
  if (!sub || typeof sub !== 'object' || !('oauth2' in sub || 'tls' in sub)) return sub;
  const { oauth2: _o, tls: _t, ...rest } = sub;
  return rest;
}

const downgradeSingle = (body: unknown) => strip(body as Sub);
const downgradeList = (body: unknown) => {
  const page = body as { data: Sub[]; nextCursor: string | null };
  return { ...page, data: page.data.map(strip) };
};

// The schemas of older versions are the same objects 2026-11-subscription-event-types.ts declares (one change
// boundary: schema.ts's *Before202611 shapes lack eventTypes, oauth2, tls and the new authMethod alike).
export const subscriptionReceiverAuth: VersionChange = {
  version: '2026-11',
  description: 'Webhook subscriptions authenticate to receivers with OAuth2 client credentials (oauth2) and mutual TLS (tls)',
  routes: {
    'webhooks.subscriptions.list': { schema: { response: { 200: Page(S.SubscriptionBefore202611) } }, downgradeResponse: downgradeList },
    'webhooks.subscriptions.get': { schema: { response: { 200: S.SubscriptionBefore202611 } }, downgradeResponse: downgradeSingle },
    'webhooks.subscriptions.create': {
      schema: { body: S.SubscriptionCreateBefore202611, response: { 201: S.SubscriptionWithSecretBefore202611 } },
      downgradeResponse: downgradeSingle,
    },
    'webhooks.subscriptions.patch': {
      schema: { body: S.SubscriptionPatchBefore202611, response: { 200: S.SubscriptionBefore202611 } },
      downgradeResponse: downgradeSingle,
    },
  },
};
