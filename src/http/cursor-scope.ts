// Cursors bound to the list they came from (SPEC §3: opaque): every `nextCursor` a route answers is wrapped with a
// digest of its list (`b1.<digest>.<position>`): the route, and the record the list belongs to (a customer's notes,
// a subscription's replays), as the handler resolved it, so that naming the customer by uuid or by externalId walks
// the same list. A wrapped cursor sent to another route, or to another record's list, is a 400 instead of a page of
// the wrong list. Until 2026-11-29 a cursor was the list's position alone, and a reused one answered 200 with a
// plausible, wrong page (a probe: another customer's notes cursor read as "this customer has none"; a deliveries
// cursor walked the customers). The filters are not bound: a cursor is a position in its list's order, and a page
// asked with other filters is that list's next rows from the same place. Cursors given before (not wrapped) are still
// read, unbound.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalid } from './errors.ts';

const PREFIX = 'b1.';
const GIVEN = Symbol('cursor list given');
const OWNER = Symbol('cursor list owner');

type Scoped = FastifyRequest & { [GIVEN]?: string; [OWNER]?: string };

/** Names the record whose list a handler answers (its internal id): the cursor's list, however the path named it. */
export function listOf(req: FastifyRequest, owner: string): void {
  (req as Scoped)[OWNER] = owner;
}

/** The list a request walks: its route and its record (the version left out: a walk may change versions). */
function digestOf(req: Scoped): string {
  const owner = req[OWNER] ?? JSON.stringify(req.params ?? {});
  return createHash('sha256').update(`${req.routeOptions.config.routeId}\n${owner}`).digest('base64url').slice(0, 11);
}

export function bindCursors(app: FastifyInstance): void {
  app.addHook('preValidation', (req, _reply, done) => {
    const q = req.query as Record<string, unknown> | undefined;
    const cursor = q?.cursor;
    if (typeof cursor !== 'string' || !cursor.startsWith(PREFIX) || !req.routeOptions.config.routeId) return done();
    const rest = cursor.slice(PREFIX.length);
    const dot = rest.indexOf('.');
    if (dot < 1) return done(invalid('cursor is not valid', 'cursor'));
    (req as Scoped)[GIVEN] = rest.slice(0, dot);
    q!.cursor = rest.slice(dot + 1);
    done();
  });
  // Checked once the handler has named its list's record: a GET, so the page it read is not served, and nothing changed.
  app.addHook('preSerialization', (req, reply, payload, done) => {
    if (!req.routeOptions.config.routeId || reply.statusCode >= 400) return done(null, payload);
    const given = (req as Scoped)[GIVEN];
    const p = payload as { nextCursor?: unknown } | null;
    if (given === undefined && !(p && typeof p === 'object' && typeof p.nextCursor === 'string')) return done(null, payload);
    const digest = digestOf(req as Scoped);
    if (given !== undefined && given !== digest) return done(invalid('cursor is not valid: it was given by another list (a route, or another record\'s list)', 'cursor'));
    if (p && typeof p === 'object' && typeof p.nextCursor === 'string') return done(null, { ...p, nextCursor: `${PREFIX}${digest}.${p.nextCursor}` });
    done(null, payload);
  });
}
