// Turns declared routes and version changes into Fastify routes for every version, and answers
// which versions serve a path (for EndpointNotInVersion / MethodNotAllowed).
import FindMyWay from 'find-my-way';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Method, RouteDef, RouteMigration, RouteSchema, VersionChange } from './route.ts';
import { VERSION_IDS, cmpVersion } from './versions.ts';
import { MAX_PARAM_LENGTH } from '../errors.ts';

export interface VersionedRoute {
  def: RouteDef;
  version: string;
  schema: RouteSchema;
  /** Changes newer than the version, oldest first. */
  migrations: RouteMigration[];
}

const NO_QUERY = Type.Object({}, { additionalProperties: false });
/**
 * The body of a POST, PUT, PATCH or DELETE that takes none: absent, null or `{}`. Any field is unknown (400, SPEC §3):
 * an undo sent `{"dryRun":true}` undid the merge, a DELETE with a body deleted (the body was never read).
 */
const NO_BODY = { type: ['object', 'null'], additionalProperties: false };
const takesNoBody = (schema: { body?: unknown }, def: { method: string; rawBody?: boolean }) => !schema.body && def.method !== 'GET' && !def.rawBody;

export function servesVersion(def: RouteDef, v: string): boolean {
  return cmpVersion(def.since, v) <= 0 && (def.until === undefined || cmpVersion(v, def.until) <= 0);
}

export class Registry {
  readonly byVersion = new Map<string, VersionedRoute[]>();
  private router = FindMyWay({ ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH });
  private versionsOf = new Map<string, Set<string>>(); // "METHOD path" → versions
  /** The paths without a parameter (`/crm/customers/bulk`): in a version that lacks one, a `{id}` route would take it. */
  readonly staticPaths = new Set<string>();

  constructor(readonly routes: RouteDef[], readonly changes: VersionChange[]) {
    const ids = new Set<string>();
    for (const r of routes) {
      if (ids.has(r.id)) throw new Error(`duplicate route id ${r.id}`);
      ids.add(r.id);
    }
    for (const c of changes) {
      for (const id of Object.keys(c.routes)) if (!ids.has(id)) throw new Error(`change ${c.version} names unknown route ${id}`);
    }
    const sortedChanges = [...changes].sort((a, b) => cmpVersion(a.version, b.version));
    for (const v of VERSION_IDS) {
      const list: VersionedRoute[] = [];
      for (const def of routes) {
        if (!servesVersion(def, v)) continue;
        const newer = sortedChanges.filter((c) => cmpVersion(c.version, v) > 0 && c.routes[def.id]);
        const migrations = newer.map((c) => c.routes[def.id]);
        // The schema a version sees: the oldest newer change that overrides a part wins for that part.
        const schema: RouteSchema = { ...def.schema };
        for (const m of [...migrations].reverse()) Object.assign(schema, m.schema ?? {});
        list.push({ def, version: v, schema, migrations });
        const key = `${def.method} ${def.path}`;
        let set = this.versionsOf.get(key);
        if (!set) {
          set = new Set();
          this.versionsOf.set(key, set);
          this.router.on(def.method, def.path, () => {}, { key });
          if (!def.path.includes(':')) this.staticPaths.add(def.path);
        }
        set.add(v);
      }
      this.byVersion.set(v, list);
    }
  }

  /** Registers /api/{version}{path} for every version a route serves. */
  register(app: FastifyInstance, preHandlers: { auth: (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void }) {
    for (const [v, list] of this.byVersion) {
      for (const vr of list) {
        const { def, migrations } = vr;
        const ups = migrations.filter((m) => m.upgradeRequest);
        const downs = [...migrations].reverse().filter((m) => m.downgradeResponse);
        const noBody = takesNoBody(vr.schema, def);
        app.route({
          method: def.method,
          url: `/api/${v}${def.path}`,
          schema: {
            ...Object.fromEntries((['params', 'body'] as const).filter((k) => vr.schema[k]).map((k) => [k, vr.schema[k]])),
            ...(noBody ? { body: NO_BODY } : {}),
            // Unknown query parameters are a 400, also on routes without a query schema or with an open one.
            querystring: vr.schema.querystring ? { ...vr.schema.querystring, additionalProperties: vr.schema.querystring.additionalProperties ?? false } : NO_QUERY,
          },
          ...(vr.schema.bodyLimitScale ? { bodyLimit: app.initialConfig.bodyLimit! * vr.schema.bodyLimitScale } : {}),
          config: { routeId: def.id, scope: def.scope, apiVersion: v, rawBody: def.rawBody === true, checksItems: def.checksItems === true, noBody },
          onRequest: preHandlers.auth,
          // A route no change touches in this version runs its handler as it is (one promise less per request).
          handler: ups.length === 0 && downs.length === 0 ? def.handler : async (req, reply) => {
            for (const m of ups) m.upgradeRequest!(req);
            let body = await def.handler(req, reply);
            for (const m of downs) body = m.downgradeResponse!(body, req, reply);
            return body;
          },
        });
      }
    }
  }

  /** Versions serving METHOD path (path after /api/{version}); and the methods allowed on it in one version. */
  lookup(method: string, path: string, version: string): { versionsForMethod: string[]; methodsInVersion: string[] } {
    const versionsForMethod: string[] = [];
    const methodsInVersion: string[] = [];
    for (const m of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as Method[]) {
      const found = this.router.find(m, path) as any;
      if (!found) continue;
      const set = this.versionsOf.get(found.store.key) ?? new Set<string>();
      if (m === method || (method === 'HEAD' && m === 'GET')) versionsForMethod.push(...set);
      if (set.has(version)) methodsInVersion.push(m);
    }
    return { versionsForMethod: versionsForMethod.sort(cmpVersion), methodsInVersion };
  }
}
