// `.` and `..` as externalIds (found by a round-trip probe, 2026-11-30): fetch (so @bulb/client) and Python requests
// remove them from a path as dot segments, %2E too, so GET /crm/customers/. reached the list and /crm/customers/..
// a 404. Every resource read by {id} in a path refuses them in every write that gives one (a 400 naming externalId,
// nothing written); a record stored with one before is still read and changed by its uuid.
import assert from 'node:assert/strict';
import http from 'node:http';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY } from '../helpers/server.ts';
import { importErrors, importFinished, useImportWorker } from '../helpers/imports.ts';

/** A request sent with its path exactly as given (fetch would remove the dot segments). */
function asIs(base: string, method: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const u = new URL(base);
    const payload = JSON.stringify(body);
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const DOTS = ['.', '..'];

await describeEachDb('dot-segment externalIds', (ctx) => {
  useImportWorker(ctx, 100);
  const api = () => ctx.srv.api.withVersion('2026-11');
  const refused = (r: { status: number; body: any }, what: string) => {
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.errors[0].message, /^"externalId" "\.\.?" is reserved: .*dot segment/, what);
    assert.match(r.body.errors[0].moreInfo, /(^|\.)externalId$/, what);
  };
  const count = async (table: string) => Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM ${table} WHERE external_id IN ('.', '..')`)).rows[0].n);

  it('customers: POST, PATCH, PUT by the path (sent as is, %2E too), bulk items and import lines refuse them', async () => {
    assert.equal((await api().post('/crm/customers', { externalId: 'dot-1' })).status, 201);
    for (const id of DOTS) {
      refused(await api().post('/crm/customers', { externalId: id }), `POST ${id}`);
      refused(await api().patch('/crm/customers/dot-1', { externalId: id }), `PATCH ${id}`);
      refused(await asIs(ctx.srv.url, 'PUT', `/api/2026-11/crm/customers/${id}`, { firstName: 'X' }), `PUT /${id}`);
      refused(await asIs(ctx.srv.url, 'PUT', `/api/2026-11/crm/customers/${id.replace(/\./g, '%2E')}`, { firstName: 'X' }), `PUT %2E ${id}`);
      const bulk = await api().post('/crm/customers/bulk', [{ externalId: id }, { externalId: `ok${id}` }]);
      assert.deepEqual(bulk.body.results.map((x: any) => [x.status, x.errors?.[0]?.moreInfo]), [[400, 'externalId'], [201, undefined]], bulk.text);
      assert.match(bulk.body.results[0].errors[0].message, /dot segment/);
    }
    const nd = await api().post('/crm/imports?format=ndjson', '{"externalId":"."}\n{"externalId":".."}\n{"externalId":"dot-nd"}\n', { 'content-type': 'application/x-ndjson' });
    assert.equal(nd.status, 202, nd.text);
    assert.deepEqual([(await importFinished(api(), nd.body.uuid)).failed], [2]);
    assert.deepEqual((await importErrors(api(), nd.body.uuid)).map((e) => [e.line, e.errors[0].moreInfo]), [[1, 'externalId'], [2, 'externalId']]);
    const tg = await api().post(`/crm/imports?format=tgen&name=TGEN_customers_fullupdate_2025-08_dot.csv`, 'externalId,firstName,lastName\n.,A,B\n..,C,D\n', { 'content-type': 'text/csv' });
    assert.equal(tg.status, 202, tg.text);
    assert.equal((await importFinished(api(), tg.body.uuid)).failed, 2);
    assert.equal(await count('customers'), 0, 'no customer has one');
    assert.equal((await api().get('/crm/customers/dot-1')).body.externalId, 'dot-1');
  });

  it('a customer stored with one before is read and changed by its uuid', async () => {
    const c = (await api().post('/crm/customers', { externalId: 'dot-old' })).body;
    await ctx.tdb.db.query(`UPDATE customers SET external_id = '.' WHERE uuid = $1`, [c.uuid]);
    const r = await api().patch(`/crm/customers/${c.uuid}`, { firstName: 'Kept' });
    assert.deepEqual([r.status, r.body.externalId, r.body.firstName], [200, '.', 'Kept'], JSON.stringify(r.body));
    await ctx.tdb.db.query(`UPDATE customers SET external_id = 'dot-old' WHERE uuid = $1`, [c.uuid]);
  });

  it('associates, customer attributes and customer notes (API and TGEN notes file) refuse them too', async () => {
    assert.equal((await api().post('/crm/customers', { externalId: 'dot-n' })).status, 201);
    for (const id of DOTS) {
      refused(await api().post('/crm/associates', { externalId: id }), `associate ${id}`);
      refused(await api().post('/crm/customerAttributes', { externalId: id }), `attribute ${id}`);
      refused(await api().post('/crm/customerNotes', { customer: 'dot-n', externalId: id, type: 'CUSTOMER_NOTE', comments: 'x' }), `note ${id}`);
      refused(await api().post('/crm/customers/dot-n/notes', { externalId: id, type: 'CUSTOMER_NOTE', comments: 'x' }), `note under ${id}`);
    }
    const note = await api().post('/crm/customerNotes', { customer: 'dot-n', externalId: 'dot-note', type: 'CUSTOMER_NOTE', comments: 'x' });
    assert.equal(note.status, 201, note.text);
    refused(await api().put(`/crm/customerNotes/${note.body.uuid}`, { externalId: '..', type: 'CUSTOMER_NOTE', comments: 'y' }), 'note PUT');
    assert.deepEqual((await api().get(`/crm/customerNotes/${note.body.uuid}`)).body.externalId, 'dot-note');
    const tg = await api().post(`/crm/imports?format=tgen&name=TGEN_customerNotes_fullupdate_2025-08_dot.csv`,
      'externalId,customer,comments,type\n.,dot-n,a,CUSTOMER_OPTIN_LOG\n..,dot-n,b,CUSTOMER_OPTIN_LOG\n', { 'content-type': 'text/csv' });
    assert.equal(tg.status, 202, tg.text);
    assert.equal((await importFinished(api(), tg.body.uuid)).failed, 2);
    assert.deepEqual((await importErrors(api(), tg.body.uuid)).map((e) => [e.line, e.errors[0].moreInfo]), [[2, 'externalId'], [3, 'externalId']]);
    for (const t of ['associates', 'customer_attributes', 'notes']) assert.equal(await count(t), 0, t);
  });
});
