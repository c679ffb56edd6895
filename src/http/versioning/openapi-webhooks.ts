// The `webhooks` section of a version's OpenAPI 3.1 document: one POST per event type that the version's
// subscriptions can listen for (the event types its subscription-create body accepts), its body the type's
// schema from the event catalog (src/events/catalog.ts, lifted into components.schemas) with the example,
// and the signature headers of SPEC §7. A version serving no subscription route (2022-04) documents what a
// subscription created in a later version with that webhookVersion receives: every type of the catalog (the body
// does not depend on the webhookVersion; only X-Webhook-Version names it).
import type { Registry } from './registry.ts';
import { CATALOG, catalogEntry, schemaName } from '../../events/catalog.ts';
import { wireNames } from '../../config.ts';

type Json = any;

export const WEBHOOK_EVENTS_TAG = 'Webhook events';

/** The event types a version's subscriptions accept, in catalog order; [] when it serves no subscription create. */
export function subscribableTypes(registry: Registry, version: string): string[] {
  const create = registry.byVersion.get(version)?.find((vr) => vr.def.id === 'webhooks.subscriptions.create');
  const props = (create?.schema.body as Json)?.properties ?? {};
  const list: string[] = props.eventTypes?.items?.enum ?? props.eventType?.enum ?? [];
  return list.filter((t) => catalogEntry(t));
}

function headers(serviceName: string): Json[] {
  const header = (name: string, description: string, example: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' }, example });
  return [
    header(wireNames(serviceName).hmacHeader, 'lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the signing secret string as shown (whsec_ included), the oldest still valid during a rotation', '5f0c3c1e8d1f4e1a9b7c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6'),
    header('webhook-id', 'Standard Webhooks: the event uuid (dedupe on it)', '03a4eabd-2551-41d9-9828-e105b1eb5cf5'),
    header('webhook-timestamp', 'Standard Webhooks: unix seconds of the attempt', '1793713530'),
    header('webhook-signature', 'Standard Webhooks: "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" keyed with the base64-decoded secret, one per valid secret, space-separated', 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='),
    header('X-Webhook-Version', 'the subscription\'s webhookVersion', '2022-08'),
  ];
}

export function webhooksSection(registry: Registry, version: string, serviceName: string, lift: (s: Json) => Json): Record<string, Json> {
  const own = subscribableTypes(registry, version);
  const types = own.length > 0 ? own : CATALOG.map((e) => e.name);
  const section: Record<string, Json> = {};
  for (const name of types) {
    const e = catalogEntry(name)!;
    section[name] = {
      post: {
        operationId: schemaName(name)[0].toLowerCase() + schemaName(name).slice(1),
        summary: `${name} (${e.resourceType})`,
        description: `${e.description} Sent as a signed POST to every subscription listening for ${name} (\`Authorization\` as the subscription's authMethod says). Delivered at least once: dedupe on \`uuid\`.${own.length > 0 ? '' : ` This version serves no subscription routes: a subscription created in a later version with \`webhookVersion: "${version}"\` receives this body.`}`,
        tags: [WEBHOOK_EVENTS_TAG],
        security: [],
        parameters: headers(serviceName),
        requestBody: { required: true, content: { 'application/json': { schema: lift(e.schema), example: e.example } } },
        responses: {
          '200': { description: 'Any 2xx within 20 s acknowledges the delivery (the body is ignored)' },
          '4XX': { description: 'Any other answer (no answer within 20 s, a redirect, a 4xx or 5xx) fails the attempt; it is retried on the schedule of the subscription. 429 or 503 with Retry-After delays the next attempts; 410 Gone disables the subscription at once (its deliveries wait until it is re-activated)' },
        },
      },
    };
  }
  return section;
}
