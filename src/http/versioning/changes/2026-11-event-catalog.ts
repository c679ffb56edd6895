// 2026-11 (issue 26 item 4): GET /integrations/webhooks/eventTypes answers the event catalog, one entry per
// type `{name, resourceType, description, schema, example}` (src/events/catalog.ts). Older versions keep
// their list of names: `{eventType, resourceType, description}` per type, the same types.
import type { VersionChange } from '../route.ts';
import * as S from '../../../webhooks/schema.ts';

interface Entry { name: string; resourceType: string; description: string }

export const eventCatalog: VersionChange = {
  version: '2026-11',
  description: 'GET …/webhooks/eventTypes answers the event catalog: each type with the JSON Schema of its body and an example',
  routes: {
    'webhooks.eventTypes': {
      schema: { response: { 200: S.EventTypes } },
      downgradeResponse: (body) => ({
        data: (body as { data: Entry[] }).data.map((e) => ({ eventType: e.name, resourceType: e.resourceType, description: e.description })),
      }),
    },
  },
};
