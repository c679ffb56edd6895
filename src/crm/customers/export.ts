// GET /crm/customers/export (SPEC §12, read scope, from 2026-11): every matching customer as NDJSON
// (the Customer shape, one per line) from one consistent snapshot: a REPEATABLE READ, READ ONLY
// transaction with a server-side cursor (DECLARE … FETCH in batches, on PostgreSQL and PGlite alike).
// PostgreSQL builds each line's JSON itself; Node only joins lines and honours back-pressure, so memory
// stays constant whatever the size. Gzip when the client accepts it. A client that goes away (or stops
// reading for EXPORT_STALL_MS) ends the transaction and gives its connection back.
import { Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { Type, type Static } from '@sinclair/typebox';
import '../../http/formats.ts';
import type { Db } from '../../db/db.ts';
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { StringEnum } from '../../http/schema.ts';
import { Customer } from './schema.ts';

export const ExportQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(['active', 'disabled', 'all'], { default: 'active', description: 'which customers (default active)' })),
    updatedSince: Type.Optional(Type.String({ format: 'date-time', description: 'customers updated at or after this time' })),
  },
  { additionalProperties: false },
);
export type ExportQueryT = Static<typeof ExportQuery>;

const BATCH = 2000;
const EXPORT_STALL_MS = 60_000;
const TS = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The export's query: one JSON text per customer, keys in the order of GET /crm/customers/{id}. */
export function exportSql(q: ExportQueryT): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if ((q.status ?? 'active') !== 'all') {
    params.push(q.status ?? 'active');
    where.push(`c.status = $${params.length}`);
  }
  if (q.updatedSince !== undefined) {
    params.push(q.updatedSince);
    where.push(`c.updated_at >= $${params.length}::timestamptz`);
  }
  const sql = `SELECT json_build_object(
      'uuid', c.uuid, 'externalId', c.external_id, 'status', c.status, 'firstName', c.first_name, 'lastName', c.last_name,
      'emails', c.emails, 'phones', c.phones, 'addresses', c.addresses, 'socialProfiles', c.social_profiles,
      'loyaltyTier', c.loyalty_tier,
      'mergedInto', CASE WHEN m.id IS NULL THEN NULL ELSE json_build_object('uuid', m.uuid, 'externalId', m.external_id) END,
      'createdAt', ${TS('c.created_at')}, 'updatedAt', ${TS('c.updated_at')})::text AS j
    FROM customers c LEFT JOIN customers m ON m.id = c.merged_into
    ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
    ORDER BY c.id`;
  return { sql, params };
}

let inProgress = 0;
/** Exports whose transaction is open in this process (tests watch it drop to 0 after a disconnect). */
export const exportsInProgress = () => inProgress;

class Aborted extends Error {}

/**
 * Opens the snapshot and the cursor, then resolves with a stream of NDJSON text that fetches the next
 * batch only when the reader wants more. Errors before the first line reject (the caller answers an
 * error status); later ones destroy the stream (the client sees a truncated response).
 */
export async function openExport(db: Db, q: ExportQueryT, opts: { stallMs?: number } = {}): Promise<Readable> {
  const stallMs = opts.stallMs ?? EXPORT_STALL_MS;
  let wake: (() => void) | undefined;
  let abort: ((e: Error) => void) | undefined;
  let ended: Error | undefined;
  const out = new Readable({
    highWaterMark: 256 * 1024,
    read() {
      const w = wake;
      wake = undefined;
      w?.();
    },
    destroy(err, cb) {
      ended ??= err ?? new Aborted('the client went away');
      abort?.(ended);
      cb(err);
    },
  });
  /** Resolves when the reader wants more; rejects if the stream is destroyed or the reader stalls. */
  const wanted = () =>
    new Promise<void>((resolve, reject) => {
      if (ended) return reject(ended);
      const timer = setTimeout(() => out.destroy(new Aborted(`the client read nothing for ${stallMs} ms`)), stallMs);
      wake = () => {
        clearTimeout(timer);
        abort = undefined;
        resolve();
      };
      abort = (e) => {
        clearTimeout(timer);
        wake = undefined;
        reject(e);
      };
    });

  const { sql, params } = exportSql(q);
  let opened!: () => void;
  const ready = new Promise<void>((r) => (opened = r));
  inProgress++;
  const run = db
    .transaction(async (tx) => {
      await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      await tx.query(`DECLARE bulb_export NO SCROLL CURSOR FOR ${sql}`, params);
      opened();
      for (;;) {
        const r = await tx.query<{ j: string }>(`FETCH ${BATCH} FROM bulb_export`);
        if (ended) throw ended;
        if (r.rows.length === 0) break;
        let chunk = '';
        for (const row of r.rows) chunk += row.j + '\n';
        if (!out.push(chunk)) await wanted();
      }
      await tx.query('CLOSE bulb_export');
    })
    .finally(() => inProgress--);
  run.then(
    () => out.push(null),
    (err) => {
      if (!(err instanceof Aborted)) out.destroy(err);
    },
  );
  await Promise.race([ready, run]);
  return out;
}

/** True when Accept-Encoding allows gzip (q > 0), explicitly or through `*`. */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const raw = Array.isArray(header) ? header.join(',') : header ?? '';
  let gzip: number | undefined;
  let star: number | undefined;
  for (const part of raw.split(',')) {
    const [name, ...ps] = part.trim().toLowerCase().split(';');
    const qp = ps.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const qv = qp ? Number(qp.slice(2)) : 1;
    const val = Number.isFinite(qv) ? qv : 0;
    if (name === 'gzip' || name === 'x-gzip') gzip = val;
    else if (name === '*') star = val;
  }
  return (gzip ?? star ?? 0) > 0;
}

export function exportRoutes(s: Services): RouteDef[] {
  return [
    {
      id: 'customers.export', method: 'GET', path: '/crm/customers/export', scope: 'read', since: '2026-11', tag: 'Customers',
      summary: 'Export every matching customer as NDJSON (application/x-ndjson, one Customer per line) from one consistent snapshot; gzip when accepted',
      schema: { querystring: ExportQuery, response: { 200: Type.Array(Customer, { description: 'NDJSON: one Customer per line' }) } },
      handler: async (req, reply) => {
        const stream = await openExport(s.db, req.query as ExportQueryT);
        reply.header('content-type', 'application/x-ndjson; charset=utf-8').header('vary', 'Accept-Encoding').header('cache-control', 'no-store');
        if (!acceptsGzip(req.headers['accept-encoding'])) return stream;
        reply.header('content-encoding', 'gzip');
        // Level 1: several times smaller than the JSON already, at a speed that keeps up with the database.
        // pipeline: a client going away (Fastify destroys gz) destroys the export stream too, and back.
        return pipeline(stream, zlib.createGzip({ level: 1 }), () => {});
      },
    },
  ];
}
