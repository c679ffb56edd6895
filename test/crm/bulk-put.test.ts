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

// https://docs.tulip.com/integrating/aerial/singlevsbulkendpoints: "Creating multiple entities (POST) … If the externalId
// of the entity you pass into the request already exists in your Tulip instance, then an error will be thrown".
await describeEachDb("POST /crm/customers/bulk in Tulip's 2025-08 and 2025-12: creates only", (ctx) => {
  const v = (version: string) => ctx.srv.api.withVersion(version);
  const get = async (xid: string) => (await v('2026-11').get(`/crm/customers/${xid}`)).body;

  for (const version of ['2025-08', '2025-12']) {
    it(`${version}: an existing externalId is that item's 409 and the customer is unchanged; the others are created`, async () => {
      const xid = `bco-${version}`;
      assert.equal((await v('2026-11').post('/crm/customers', { externalId: xid, firstName: 'Kept', lastName: 'Whole', emails: [{ email: `${xid}@example.com` }] })).status, 201);
      const before = await get(xid);
      const events = async () => (await v('2026-11').get(`/events?resourceUuid=${before.uuid}&limit=100`)).body.data?.length;
      const eventsBefore = await events();
      const r = await v(version).post('/crm/customers/bulk', [{ externalId: `${xid}-new`, firstName: 'New' }, { externalId: xid, firstName: 'Replaced' }]);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.results.map((x: any) => [x.index, x.status]), [[0, 201], [1, 409]]);
      assert.equal(r.body.results[1].errors[0].errorCode, 'Conflict');
      assert.equal(r.body.results[1].errors[0].moreInfo, 'externalId');
      assert.match(r.body.results[1].errors[0].message, new RegExp(`"${xid}" already exists`));
      assert.equal(r.body.results[1].customer, undefined);
      assert.deepEqual(await get(xid), before, 'the existing customer is not replaced (2025-04 semantics would empty lastName and emails)');
      assert.equal(await events(), eventsBefore, 'no customerUpdate for a refused item');
      assert.equal((await get(`${xid}-new`)).firstName, 'New');
    });
  }

  it('2025-08: every item existing (the all-new path declines) and a repeat within the request are 409s; PUT still upserts', async () => {
    await v('2025-08').post('/crm/customers/bulk', [{ externalId: 'bco-a', firstName: 'A' }, { externalId: 'bco-b', firstName: 'B' }]);
    const again = await v('2025-08').post('/crm/customers/bulk', [{ externalId: 'bco-a', firstName: 'A2' }, { externalId: 'bco-b', firstName: 'B2' }]);
    assert.deepEqual(again.body.results.map((x: any) => x.status), [409, 409]);
    const rep = await v('2025-08').post('/crm/customers/bulk', [{ externalId: 'bco-c', firstName: 'C' }, { externalId: 'bco-c', lastName: 'Again' }, { externalId: 'bco-d' }]);
    assert.deepEqual(rep.body.results.map((x: any) => [x.index, x.status]), [[0, 201], [1, 409], [2, 201]]);
    const c = await get('bco-c');
    assert.deepEqual([c.firstName, c.lastName], ['C', null], 'the repeat changed nothing');
    assert.deepEqual([(await get('bco-a')).firstName, (await get('bco-b')).firstName], ['A', 'B']);
    const put = await v('2025-08').put('/crm/customers/bulk', [{ externalId: 'bco-a', firstName: 'A3' }]);
    assert.equal(put.body.results[0].status, 200);
    assert.equal((await get('bco-a')).firstName, 'A3');
  });

  it("Bulb's own versions keep upserting with POST (SPEC §5): 2025-04 replaces, 2026-11 patches", async () => {
    await v('2025-04').post('/crm/customers/bulk', [{ externalId: 'bco-up', firstName: 'One', lastName: 'L' }]);
    const r4 = await v('2025-04').post('/crm/customers/bulk', [{ externalId: 'bco-up', firstName: 'Two' }]);
    assert.equal(r4.body.results[0].status, 200);
    assert.deepEqual([(await get('bco-up')).firstName, (await get('bco-up')).lastName], ['Two', null]);
    const r11 = await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'bco-up', lastName: 'Back' }]);
    assert.equal(r11.body.results[0].status, 200);
    assert.deepEqual([(await get('bco-up')).firstName, (await get('bco-up')).lastName], ['Two', 'Back']);
  });
});

// https://docs.tulip.com/integrating/aerial/asyncbulk: "async bulk endpoints only support ingestion of 1000 records
// (business data objects) per API call". Bulb's own versions take 1–100 (SPEC §5).
await describeEachDb('bulk item limit: 1,000 in Tulip\'s 2025-08 and 2025-12, 100 in Bulb\'s versions', (ctx) => {
  const v = (version: string) => ctx.srv.api.withVersion(version);
  // ~1.4 kB an item: 1,000 of them pass the server's 1 MiB body limit.
  const street = (i: number, k: number) => `${i}-${k} ${'Rue de la République '.repeat(4)}`.slice(0, 64);
  const items = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({
    externalId: `${prefix}-${i}`, firstName: 'Bulk', lastName: 'Item',
    addresses: Array.from({ length: 8 }, (_, k) => ({ address1: street(i, k), address2: street(k, i), city: 'Lyon', countryCode: 'FR' })),
  }));
  const count = async (prefix: string) => {
    let n = 0;
    for (let cursor: string | undefined; ;) {
      const page = (await v('2026-11').get(`/crm/customers?q=${prefix}&limit=100${cursor ? `&cursor=${cursor}` : ''}`)).body;
      n += page.data.length;
      cursor = page.nextCursor ?? undefined;
      if (!cursor) return n;
    }
  };

  for (const version of ['2025-08', '2025-12']) {
    it(`${version}: POST and PUT take 1,000 items in a body over 1 MiB; 1,001 is a 400 that writes nothing`, async () => {
      const post = items(`bl-${version}-p`, 1000);
      const body = JSON.stringify(post);
      assert.ok(body.length > 1024 * 1024, `the body is ${body.length} bytes`);
      const r = await v(version).post('/crm/customers/bulk', body);
      assert.equal(r.status, 200, r.text.slice(0, 500));
      assert.equal(r.body.results.length, 1000);
      assert.ok(r.body.results.every((x: any, i: number) => x.index === i && x.status === 201));
      const put = await v(version).put('/crm/customers/bulk', items(`bl-${version}-u`, 1000));
      assert.equal(put.status, 200, put.text.slice(0, 500));
      assert.ok(put.body.results.every((x: any) => x.status === 201));
      const again = await v(version).put('/crm/customers/bulk', items(`bl-${version}-u`, 1000).map((x) => ({ ...x, lastName: 'Updated' })));
      assert.ok(again.body.results.every((x: any) => x.status === 200 && x.customer.lastName === 'Updated'), again.text.slice(0, 500));
      assert.equal(await count(`bl-${version}-p`), 1000);
      const over = await v(version).post('/crm/customers/bulk', items(`bl-${version}-o`, 1001));
      assert.equal(over.status, 400, over.text.slice(0, 500));
      assert.equal(over.body.errors[0].errorCode, 'InvalidParameterError');
      assert.match(over.body.errors[0].message, /1000/);
      assert.equal(await count(`bl-${version}-o`), 0);
      // A body over the route's 10 MiB: the 413 names that limit (it said 1 MiB, the other routes').
      const huge = await v(version).post('/crm/customers/bulk', JSON.stringify([{ externalId: `bl-${version}-h`, firstName: 'x'.repeat(10 * 1024 * 1024) }]));
      assert.equal(huge.status, 413, huge.text.slice(0, 500));
      assert.deepEqual(huge.body.errors[0], { message: 'request body exceeds 10 MiB', errorCode: 'PayloadTooLarge', moreInfo: "send a smaller body (the message gives this route's limit), or split the request" });
    });
  }

  for (const version of ['2025-04', '2026-11']) {
    it(`${version}: 101 items are a 400, and a body over 1 MiB a 413; nothing is written`, async () => {
      const over = await v(version).post('/crm/customers/bulk', items(`bl-${version}-o`, 101));
      assert.equal(over.status, 400, over.text.slice(0, 500));
      assert.match(over.body.errors[0].message, /100/);
      const big = await v(version).put('/crm/customers/bulk', items(`bl-${version}-b`, 1000));
      assert.equal(big.status, 413, big.text.slice(0, 500));
      assert.deepEqual([big.body.errors[0].errorCode, big.body.errors[0].message], ['PayloadTooLarge', 'request body exceeds 1 MiB']);
      assert.equal(await count(`bl-${version}-`), 0);
      assert.equal((await v(version).post('/crm/customers/bulk', items(`bl-${version}-k`, 100))).status, 200);
    });
  }
});
