// GET /crm/customers/export (SPEC §12, read scope, from 2026-11): every matching customer as NDJSON
// (the Customer shape, one per line) from one consistent snapshot (streams in export-stream.ts). The
// database builds each line's JSON itself (this file's query); Node only passes bytes on, honouring
// back-pressure, so memory stays constant whatever the size. Gzip when the client accepts it.
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { Type, type Static } from '@sinclair/typebox';
import '../../http/formats.ts';
import pg from 'pg';
import type { Db } from '../../db/db.ts';
import { PgDb } from '../../db/pg.ts';
import { MAX_EMBEDDED_EXPORTS, MAX_EXPORTS, openCopyExport, openCursorExport, takeExportSlot } from './export-stream.ts';
import type { Services } from '../../services.ts';
import type { RouteDef } from '../../http/versioning/route.ts';
import { StringEnum } from '../../http/schema.ts';
import { customerJsonSql } from './wire.ts';
import { writeHorizon } from '../../db/write-horizon.ts';
import { iso } from '../../http/time.ts';

export const ExportQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(['active', 'disabled', 'all'], { default: 'active', description: 'which customers (default active)' })),
    updatedSince: Type.Optional(Type.String({ format: 'date-time', description: 'customers updated at or after this time' })),
  },
  { additionalProperties: false },
);
export type ExportQueryT = Static<typeof ExportQuery>;

/**
 * The export's query: one JSON text per customer, keys in the order of GET /crm/customers/{id}. With updatedSince
 * (an incremental export, resumed from the latest updatedAt it served) only customers written before `horizon`
 * (src/db/write-horizon.ts): one a transaction running at the export's start writes commits later with an earlier
 * updatedAt than those served, and the next export's updatedSince passed it (thousands lost beside an import).
 */
export function exportSql(q: ExportQueryT, horizon: string | null = null): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if ((q.status ?? 'active') !== 'all') {
    params.push(q.status ?? 'active');
    where.push(`c.status = $${params.length}`);
  }
  if (q.updatedSince !== undefined) {
    params.push(q.updatedSince);
    where.push(`c.updated_at >= $${params.length}::timestamptz`);
    if (horizon !== null) {
      params.push(horizon);
      where.push(`c.updated_at < $${params.length}::timestamptz`);
    }
  }
  const sql = `SELECT ${customerJsonSql('c', 'm')}::text AS j
    FROM customers c LEFT JOIN customers m ON m.id = c.merged_into
    ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
    ORDER BY c.id`;
  return { sql, params };
}

/**
 * Opens the export and resolves once its snapshot is taken (at the first line, or at the end of an empty
 * export): PostgreSQL streams it with COPY on a connection of its own, PGlite through a cursor. Errors
 * before that reject (the caller answers an error status); later ones cut the response off.
 */
export async function openExport(db: Db, q: ExportQueryT): Promise<{ stream: Readable; resumeSince: string }> {
  const release = takeExportSlot(db instanceof PgDb ? MAX_EXPORTS : MAX_EMBEDDED_EXPORTS);
  try {
    // Before the export's snapshot (its statement must see every writer that committed after this one).
    const horizon = await writeHorizon(db, 'customers');
    const resumeSince = iso(horizon ?? (await db.query<{ at: string }>('SELECT clock_timestamp()::text AS at')).rows[0].at)!;
    const { sql, params } = exportSql(q, horizon);
    const stream = db instanceof PgDb
      ? await openCopyExport(db.sessionUrl, sql.replace(/\$(\d+)/g, (_, i) => pg.escapeLiteral(String(params[Number(i) - 1]))), release)
      : await openCursorExport(db, sql, params, release);
    return { stream, resumeSince };
  } catch (err) {
    release();
    throw err;
  }
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
      schema: { querystring: ExportQuery, response: { 200: Type.String({ description: 'NDJSON: one Customer (the Customer schema) per line', contentMediaType: 'application/x-ndjson' }) } },
      handler: async (req, reply) => {
        const { stream, resumeSince } = await openExport(s.db, req.query as ExportQueryT);
        reply.header('content-type', 'application/x-ndjson; charset=utf-8').header('vary', 'Accept-Encoding').header('cache-control', 'no-store');
        // Where the next export resumes (updatedSince) to miss nothing: every customer written before it is in this one.
        reply.header('x-bulb-resume-since', resumeSince);
        if (req.method === 'HEAD') {
          stream.destroy(); // Fastify would read a HEAD's stream to the end: a whole export for nothing
          return '';
        }
        if (!acceptsGzip(req.headers['accept-encoding'])) return stream;
        reply.header('content-encoding', 'gzip');
        // Level 1: several times smaller than the JSON already, at a speed that keeps up with the database.
        // pipeline: a client going away (Fastify destroys gz) destroys the export stream too, and back.
        return pipeline(stream, zlib.createGzip({ level: 1 }), () => {});
      },
    },
  ];
}
