// 2026-11 (SPEC §10.2): a webhook subscription listens to several event types (`eventTypes`, 1–20, order
// kept) instead of one `eventType`. Older versions keep reading and writing `eventType`: a read shows the
// first type of the list and, when there are several, warns with X-Bulb-Warning; a write of `eventType`
// replaces the whole list with that one type.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { VersionChange } from '../route.ts';
import { Page } from '../../pagination.ts';
import { ErrorBody } from '../../schema.ts';
import * as S from '../../../webhooks/schema.ts';

type Sub = Record<string, unknown> & { uuid?: string; eventTypes?: string[] };

/** eventTypes → eventType (the first), in the same position among the fields. */
function downgradeOne(sub: Sub): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(sub)) {
    if (k === 'eventTypes') out.eventType = (v as string[])[0];
    else out[k] = v;
  }
  return out;
}

const warning = (n: number) => `subscription has ${n} event types; use 2026-11 to see all`;

function downgradeSingle(body: unknown, _req: FastifyRequest, reply: FastifyReply): unknown {
  const sub = body as Sub;
  if (!sub || !Array.isArray(sub.eventTypes)) return body;
  if (sub.eventTypes.length > 1) reply.header('X-Bulb-Warning', warning(sub.eventTypes.length));
  return downgradeOne(sub);
}

/** A list warns once per subscription with several types, naming it. */
function downgradeList(body: unknown, _req: FastifyRequest, reply: FastifyReply): unknown {
  const page = body as { data: Sub[]; nextCursor: string | null };
  const warnings = page.data.filter((s) => (s.eventTypes?.length ?? 0) > 1).map((s) => `${warning(s.eventTypes!.length).replace('subscription', `subscription ${s.uuid}`)}`);
  if (warnings.length) reply.header('X-Bulb-Warning', warnings);
  return { ...page, data: page.data.map(downgradeOne) };
}

function upgradeWrite(req: FastifyRequest): void {
  const b = req.body as Record<string, unknown>;
  if (!b || !('eventType' in b)) return;
  const { eventType, ...rest } = b;
  req.body = { ...rest, eventTypes: [eventType] };
}

export const subscriptionEventTypes: VersionChange = {
  version: '2026-11',
  description: 'Webhook subscriptions listen to several event types: eventTypes (1–20) replaces eventType',
  routes: {
    'webhooks.subscriptions.list': {
      schema: { response: { 200: Page(S.SubscriptionBefore202611) } },
      downgradeResponse: downgradeList,
    },
    'webhooks.subscriptions.get': {
      schema: { response: { 200: S.SubscriptionBefore202611 } },
      downgradeResponse: downgradeSingle,
    },
    'webhooks.subscriptions.create': {
      schema: { body: S.SubscriptionCreateBefore202611, response: { 201: S.SubscriptionWithSecretBefore202611 } },
      upgradeRequest: upgradeWrite,
      downgradeResponse: downgradeSingle,
    },
    'webhooks.subscriptions.patch': {
      schema: { body: S.SubscriptionPatchBefore202611, response: { 200: S.SubscriptionBefore202611, 409: ErrorBody } },
      upgradeRequest: upgradeWrite,
      downgradeResponse: downgradeSingle,
    },
  },
};
