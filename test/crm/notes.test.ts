// Customer notes as Tulip documents them (SPEC §16): fields, type values and limits of
// https://docs.tulip.com/tgen/customernotes (uuid, externalId ≤ 255, customer, employee, store, comments,
// isPrivate, isDeleted, type CUSTOMER_OPTIN_LOG, wishListId); created under the customer or through
// POST /crm/customerNotes, found and replaced by uuid or externalId; their events; the merge moves every type
// and undo moves them back; a database written by the earlier Bulb migrates with every note kept.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { freshDb, backends } from '../helpers/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { snapshot } from './fixtures.ts';

const TYPES = ['CUSTOMER_NOTE', 'CUSTOMER_PHONE_LOG', 'CUSTOMER_OPTIN_LOG', 'CUSTOMER_VIDEO_LOG', 'CUSTOMER_SOCIAL_LOG'];

await describeEachDb('customer notes (Tulip shape)', (ctx) => {
  const api = () => ctx.srv.api;
  const db = () => ctx.tdb.db;
  const noteEvents = async (uuid: string) =>
    (await db().query(`SELECT event_type, resource_type, resource_external_id FROM events WHERE resource_uuid = $1 ORDER BY id`, [uuid])).rows;

  // https://docs.tulip.com/tgen/customernotes: every column of a customer note, CUSTOMER_OPTIN_LOG
  it('POST /crm/customerNotes with every Tulip field; read back by uuid and by externalId, on every version', async () => {
    const c = (await api().post('/crm/customers', { externalId: 'n-c1' })).body;
    const a = (await api().post('/crm/associates', { externalId: 'emp-7' })).body;
    const body = {
      externalId: 'note-ext-1', customer: 'n-c1', employee: 'emp-7', store: 'store-12', comments: 'Opted in to SMS at the till',
      isPrivate: true, isDeleted: false, type: 'CUSTOMER_OPTIN_LOG', wishListId: 42,
    };
    const r = await api().withVersion('2025-08').post('/crm/customerNotes', body);
    assert.equal(r.status, 201, r.text);
    const expected = {
      uuid: r.body.uuid, externalId: 'note-ext-1', customer: c.uuid, type: 'CUSTOMER_OPTIN_LOG', comments: 'Opted in to SMS at the till',
      employee: a.uuid, store: 'store-12', isPrivate: true, isDeleted: false, wishListId: 42, createdAt: r.body.createdAt, updatedAt: r.body.updatedAt,
    };
    assert.deepEqual(r.body, expected);
    for (const v of ['2022-08', '2025-04', '2025-08', '2025-12', '2026-11']) {
      for (const id of [r.body.uuid as string, 'note-ext-1']) {
        const got: any = await api().withVersion(v).get(`/crm/customerNotes/${id}`);
        assert.equal(got.status, 200, `${v} ${id}`);
        assert.deepEqual(got.body, expected, `${v} ${id}`);
      }
      const list = await api().withVersion(v).get(`/crm/customers/${c.uuid}/notes`);
      assert.deepEqual(list.body.data, [expected], v);
    }
    assert.deepEqual(await noteEvents(r.body.uuid), [{ event_type: 'customerNoteCreate', resource_type: 'CustomerNote', resource_external_id: 'note-ext-1' }]);
    // https://docs.tulip.com/integrating/webhooks/eventsoverview: customerNoteCreate's resource is fetched with
    // /api/{version}/crm/customerNotes/{id}, "either the resource.uuid or the resource.externalId as the identifier".
    const ev = (await api().withVersion('2026-11').get(`/events?eventType=customerNoteCreate&resourceUuid=${r.body.uuid}`)).body.data[0];
    assert.deepEqual(ev.resource, { uuid: r.body.uuid, externalId: 'note-ext-1' });
    for (const id of [ev.resource.uuid, ev.resource.externalId]) assert.equal((await api().get(`/crm/customerNotes/${id}`)).body.uuid, r.body.uuid);
  });

  it('under the customer: `customer` may be left out or must name that customer; every Tulip type; defaults', async () => {
    const c = (await api().post('/crm/customers', { externalId: 'n-c2' })).body;
    await api().post('/crm/customers', { externalId: 'n-other' });
    for (const type of TYPES) {
      const r = await api().post('/crm/customers/n-c2/notes', { type, comments: `a ${type}` });
      assert.equal(r.status, 201, `${type}: ${r.text}`);
      assert.deepEqual(
        { externalId: r.body.externalId, customer: r.body.customer, employee: r.body.employee, store: r.body.store, isPrivate: r.body.isPrivate, isDeleted: r.body.isDeleted, wishListId: r.body.wishListId },
        { externalId: null, customer: c.uuid, employee: null, store: null, isPrivate: false, isDeleted: false, wishListId: null },
      );
    }
    assert.equal((await api().post('/crm/customers/n-c2/notes', { customer: c.uuid, type: 'CUSTOMER_NOTE', comments: 'named by uuid' })).status, 201);
    const snap = await snapshot(db());
    const wrong = await api().post('/crm/customers/n-c2/notes', { customer: 'n-other', type: 'CUSTOMER_NOTE', comments: 'x' });
    assert.equal(wrong.status, 400);
    assert.deepEqual(errorCodes(wrong), ['InvalidParameterError']);
    assert.equal(wrong.body.errors[0].moreInfo, 'customer');
    assert.equal(await snapshot(db()), snap);
  });

  it('bad notes get a 400 naming the field (or 404/409) and change nothing', async () => {
    await api().post('/crm/customers', { externalId: 'n-c3' });
    const taken = await api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_NOTE', comments: 'first', externalId: 'n-dup' });
    assert.equal(taken.status, 201);
    const snap = await snapshot(db());
    const notes = async () => (await db().query('SELECT count(*)::int AS n FROM notes')).rows[0].n;
    const count = await notes();
    const cases: [string, () => Promise<any>, number, string][] = [
      ["Bulb's old names", () => api().post('/crm/customers/n-c3/notes', { type: 'note', body: 'x' }), 400, 'InvalidParameterError'],
      ['unknown type', () => api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_FAX_LOG', comments: 'x' }), 400, 'InvalidParameterError'],
      ['no customer', () => api().post('/crm/customerNotes', { type: 'CUSTOMER_NOTE', comments: 'x' }), 400, 'InvalidParameterError'],
      ['unknown customer', () => api().post('/crm/customerNotes', { customer: 'n-ghost', type: 'CUSTOMER_NOTE', comments: 'x' }), 400, 'InvalidParameterError'],
      ['no comments', () => api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_NOTE' }), 400, 'InvalidParameterError'],
      ['externalId over 255', () => api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_NOTE', comments: 'x', externalId: 'e'.repeat(256) }), 400, 'InvalidParameterError'],
      ['store over 255', () => api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_NOTE', comments: 'x', store: 's'.repeat(256) }), 400, 'InvalidParameterError'],
      ['isPrivate not boolean', () => api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_NOTE', comments: 'x', isPrivate: 'yes' }), 400, 'InvalidParameterError'],
      ['unknown employee', () => api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_NOTE', comments: 'x', employee: 'emp-ghost' }), 400, 'InvalidParameterError'],
      ['externalId taken', () => api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_NOTE', comments: 'x', externalId: 'n-dup' }), 409, 'Conflict'],
      ['unknown note', () => api().put('/crm/customerNotes/n-nothing', { type: 'CUSTOMER_NOTE', comments: 'x' }), 404, 'NotFound'],
      ['unknown customer in the path', () => api().post('/crm/customers/n-ghost/notes', { type: 'CUSTOMER_NOTE', comments: 'x' }), 404, 'NotFound'],
    ];
    for (const [name, run, status, code] of cases) {
      const r = await run();
      assert.equal(r.status, status, `${name}: ${r.text}`);
      assert.equal(errorCodes(r)[0], code, name);
      assert.equal(await notes(), count, `${name}: no note written`);
    }
    const unknownType = await api().post('/crm/customerNotes', { customer: 'n-c3', type: 'CUSTOMER_FAX_LOG', comments: 'x' });
    assert.match(unknownType.body.errors[0].message, /CUSTOMER_OPTIN_LOG/, 'the message lists the allowed types');
    assert.equal(await snapshot(db()), snap);
  });

  it('PUT by externalId replaces the note (omitted externalId kept), emits customerNoteUpdate only on change; a note stays with its customer', async () => {
    const c = (await api().post('/crm/customers', { externalId: 'n-c4' })).body;
    await api().post('/crm/customers', { externalId: 'n-c4b' });
    const n = (await api().post('/crm/customerNotes', { customer: c.uuid, type: 'CUSTOMER_NOTE', comments: 'v1', externalId: 'n-put', isPrivate: true, store: 's1' })).body;
    const put = await api().put('/crm/customerNotes/n-put', { type: 'CUSTOMER_PHONE_LOG', comments: 'v2' });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual([put.body.uuid, put.body.externalId, put.body.type, put.body.comments, put.body.isPrivate, put.body.store], [n.uuid, 'n-put', 'CUSTOMER_PHONE_LOG', 'v2', false, null]);
    const same = await api().put(`/crm/customerNotes/${n.uuid}`, { customer: 'n-c4', type: 'CUSTOMER_PHONE_LOG', comments: 'v2' });
    assert.equal(same.status, 200);
    const renamed = await api().put(`/crm/customerNotes/${n.uuid}`, { type: 'CUSTOMER_PHONE_LOG', comments: 'v2', externalId: 'n-put-2' });
    assert.equal(renamed.body.externalId, 'n-put-2');
    assert.equal((await api().get('/crm/customerNotes/n-put-2')).body.uuid, n.uuid);
    assert.deepEqual((await noteEvents(n.uuid)).map((e) => `${e.event_type}:${e.resource_external_id}`),
      ['customerNoteCreate:n-put', 'customerNoteUpdate:n-put', 'customerNoteUpdate:n-put-2']);
    const move = await api().put(`/crm/customerNotes/${n.uuid}`, { customer: 'n-c4b', type: 'CUSTOMER_NOTE', comments: 'moved?' });
    assert.equal(move.status, 400);
    assert.equal(move.body.errors[0].moreInfo, 'customer');
  });

  // https://docs.tulip.com/integrating/customer-merge: "All Customer Notes (Notes, Phone, Opt-In Records, Video, Social)"
  it('the merge moves notes of every type with their Tulip fields; undo moves them back', async () => {
    const p = (await api().post('/crm/customers', { externalId: 'n-p' })).body;
    const s = (await api().post('/crm/customers', { externalId: 'n-s' })).body;
    const made: string[] = [];
    for (const [i, type] of TYPES.entries()) {
      made.push((await api().post('/crm/customerNotes', { customer: 'n-s', type, comments: `s ${i}`, externalId: `n-s-${i}`, isPrivate: i % 2 === 0 })).body.uuid);
    }
    const before = (await api().get('/crm/customerNotes/n-s-0')).body.updatedAt;
    const m = await api().post('/crm/customers/n-p/merge', { mergeWithCustomerIds: ['n-s'] });
    assert.equal(m.status, 200, m.text);
    assert.equal(m.body.moved.notes, 5);
    for (const [i, uuid] of made.entries()) {
      const n = (await api().get(`/crm/customerNotes/n-s-${i}`)).body;
      assert.deepEqual([n.uuid, n.customer, n.type, n.isPrivate], [uuid, p.uuid, TYPES[i], i % 2 === 0]);
      // Its customer changed: a client syncing notes by updatedAt sees it (it stayed as created until 2026-11-29).
      assert.ok(n.updatedAt > before, `${n.updatedAt} renewed by the merge (was ${before})`);
    }
    // The note's former customer names it still: a source system re-sending its notes after the merge (400 until 2026-11-29).
    const resent = await api().put('/crm/customerNotes/n-s-0', { customer: 'n-s', type: TYPES[0], comments: 'resent', isPrivate: true });
    assert.equal(resent.status, 200, resent.text);
    assert.deepEqual([resent.body.customer, resent.body.comments], [p.uuid, 'resent']);
    const merged = (await api().get('/crm/customerNotes/n-s-1')).body.updatedAt;
    const undo = await api().withVersion('2026-11').post(`/crm/merges/${m.body.mergeUuid}/undo`);
    assert.equal(undo.status, 200, undo.text);
    assert.equal(undo.body.movedBack.notes, 5);
    for (const i of TYPES.keys()) {
      const n = (await api().get(`/crm/customerNotes/n-s-${i}`)).body;
      assert.equal(n.customer, s.uuid);
      assert.ok(n.updatedAt > merged, `undo renews updatedAt too: ${n.updatedAt} > ${merged}`);
    }
  });
});

// A database written by the earlier Bulb (notes with body and type note|phone|optIn|video|social) migrates
// with every note kept: text in comments, each type mapped to Tulip's name.
for (const backend of await backends()) {
  it(`migration 030 keeps every note (${backend})`, async () => {
    const tdb = await freshDb(backend);
    try {
      // Recreate the state before 030 on this fresh database: undo 030, then write notes the old way.
      await tdb.db.query(`DROP INDEX notes_external_id`);
      await tdb.db.query(`ALTER TABLE notes DROP CONSTRAINT notes_type_check, DROP COLUMN external_id, DROP COLUMN store, DROP COLUMN is_private, DROP COLUMN is_deleted, DROP COLUMN wish_list_id`);
      await tdb.db.query(`ALTER TABLE notes RENAME COLUMN comments TO body`);
      await tdb.db.query(`ALTER TABLE notes ADD CONSTRAINT notes_type_check CHECK (type IN ('note', 'phone', 'optIn', 'video', 'social'))`);
      await tdb.db.query(`DELETE FROM schema_migrations WHERE version = 30`);
      const c = (await tdb.db.query<{ id: string }>(`INSERT INTO customers (external_id) VALUES ('mig-c') RETURNING id`)).rows[0].id;
      await tdb.db.query(`INSERT INTO notes (customer_id, type, body) SELECT $1, t, 'old ' || t FROM unnest(ARRAY['note', 'phone', 'optIn', 'video', 'social']) t`, [c]);
      await migrate(tdb.db);
      const rows = (await tdb.db.query(`SELECT type, comments, external_id, is_private FROM notes WHERE customer_id = $1 ORDER BY id`, [c])).rows;
      assert.deepEqual(rows.map((r) => [r.type, r.comments, r.external_id, r.is_private]), [
        ['CUSTOMER_NOTE', 'old note', null, false], ['CUSTOMER_PHONE_LOG', 'old phone', null, false], ['CUSTOMER_OPTIN_LOG', 'old optIn', null, false],
        ['CUSTOMER_VIDEO_LOG', 'old video', null, false], ['CUSTOMER_SOCIAL_LOG', 'old social', null, false],
      ]);
    } finally {
      await tdb.close();
    }
  });
}
