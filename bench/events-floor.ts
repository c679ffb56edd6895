// The events-list floor: Fastify plus a node-postgres pool of Bulb's size, no auth, no versioning, one
// hand-written query per request: the oldest 50 events after an id (a plain id cursor, with no commit-safe
// horizon), or since a time, shaped like Bulb's answer. `DATABASE_URL=… node --import tsx bench/events-floor.ts`.
import { app, iso, listen, pool } from './floor-common.ts';

app.get('/events', async (req) => {
  const q = req.query as { after?: string; since?: string };
  const cols = 'id, uuid, event_type, resource_type, resource_uuid, resource_external_id, source, created_at';
  // ?since: the first page created at or after a time, read from the created_at index.
  const r = q.since !== undefined
    ? await pool.query(`SELECT ${cols} FROM events WHERE created_at >= $1 ORDER BY created_at, id LIMIT 51`, [q.since])
    : await pool.query(`SELECT ${cols} FROM events WHERE id > $1 ORDER BY id LIMIT 51`, [Number(q.after ?? 0)]);
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
