// Runs a describe block once per database backend, each with its own fresh database and server.
import { after, before, describe } from 'node:test';
import { backends, freshDb, type Backend, type TestDb } from './db.ts';
import { startServer, type TestServer } from './server.ts';

export interface Ctx {
  backend: Backend;
  tdb: TestDb;
  srv: TestServer;
}

/**
 * describeEachDb('customers', (ctx) => { it(...) }) — ctx is filled in before the tests of each backend run.
 * Pass env to configure the server (e.g. retry schedule).
 */
export async function describeEachDb(name: string, body: (ctx: Ctx) => void, env: Record<string, string> = {}) {
  for (const backend of await backends()) {
    describe(`${name} [${backend}]`, () => {
      const ctx = { backend } as Ctx;
      before(async () => {
        ctx.tdb = await freshDb(backend);
        ctx.srv = await startServer(ctx.tdb.db, env);
      });
      after(async () => {
        await ctx.srv?.close();
        await ctx.tdb?.close();
      });
      body(ctx);
    });
  }
}
