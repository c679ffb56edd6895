// GET /crm/duplicates reads the pairs, then their customers, in two statements: a customer merged away or deactivated
// in between was listed disabled, with mergedInto null, though the list is over active customers only (a probe,
// 2026-11-29, by racing merges and undos against reads). Here the act is made to land exactly between the two reads.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { startServer } from '../helpers/server.ts';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';
import type { Db } from '../../src/db/db.ts';

await describeEachDb('possible duplicates listed while a customer stops being active', (ctx) => {
  it('a pair whose customer is deactivated between the reads is left out, never shown with a disabled customer', async () => {
    const api = ctx.srv.api.withVersion('2026-11');
    const person = { firstName: 'Jonathan', lastName: 'Whitfield', addresses: [{ address1: '1 Elm St', city: 'Springfield', postCode: '62704', countryCode: 'US' }] };
    for (const externalId of ['race-a', 'race-b']) assert.equal((await api.post('/crm/customers', { externalId, ...person })).status, 201);
    await refreshDuplicates(ctx.tdb.db, 'US');
    assert.equal((await api.get('/crm/duplicates')).body.data.length, 1, 'the pair is listed');

    // The same database, with a hook: right after the statement reading the pairs, race-b is deactivated.
    let between: (() => Promise<void>) | undefined;
    const db = new Proxy(ctx.tdb.db, {
      get(target, prop) {
        if (prop === 'query') {
          return async (sql: string, params?: unknown[], name?: string) => {
            const r = await target.query(sql, params, name);
            if (between && /FROM duplicate_pairs p/.test(sql)) {
              const act = between;
              between = undefined;
              await act();
            }
            return r;
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Db;
    const srv = await startServer(db);
    try {
      between = async () => void (await ctx.tdb.db.query(`UPDATE customers SET status = 'disabled' WHERE external_id = 'race-b'`));
      const r = await srv.api.withVersion('2026-11').get('/crm/duplicates');
      assert.equal(r.status, 200, r.text);
      assert.equal(between, undefined, 'the deactivation landed between the reads');
      const shown = r.body.data.flatMap((p: any) => p.customers.map((c: any) => [c.externalId, c.status]));
      assert.deepEqual(shown, [], 'no pair names a customer that is no longer active');
    } finally {
      await srv.close();
    }
  });
});
