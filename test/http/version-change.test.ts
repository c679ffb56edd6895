// The version-change mechanism itself: a registry built here with a fake route and one VersionChange,
// mounted on a bare Fastify app. Old versions send and receive the old shape; the handler sees only the newest.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { Type } from '@sinclair/typebox';
import { Registry } from '../../src/http/versioning/registry.ts';
import type { RouteDef, VersionChange } from '../../src/http/versioning/route.ts';
import { errorHandler } from '../../src/http/errors.ts';

describe('version changes', () => {
  const seen: unknown[] = [];
  // Newest shape (2025-04): {fullName}. Before 2025-04 the field was called {name}.
  const route: RouteDef = {
    id: 'people.create', method: 'POST', path: '/people', scope: 'write', since: '2022-04', summary: 'create', tag: 'test',
    schema: { body: Type.Object({ fullName: Type.String() }, { additionalProperties: false }) },
    handler: async (req, reply) => {
      seen.push(req.body);
      reply.code(201);
      return { id: 1, fullName: (req.body as any).fullName };
    },
  };
  const added: RouteDef = {
    id: 'people.list', method: 'GET', path: '/people', scope: 'read', since: '2022-08', summary: 'list', tag: 'test', schema: {},
    handler: async () => ({ data: [] }),
  };
  const rename: VersionChange = {
    version: '2025-04',
    description: 'Person.name is renamed fullName',
    routes: {
      'people.create': {
        schema: { body: Type.Object({ name: Type.String() }, { additionalProperties: false }) },
        upgradeRequest: (req) => {
          const b = req.body as { name: string };
          req.body = { fullName: b.name };
        },
        downgradeResponse: (body) => {
          const { fullName, ...rest } = body as { fullName: string };
          return { ...rest, name: fullName };
        },
      },
    },
  };

  async function app() {
    const registry = new Registry([route, added], [rename]);
    const a = Fastify();
    a.setErrorHandler(errorHandler);
    const calls: string[] = [];
    registry.register(a, { auth: async (req) => void calls.push(req.url) });
    await a.ready();
    return { a, registry, calls };
  }

  it('upgrades old requests and downgrades responses; the newest version passes through', async () => {
    const { a, calls } = await app();
    seen.length = 0;
    const old = await a.inject({ method: 'POST', url: '/api/2022-08/people', payload: { name: 'Ada' } });
    assert.equal(old.statusCode, 201);
    assert.deepEqual(old.json(), { id: 1, name: 'Ada' });
    const oldest = await a.inject({ method: 'POST', url: '/api/2022-04/people', payload: { name: 'Bo' } });
    assert.deepEqual(oldest.json(), { id: 1, name: 'Bo' });
    const cur = await a.inject({ method: 'POST', url: '/api/2025-04/people', payload: { fullName: 'Cy' } });
    assert.deepEqual(cur.json(), { id: 1, fullName: 'Cy' });
    assert.deepEqual(seen, [{ fullName: 'Ada' }, { fullName: 'Bo' }, { fullName: 'Cy' }], 'the handler only ever sees the newest shape');
    assert.equal(calls.length, 3, 'the auth pre-handler runs for every versioned route');
  });

  it('each version validates its own request shape', async () => {
    const { a } = await app();
    const newInOld = await a.inject({ method: 'POST', url: '/api/2022-08/people', payload: { fullName: 'Ada' } });
    assert.equal(newInOld.statusCode, 400);
    const oldInNew = await a.inject({ method: 'POST', url: '/api/2025-04/people', payload: { name: 'Ada' } });
    assert.equal(oldInNew.statusCode, 400);
    assert.match(oldInNew.json().errors[0].message, /"fullName" is required|unknown field "name"/);
  });

  it('routes exist from their "since" version on; lookup names the versions serving a path', async () => {
    const { a, registry } = await app();
    assert.equal((await a.inject({ method: 'GET', url: '/api/2022-08/people' })).statusCode, 200);
    assert.equal((await a.inject({ method: 'GET', url: '/api/2022-04/people' })).statusCode, 404);
    assert.deepEqual(registry.lookup('GET', '/people', '2022-04'), { versionsForMethod: ['2022-08', '2025-04', '2025-08', '2025-12', '2026-11'], methodsInVersion: ['POST'] });
    assert.deepEqual(registry.byVersion.get('2022-04')!.map((r) => r.def.id), ['people.create']);
    assert.deepEqual(registry.byVersion.get('2022-08')!.map((r) => r.def.id).sort(), ['people.create', 'people.list']);
  });

  it('refuses a change naming an unknown route, and duplicate route ids', () => {
    assert.throws(() => new Registry([route], [{ version: '2025-04', description: 'x', routes: { nope: {} } }]), /unknown route nope/);
    assert.throws(() => new Registry([route, route], []), /duplicate route id/);
  });
});
