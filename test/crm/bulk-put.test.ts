// Tulip's bulk update, PUT /crm/customers/bulk (https://docs.tulip.com/integrating/aerial/singlevsbulkendpoints:
// "Updating multiple entities (PUT) … by externalId. If the externalId … does not exist …, then a new entity will
// be created"): the same set-based upsert as POST, item for item, with the same per-version item semantics.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('PUT /crm/customers/bulk', (ctx) => {
  const v = (version: string) => ctx.srv.api.withVersion(version);

  it('creates unknown externalIds and updates known ones, one result per item (was a 405)', async () => {
    assert.equal((await v('2025-08').post('/crm/customers/bulk', [{ externalId: 'bp-1', firstName: 'Ann', lastName: 'Old' }])).status, 200);
    const r = await v('2025-08').put('/crm/customers/bulk', [{ externalId: 'bp-1', firstName: 'Anna' }, { externalId: 'bp-2', firstName: 'Ben' }, { firstName: 'no id' }]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.results.map((x: any) => [x.index, x.status]), [[0, 200], [1, 201], [2, 400]]);
    assert.equal(r.body.results[2].errors[0].errorCode, 'invalidResourceMissingRequiredFields');
    // Until 2026-11 an item replaces the record (as POST does there): lastName, omitted, is emptied.
    const one = (await v('2025-08').get('/crm/customers/bp-1')).body;
    assert.deepEqual([one.firstName, one.lastName], ['Anna', null]);
    // From 2026-11 an item is a patch, on PUT as on POST.
    await v('2026-11').put('/crm/customers/bulk', [{ externalId: 'bp-2', lastName: 'Bo' }]);
    const two = (await v('2026-11').get('/crm/customers/bp-2')).body;
    assert.deepEqual([two.firstName, two.lastName], ['Ben', 'Bo']);
  });
});
