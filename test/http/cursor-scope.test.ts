// A cursor is bound to the list it came from (src/http/cursor-scope.ts): reused on another route, or on the same route
// for another record, it is a 400 naming the cursor. Until 2026-11-29 it was accepted and answered a plausible, wrong
// page (a probe: another customer's notes cursor read as "this customer has none"; a deliveries cursor walked the
// customers from the middle). Cursors given before (unwrapped) are still read; a walk may change versions.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('cursors bound to their list', (ctx) => {
  it('another route\'s or another record\'s cursor is refused; its own list, in any version, walks on', async () => {
    const api = ctx.srv.api.withVersion('2026-11');
    for (const id of ['cs-a', 'cs-b']) {
      assert.equal((await api.post('/crm/customers', { externalId: id })).status, 201);
      for (let i = 0; i < 3; i++) assert.equal((await api.post(`/crm/customers/${id}/notes`, { type: 'CUSTOMER_NOTE', comments: `${id} ${i}` })).status, 201);
    }
    const first = await api.get('/crm/customers/cs-a/notes?limit=1');
    const cursor = first.body.nextCursor as string;
    assert.match(cursor, /^b1\./);
    const refused = async (path: string) => {
      const r = await api.get(path);
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.deepEqual(r.body.errors.map((e: any) => [e.errorCode, e.moreInfo]), [['InvalidParameterError', 'cursor']]);
      assert.match(r.body.errors[0].message, /another list/);
    };
    await refused(`/crm/customers/cs-b/notes?limit=50&cursor=${cursor}`);
    await refused(`/crm/customers?limit=50&cursor=${cursor}`);
    const customersCursor = (await api.get('/crm/customers?limit=1')).body.nextCursor;
    await refused(`/crm/customers/cs-a/notes?limit=50&cursor=${customersCursor}`);

    // Its own list walks on, in this version and in another.
    const rest = await api.get(`/crm/customers/cs-a/notes?limit=50&cursor=${cursor}`);
    assert.equal(rest.status, 200, rest.text);
    assert.deepEqual(rest.body.data.map((n: any) => n.comments), ['cs-a 1', 'cs-a 2']);
    const old = await ctx.srv.api.withVersion('2025-04').get(`/crm/customers/cs-a/notes?limit=1&cursor=${cursor}`);
    assert.equal(old.status, 200, old.text);
    assert.deepEqual(old.body.data.map((n: any) => n.comments), ['cs-a 1']);
    // The same customer named another way (its uuid, in capitals) walks the same list (a probe: it was refused).
    const uuid = (await api.get('/crm/customers/cs-a')).body.uuid as string;
    assert.deepEqual((await api.get(`/crm/customers/${uuid.toUpperCase()}/notes?limit=50&cursor=${cursor}`)).body.data.map((n: any) => n.comments), ['cs-a 1', 'cs-a 2']);
    // A cursor of the form given before 2026-11-29 (not bound) is still read.
    const unbound = cursor.split('.').at(-1)!;
    assert.deepEqual((await api.get(`/crm/customers/cs-a/notes?limit=50&cursor=${unbound}`)).body.data.map((n: any) => n.comments), ['cs-a 1', 'cs-a 2']);
  });
});
