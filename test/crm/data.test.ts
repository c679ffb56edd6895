// Data attached to customers: create/list for every kind, pagination, associations (409 on a
// duplicate), associates, customer notes GET/PUT and their events, version gating.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';

await describeEachDb('customer data', (ctx) => {
  const api = () => ctx.srv.api;
  const events = async (type: string) =>
    (await ctx.tdb.db.query(`SELECT resource_type, resource_uuid, resource_external_id, source FROM events WHERE event_type = $1 ORDER BY id`, [type])).rows;

  it('creates and gets associates; 409 on a duplicate externalId', async () => {
    const r = await api().post('/crm/associates', { externalId: 'a-1', firstName: 'Ada', email: 'ada@store.example', storeId: 's-9' });
    assert.equal(r.status, 201);
    assert.equal(r.body.storeId, 's-9');
    assert.equal((await api().get(`/crm/associates/${r.body.uuid}`)).body.externalId, 'a-1');
    assert.equal((await api().get('/crm/associates/a-1')).body.uuid, r.body.uuid);
    assert.equal((await api().get('/crm/associates/nope')).status, 404);
    const dup = await api().post('/crm/associates', { externalId: 'a-1' });
    assert.equal(dup.status, 409);
    assert.deepEqual(errorCodes(dup), ['Conflict']);
    const list = await api().get('/crm/associates');
    assert.equal(list.body.data.length, 1);
    assert.equal(list.body.nextCursor, null);
  });

  it('creates and lists every kind of attached data', async () => {
    const c = (await api().post('/crm/customers', { externalId: 'd-1' })).body;
    const a = (await api().post('/crm/associates', { externalId: 'a-kinds' })).body;
    const bodies: Record<string, any> = {
      orders: { externalId: 'o-1', orderedAt: '2024-05-01T10:00:00Z', currency: 'EUR', total: '129.90', lineItems: [{ sku: 'SKU1', name: 'Bag', quantity: 1, price: '129.90' }] },
      followUps: { associateUuid: a.uuid, dueAt: '2024-06-01T09:00:00.000Z', subject: 'Call back' },
      notes: { type: 'CUSTOMER_PHONE_LOG', comments: 'Called about sizes', employee: a.uuid },
      messages: { channel: 'sms', direction: 'outbound', body: 'Hello', sentAt: '2024-05-02T08:00:00Z' },
      preferences: { category: 'size', value: 'M' },
      productShares: { sku: 'SKU2', associateUuid: a.uuid, message: 'You will like this' },
      associates: { associateUuid: a.uuid, role: 'stylist' },
    };
    for (const [kind, body] of Object.entries(bodies)) {
      const r = await api().post(`/crm/customers/d-1/${kind}`, body);
      assert.equal(r.status, 201, `${kind}: ${r.text}`);
      assert.equal(kind === 'notes' ? r.body.customer : r.body.customerUuid, c.uuid, kind);
      assert.match(r.body.uuid, /^[0-9a-f-]{36}$/);
      const list = await api().get(`/crm/customers/${c.uuid}/${kind}`);
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.data.map((x: any) => x.uuid), [r.body.uuid], kind);
    }
    const order = (await api().get('/crm/customers/d-1/orders')).body.data[0];
    assert.equal(order.total, '129.90');
    assert.equal(order.orderedAt, '2024-05-01T10:00:00.000Z');
    assert.equal(order.lineItems[0].sku, 'SKU1');
    const fu = (await api().get('/crm/customers/d-1/followUps')).body.data[0];
    assert.equal(fu.status, 'open', 'default status');
    assert.equal(fu.associateUuid, a.uuid);
    const share = (await api().get('/crm/customers/d-1/productShares')).body.data[0];
    assert.match(share.sharedAt, /Z$/, 'sharedAt defaults to now');
  });

  it('validates bodies: unknown fields, enums, unknown associate, unknown customer', async () => {
    await api().post('/crm/customers', { externalId: 'd-val' });
    const extra = await api().post('/crm/customers/d-val/preferences', { category: 'x', value: 'y', extra: 1 });
    assert.equal(extra.status, 400);
    assert.deepEqual(errorCodes(extra), ['InvalidParameterError']);
    const badType = await api().post('/crm/customers/d-val/notes', { type: 'fax', comments: 'x' });
    assert.equal(badType.status, 400);
    const badTotal = await api().post('/crm/customers/d-val/orders', { externalId: 'o', orderedAt: '2024-01-01T00:00:00Z', currency: 'EUR', total: '12,5' });
    assert.equal(badTotal.status, 400);
    const noAssoc = await api().post('/crm/customers/d-val/associates', { associateUuid: '00000000-0000-4000-8000-000000000000' });
    assert.equal(noAssoc.status, 400);
    assert.equal(noAssoc.body.errors[0].moreInfo, 'associateUuid');
    const noCustomer = await api().post('/crm/customers/nobody/preferences', { category: 'x', value: 'y' });
    assert.equal(noCustomer.status, 404);
    assert.equal((await api().get('/crm/customers/nobody/orders')).status, 404);
    const n = (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM preferences p JOIN customers c ON c.id = p.customer_id WHERE c.external_id = 'd-val'`)).rows[0].n;
    assert.equal(n, 0, 'nothing was written');
  });

  it('answers 409 for a duplicate customer–associate association', async () => {
    await api().post('/crm/customers', { externalId: 'd-assoc' });
    const a = (await api().post('/crm/associates', { externalId: 'a-dup' })).body;
    assert.equal((await api().post('/crm/customers/d-assoc/associates', { associateUuid: a.uuid })).status, 201);
    const dup = await api().post('/crm/customers/d-assoc/associates', { associateUuid: a.uuid, role: 'other' });
    assert.equal(dup.status, 409);
    assert.deepEqual(errorCodes(dup), ['Conflict']);
    assert.equal((await api().get('/crm/customers/d-assoc/associates')).body.data.length, 1);
  });

  it('paginates attached data: limit, opaque cursor, each row once', async () => {
    await api().post('/crm/customers', { externalId: 'd-page' });
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push((await api().post('/crm/customers/d-page/preferences', { category: 'c', value: `v${i}` })).body.uuid);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: any = await api().get(`/crm/customers/d-page/preferences?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200);
      assert.ok(r.body.data.length <= 3);
      seen.push(...r.body.data.map((x: any) => x.uuid));
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor);
    assert.deepEqual(seen, made);
    assert.equal(pages, 3);
    assert.equal((await api().get('/crm/customers/d-page/preferences')).body.data.length, 7, 'default limit 50');
    for (const bad of ['limit=0', 'limit=251', 'cursor=xyz', 'other=1']) {
      assert.equal((await api().get(`/crm/customers/d-page/preferences?${bad}`)).status, 400, bad);
    }
  });

  it('notes: create emits customerNoteCreate, PUT replaces and emits customerNoteUpdate only on change', async () => {
    await api().post('/crm/customers', { externalId: 'd-note' });
    const note = await api().post('/crm/customers/d-note/notes', { type: 'CUSTOMER_OPTIN_LOG', comments: 'Opted in to SMS' });
    assert.equal(note.status, 201);
    const mine = async (type: string) => (await events(type)).filter((e) => e.resource_uuid === note.body.uuid);
    const created = await mine('customerNoteCreate');
    assert.equal(created.length, 1);
    assert.deepEqual(created[0], { resource_type: 'CustomerNote', resource_uuid: note.body.uuid, resource_external_id: null, source: 'TULIP_API' });
    const got = await api().get(`/crm/customerNotes/${note.body.uuid}`);
    assert.equal(got.body.comments, 'Opted in to SMS');
    const put = await api().put(`/crm/customerNotes/${note.body.uuid}`, { type: 'CUSTOMER_NOTE', comments: 'Changed' });
    assert.equal(put.status, 200);
    assert.equal(put.body.type, 'CUSTOMER_NOTE');
    assert.equal(put.body.comments, 'Changed');
    assert.notEqual(put.body.updatedAt, note.body.updatedAt);
    assert.equal((await mine('customerNoteUpdate')).length, 1);
    const same = await api().put(`/crm/customerNotes/${note.body.uuid}`, { type: 'CUSTOMER_NOTE', comments: 'Changed' });
    assert.equal(same.status, 200);
    assert.equal((await mine('customerNoteUpdate')).length, 1, 'no change, no event');
    assert.equal((await api().get('/crm/customerNotes/00000000-0000-4000-8000-000000000000')).status, 404);
    assert.equal((await api().put(`/crm/customerNotes/${note.body.uuid}`, { comments: 'no type' })).status, 400);
    const before = (await events('customerNoteCreate')).length;
    const other = await api().post('/crm/customers/d-note/messages', { channel: 'email', direction: 'inbound', body: 'hi' });
    assert.equal(other.status, 201);
    assert.equal((await events('customerNoteCreate')).length, before, 'only notes emit note events');
  });

  it('serves attached data from 2022-08 only', async () => {
    await api().post('/crm/customers', { externalId: 'd-ver' });
    const old = await api().withVersion('2022-04').get('/crm/customers/d-ver/orders');
    assert.equal(old.status, 404);
    assert.deepEqual(errorCodes(old), ['EndpointNotInVersion']);
    assert.equal((await api().withVersion('2022-08').get('/crm/customers/d-ver/orders')).status, 200);
    assert.equal((await api().withVersion('2022-04').get('/crm/associates')).status, 404);
  });
});
