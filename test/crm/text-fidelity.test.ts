// A text value is read back as it was stored, a leading byte-order mark (U+FEFF) included. The embedded database's
// driver decoded every text field with a TextDecoder that drops a leading BOM: the field was stored whole and read
// without it, so GET by the externalId as sent was a 404, the one read back named another customer, and a PUT by it
// made a second customer (a round-trip probe, 2026-11-30; PostgreSQL's driver kept it).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

const BOM = '\ufeff';

await describeEachDb('text read back as stored', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let uuid = '';

  it('a customer whose values start with a byte-order mark reads back with it, through the API and the database layer', async () => {
    const sent = { externalId: `${BOM}bomext`, firstName: `${BOM}Ann`, lastName: `Lee${BOM}`, suffix: `${BOM}Jr` };
    const created = await api().post('/crm/customers', sent);
    assert.equal(created.status, 201, created.text);
    uuid = created.body.uuid;
    const fields = (c: any) => ({ externalId: c.externalId, firstName: c.firstName, lastName: c.lastName, suffix: c.suffix });
    const expected = { externalId: sent.externalId, firstName: sent.firstName, lastName: sent.lastName, suffix: sent.suffix };
    assert.deepEqual(fields(created.body), expected, 'the create answer');
    assert.deepEqual(fields((await api().get(`/crm/customers/${uuid}`)).body), expected, 'GET by uuid');
    assert.deepEqual(fields((await api().get(`/crm/customers/${encodeURIComponent(sent.externalId)}`)).body), expected, 'GET by the externalId as sent');
    const listed = (await api().get(`/crm/customers?externalId=${encodeURIComponent(sent.externalId)}`)).body.data;
    assert.deepEqual(listed.map(fields), [expected], 'the list');
    assert.equal((await api().get('/crm/customers/bomext')).status, 404, 'another externalId');
    const row = (await ctx.tdb.db.query<{ external_id: string; first_name: string }>('SELECT external_id, first_name FROM customers WHERE uuid = $1', [uuid])).rows[0];
    assert.deepEqual([row.external_id, row.first_name], [sent.externalId, sent.firstName], 'a named statement');
    const one = await ctx.tdb.db.query<{ t: string }>(`SELECT $1::text AS t`, [`${BOM}x`]);
    assert.equal(one.rows[0].t, `${BOM}x`, 'an unnamed one');
  });

  it('a client that reads it and writes it back changes nothing and makes no second customer', async () => {
    const read = (await api().get(`/crm/customers/${uuid}`)).body;
    const back = { firstName: read.firstName, lastName: read.lastName, suffix: read.suffix };
    const put = await api().put(`/crm/customers/${encodeURIComponent(read.externalId)}`, back);
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.uuid, uuid);
    assert.equal(put.body.firstName, `${BOM}Ann`);
    assert.equal((await api().get('/crm/customers?q=bomext')).body.data.length, 1);
  });
});
