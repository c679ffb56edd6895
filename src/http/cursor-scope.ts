// Cursors bound to the list they came from (SPEC §3: opaque): every `nextCursor` a route answers is wrapped with a
// digest of the route and its path (`b1.<digest>.<cursor>`), and a wrapped cursor sent to another route, or to the
// same route under another path (another customer's notes), is a 400 instead of a page of the wrong list. Until
// 2026-11-29 a cursor was the list's position alone, and a reused one answered 200 with a plausible, wrong page (a
// probe: another customer's notes cursor read as "this customer has none", a deliveries cursor walked customers).
// The filters are not bound: a cursor is a position in its list's order, and a page asked with other filters is that
// list's next rows from the same place. Cursors given before (not wrapped) are still read, unbound.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalid } from './errors.ts';

const PREFIX = 'b1.';

/** The list a request walks: its route and its path's values (the version left out: a walk may change versions). */
function scopeOf(req: FastifyRequest): string {
  const params = JSON.stringify(req.params ?? {});
  return createHash('sha256').update(`${req.routeOptions.config.routeId}\n${params}`).digest('base64url').slice(0, 11);
}

export function bindCursors(app: FastifyInstance): void {
  app.addHook('preValidation', (req, _reply, done) => {
    const q = req.query as Record<string, unknown> | undefined;
    const cursor = q?.cursor;
    if (typeof cursor !== 'string' || !cursor.startsWith(PREFIX) || !req.routeOptions.config.routeId) return done();
    const rest = cursor.slice(PREFIX.length);
    const dot = rest.indexOf('.');
    if (dot < 0 || rest.slice(0, dot) !== scopeOf(req)) return done(invalid('cursor is not valid: it was given by another list (a route, or another record\'s list)', 'cursor'));
    q!.cursor = rest.slice(dot + 1);
    done();
  });
  app.addHook('preSerialization', (req, _reply, payload, done) => {
    const p = payload as { nextCursor?: unknown } | null;
    if (p && typeof p === 'object' && typeof p.nextCursor === 'string' && req.routeOptions.config.routeId) {
      return done(null, { ...p, nextCursor: `${PREFIX}${scopeOf(req)}.${p.nextCursor}` });
    }
    done(null, payload);
  });
}
