// Runs a describe block once per database backend, each with its own fresh database and server.
import { after, before, describe } from 'node:test';
import { backends, freshDb, postgresAvailable, type Backend, type TestDb } from './db.ts';
import { startServer, type TestServer } from './server.ts';

export interface Ctx {
  backend: Backend;
  tdb: TestDb;
  srv: TestServer;
}

/**
 * describeEachDb('customers', (ctx) => { it(...) }) — ctx is filled in before the tests of each backend run.
 * Pass env to configure the server (e.g. retry schedule), or a function of the fresh database giving it.
 */
export async function describeEachDb(name: string, body: (ctx: Ctx) => void, env: Record<string, string> | ((tdb: TestDb) => Record<string, string>) = {}) {
  for (const backend of await backends()) {
    describe(`${name} [${backend}]`, () => {
      const ctx = { backend } as Ctx;
      before(async () => {
        ctx.tdb = await freshDb(backend);
        ctx.srv = await startServer(ctx.tdb.db, typeof env === 'function' ? env(ctx.tdb) : env);
      });
      after(async () => {
        await ctx.srv?.close();
        await ctx.tdb?.close();
      });
      body(ctx);
    });
  }
}

/**
 * describePg('merges under concurrency', (ctx) => { it(...) }) — PostgreSQL only (several transactions at once,
 * which PGlite's single session cannot run): skipped, with the reason printed, when no server is reachable
 * (with CI=true an unreachable server fails instead).
 */
export async function describePg(name: string, body: (ctx: Ctx) => void, opts: { poolSize?: number; env?: Record<string, string> } = {}) {
  const up = await postgresAvailable();
  describe(`${name} [pg]`, { skip: up ? false : 'no PostgreSQL server' }, () => {
    const ctx = { backend: 'pg' } as Ctx;
    before(async () => {
      ctx.tdb = await freshDb('pg', opts.poolSize);
      ctx.srv = await startServer(ctx.tdb.db, opts.env ?? {});
    });
    after(async () => {
      await ctx.srv?.close();
      await ctx.tdb?.close();
    });
    body(ctx);
  });
}
