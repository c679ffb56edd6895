// The events-list floor: Fastify plus a node-postgres pool of Bulb's size, no auth, no versioning, one
// hand-written query per request: the oldest 50 events after an id (a plain id cursor, with no commit-safe
// horizon), shaped like Bulb's answer. `DATABASE_URL=… node --import tsx bench/events-floor.ts`.
import { app, iso, listen, pool } from './floor-common.ts';

app.get('/events', async (req) => {
  const after = Number((req.query as any).after ?? 0);
  const r = await pool.query(
    `SELECT id, uuid, event_type, resource_type, resource_uuid, resource_external_id, source, created_at FROM events WHERE id > $1 ORDER BY id LIMIT 51`,
    [after],
  );
  const page = r.rows.slice(0, 50);
  return {
    data: page.map((e) => ({
      uuid: e.uuid, createdAt: iso(e.created_at), eventType: e.event_type,
      resourceType: e.resource_type, resource: { uuid: e.resource_uuid, externalId: e.resource_external_id }, source: e.source,
    })),
    nextCursor: page.length ? String(page[page.length - 1].id) : null,
  };
});

await listen('events-floor');
