// A full disk (SQLSTATE 53100: PostgreSQL, or the embedded database's own folder) refuses every write while reads go
// on: writes are 503 with Retry-After, as any unavailable database, and /ready says 503 while writes keep failing for
// it. They were 500 InternalError with a stack logged each (~170 lines a second) and /ready 200 (found by a probe on
// a tmpfs data folder, 2026-11-29). The disk is filled here by a trigger raising the server's own error.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';

await describeEachDb('a full disk', (ctx) => {
  it('a write is 503 ServiceUnavailable with Retry-After naming the disk; reads go on; /ready is 503; freed, writes go on', async () => {
    const api = ctx.srv.api.withVersion('2026-11');
    assert.equal((await api.post('/crm/customers', { externalId: 'df-before' })).status, 201);
    await ctx.tdb.db.query(`CREATE FUNCTION df_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file "base/5/16384": No space left on device' USING ERRCODE = '53100'; END $$`);
    await ctx.tdb.db.query(`CREATE TRIGGER df_full BEFORE INSERT OR UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION df_full()`);
    try {
      const r = await api.post('/crm/customers', { externalId: 'df-during' });
      assert.equal(r.status, 503, r.text);
      assert.deepEqual(errorCodes(r), ['ServiceUnavailable']);
      assert.match(r.body.errors[0].message, /disk is full/);
      assert.equal(r.headers.get('retry-after'), '5');
      assert.equal((await api.patch('/crm/customers/df-before', { firstName: 'X' })).status, 503);
      assert.equal((await api.get('/crm/customers/df-before')).status, 200, 'reads go on');
      const ready = await fetch(`${ctx.srv.url}/ready`);
      assert.equal(ready.status, 503);
      assert.match(JSON.stringify(await ready.json()), /disk is full/);
    } finally {
      await ctx.tdb.db.query('DROP TRIGGER df_full ON customers');
    }
    assert.equal((await api.post('/crm/customers', { externalId: 'df-after' })).status, 201, 'written again at once');
  });
});
