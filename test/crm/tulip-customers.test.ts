// Tulip's customer and address shapes (SPEC §16): every field Tulip documents, read back the same on every version;
// Tulip's limits and codes refused with a 400 naming the field (nothing written); custom attributes; `disabled`
// (deactivation without a merge) beside merges; address uuids kept across writes.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes, type Res } from '../helpers/server.ts';
import { VERSION_IDS } from '../../src/http/versioning/versions.ts';

/** A customer with every field Tulip documents (docs.tulip.com/tgen/customers, docs.tulip.com/tgen/addresses). */
const tulipCustomer = (externalId: string) => ({
  externalId,
  prefix: 'Dr',
  firstName: 'Ada',
  lastName: 'Lovelace',
  suffix: 'PhD',
  excludeFromCampaigns: true,
  image: 'https://cdn.example.com/ada.png',
  disabled: false,
  attributes: [{ attributeExternalId: 'shoeSize', value: '38' }, { attributeExternalId: 'nickname', value: 'Countess', languageExternalId: 'en' }],
  addresses: [{
    externalId: `${externalId}-home`, address1: '12 St James Square', address2: 'Flat 2', city: 'London', countryCode: 'GB', zoneCode: 'GB-LND',
    postCode: 'SW1Y 4JH', firstName: 'Ada', lastName: 'Lovelace', phone: '+442079460000', emailAddress: 'ada@example.org', type: 'home',
    disabled: false, isPrimary: true,
  }],
});

const versionsWithCustomers = VERSION_IDS; // customers are served from the first version on

await describeEachDb('Tulip customer shapes', (ctx) => {
  const api = () => ctx.srv.api;
  const count = async (sql: string) => Number((await ctx.tdb.db.query(sql)).rows[0].n);
  const snapshot = async () => (await ctx.tdb.db.query(
    'SELECT (SELECT count(*) FROM customers)::int AS customers, (SELECT max(updated_at)::text FROM customers) AS updated, (SELECT count(*) FROM events)::int AS events')).rows[0];
  const attribute = (externalId: string) => api().post('/crm/customerAttributes', { externalId, type: 'string', description: `${externalId} of the customer` });
  /** A refused write: 400, InvalidParameterError naming the field, and nothing written (customers, events). */
  const refused = async (write: () => Promise<Res>, field: string) => {
    const before = await snapshot();
    const r = await write();
    assert.equal(r.status, 400, r.text);
    assert.ok(errorCodes(r).every((c) => c === 'InvalidParameterError'), r.text);
    assert.ok(r.body.errors.some((e: any) => e.moreInfo === field), `an error names ${field}: ${r.text}`);
    assert.deepEqual(await snapshot(), before, 'nothing written');
  };

  it('customer attributes: POST (write scope) creates, 409 on a taken externalId, GET lists and finds; read scope cannot create', async () => {
    // https://docs.tulip.com/integrating/aerial/customattributes — fields externalId (required), type ("string"), description
    const r = await attribute('shoeSize');
    assert.equal(r.status, 201, r.text);
    assert.deepEqual([r.body.externalId, r.body.type, r.body.description], ['shoeSize', 'string', 'shoeSize of the customer']);
    assert.equal((await api().post('/crm/customerAttributes', { externalId: 'nickname' })).body.type, 'string', 'type defaults to string');
    const dup = await attribute('shoeSize');
    assert.equal(dup.status, 409);
    assert.deepEqual(errorCodes(dup), ['Conflict']);
    assert.equal((await api().post('/crm/customerAttributes', { externalId: 'x', type: 'integer' })).status, 400, 'Tulip documents the type string only');
    const list = await api().get('/crm/customerAttributes');
    assert.deepEqual(list.body.data.map((a: any) => a.externalId), ['shoeSize', 'nickname']);
    assert.equal((await api().get('/crm/customerAttributes/shoeSize')).body.uuid, r.body.uuid);
    assert.equal((await api().get(`/crm/customerAttributes/${r.body.uuid}`)).body.externalId, 'shoeSize');
    for (const v of versionsWithCustomers) assert.equal((await api().withVersion(v).get('/crm/customerAttributes')).status, 200, v);
    const key = (await api().post('/integrations/apiKeys', { name: 'reader', scopes: ['read'] })).body.key;
    const reader = api().withToken(key);
    assert.equal((await reader.get('/crm/customerAttributes')).status, 200);
    const denied = await reader.post('/crm/customerAttributes', { externalId: 'nope' });
    assert.equal(denied.status, 403);
  });

  it('a customer created with every Tulip field (on 2025-04, on 2025-08) reads back with the same names and values on every version', async () => {
    // https://docs.tulip.com/tgen/customers — prefix, suffix, disabled, excludeFromCampaigns, image, attributes, addresses[…]
    await attribute('shoeSize');
    await attribute('nickname');
    for (const [externalId, createdOn] of [['tulip-1', '2025-04'], ['tulip-2', '2025-08']]) {
      const sent = tulipCustomer(externalId);
      const r = await api().withVersion(createdOn).post('/crm/customers', sent);
      assert.equal(r.status, 201, `${createdOn}: ${r.text}`);
      assert.equal(typeof r.body.id, 'number');
      assert.equal(r.body.disabled, false);
      for (const v of versionsWithCustomers) {
        const got = await api().withVersion(v).get(`/crm/customers/${externalId}`);
        assert.equal(got.status, 200, `${v}: ${got.text}`);
        const c = got.body;
        for (const k of ['externalId', 'prefix', 'firstName', 'lastName', 'suffix', 'excludeFromCampaigns', 'image', 'disabled'] as const) {
          assert.deepEqual(c[k], (sent as any)[k], `${v}: ${k}`);
        }
        assert.equal(c.id, r.body.id, `${v}: the numeric id is stable`);
        assert.deepEqual(c.attributes, sent.attributes.map((a) => ({ languageExternalId: null, ...a })), `${v}: attributes`);
        assert.equal(c.addresses.length, 1);
        const { uuid, ...rest } = c.addresses[0];
        assert.match(uuid, /^[0-9a-f-]{36}$/, `${v}: the address has its own uuid`);
        assert.deepEqual(rest, sent.addresses[0], `${v}: the address, Tulip's names and values`);
      }
    }
    // The export serves the same shape.
    const exp = await api().withVersion('2026-11').get('/crm/customers/export');
    const line = exp.text.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((c) => c.externalId === 'tulip-1');
    assert.deepEqual(line, (await api().get('/crm/customers/tulip-1')).body);
  });

  it('POST and PUT take null for the lists and excludeFromCampaigns as the empty value, as a bulk item of the same version does', async () => {
    // Until 2026-11-29 a bulk PUT item with these nulls was a 200 and the same body to PUT or POST a 400 (found by a probe).
    const nulls = { excludeFromCampaigns: null, attributes: null, addresses: null, emails: null, phones: null, socialProfiles: null };
    const empty = { excludeFromCampaigns: false, attributes: [], addresses: [], emails: [], phones: [], socialProfiles: [] };
    for (const v of ['2025-08', '2022-04']) {
      const made = await api().withVersion(v).post('/crm/customers', { externalId: `nulls-${v}`, firstName: 'N', ...nulls });
      assert.equal(made.status, 201, `${v}: ${made.text}`);
      for (const [k, e] of Object.entries(empty)) assert.deepEqual(made.body[k], e, `${v} POST ${k}`);
      const full = { firstName: 'N', excludeFromCampaigns: true, emails: [{ email: `n-${v}@example.com` }], addresses: [{ city: 'Oslo', countryCode: 'NO' }] };
      assert.equal((await api().withVersion(v).put(`/crm/customers/nulls-${v}`, full)).status, 200);
      const cleared = await api().withVersion(v).put(`/crm/customers/nulls-${v}`, { firstName: 'N', ...nulls });
      assert.equal(cleared.status, 200, `${v}: ${cleared.text}`);
      for (const [k, e] of Object.entries(empty)) assert.deepEqual(cleared.body[k], e, `${v} PUT ${k}`);
    }
  });

  it("Tulip's limits and codes: a too-long field, a non-ISO countryCode, a zoneCode of another country, a non-E.164 phone, an unknown attribute: 400 naming it, nothing written", async () => {
    const base = () => tulipCustomer('tulip-bad');
    // https://docs.tulip.com/tgen/customers — firstName, lastName, prefix, suffix: Max Length 64; externalId 255
    for (const field of ['firstName', 'lastName', 'prefix', 'suffix'] as const) {
      await refused(() => api().post('/crm/customers', { ...base(), [field]: 'x'.repeat(65) }), `body.${field}`);
    }
    assert.equal((await api().post('/crm/customers', { externalId: 'tulip-64', firstName: 'x'.repeat(64), prefix: 'p'.repeat(64) })).status, 201, '64 is allowed');
    await refused(() => api().post('/crm/customers', { ...base(), externalId: 'x'.repeat(256) }), 'body.externalId');
    // https://docs.tulip.com/tgen/addresses — address1/address2 64, city 32, postCode 10; countryCode ISO-3166-1 alpha-2
    const addr = (patch: Record<string, unknown>) => ({ ...base(), addresses: [{ ...base().addresses[0], ...patch }] });
    await refused(() => api().post('/crm/customers', addr({ address1: 'a'.repeat(65) })), 'body.addresses.0.address1');
    await refused(() => api().post('/crm/customers', addr({ address2: 'a'.repeat(65) })), 'body.addresses.0.address2');
    await refused(() => api().post('/crm/customers', addr({ city: 'c'.repeat(33) })), 'body.addresses.0.city');
    await refused(() => api().post('/crm/customers', addr({ postCode: '12345678901' })), 'body.addresses.0.postCode');
    await refused(() => api().post('/crm/customers', addr({ countryCode: 'XX', zoneCode: null })), 'body.addresses.0.countryCode');
    await refused(() => api().post('/crm/customers', addr({ countryCode: 'France', zoneCode: null })), 'body.addresses.0.countryCode');
    // zoneCode: "The ISO-3166-2 region code (including the country code portion)"
    await refused(() => api().post('/crm/customers', addr({ countryCode: 'US', zoneCode: 'CA-ON' })), 'body.addresses.0.zoneCode');
    await refused(() => api().post('/crm/customers', addr({ zoneCode: 'LND' })), 'body.addresses.0.zoneCode');
    // phone: "Phone number associated to the address (E.164 standard)"
    await refused(() => api().post('/crm/customers', addr({ phone: '020 7946 0000' })), 'body.addresses.0.phone');
    await refused(() => api().post('/crm/customers', addr({ emailAddress: 'not an email' })), 'body.addresses.0.emailAddress');
    // https://docs.tulip.com/integrating/aerial/customattributes — values name an attribute created first
    await attribute('shoeSize');
    const unknown = await api().post('/crm/customers', { ...base(), attributes: [{ attributeExternalId: 'shoeSize', value: '38' }, { attributeExternalId: 'eyeColour', value: 'grey' }] });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.body.errors.map((e: any) => e.moreInfo), ['body.attributes.1.attributeExternalId']);
    assert.match(unknown.body.errors[0].message, /eyeColour/);
    await refused(() => api().post('/crm/customers', { ...base(), attributes: [{ attributeExternalId: 'eyeColour', value: 'grey' }] }), 'body.attributes.0.attributeExternalId');
    // The same checks on PUT, PATCH and bulk (per item).
    await api().post('/crm/customers', { externalId: 'tulip-ok' });
    await refused(() => api().put('/crm/customers/tulip-ok', { addresses: [{ countryCode: 'ZZ' }] }), 'body.addresses.0.countryCode');
    await refused(() => api().patch('/crm/customers/tulip-ok', { attributes: [{ attributeExternalId: 'eyeColour', value: 'grey' }] }), 'body.attributes.0.attributeExternalId');
    const bulk = await api().post('/crm/customers/bulk', [
      { externalId: 'tulip-b1', addresses: [{ countryCode: 'ZZ' }] },
      { externalId: 'tulip-b2', attributes: [{ attributeExternalId: 'eyeColour', value: 'grey' }] },
      { externalId: 'tulip-b3', prefix: 'Ms', attributes: [{ attributeExternalId: 'shoeSize', value: '40' }], addresses: [{ countryCode: 'US', zoneCode: 'US-CA' }] },
    ]);
    assert.deepEqual(bulk.body.results.map((x: any) => [x.status, x.errors?.[0].moreInfo]), [[400, 'addresses.0.countryCode'], [400, 'attributes.0.attributeExternalId'], [201, undefined]]);
    assert.equal((await api().get('/crm/customers/tulip-b1')).status, 404);
  });

  it('disabled: true deactivates without a merge, false re-activates; a merged-away customer comes back only by undoing its merge', async () => {
    // https://docs.tulip.com/tgen/customers_partialupdate — "disabled: Boolean dictating if customer status is disabled or not"
    await api().post('/crm/customers', { externalId: 'dis-1', firstName: 'Dee' });
    const note = await api().post('/crm/customers/dis-1/notes', { type: 'CUSTOMER_NOTE', comments: 'before', externalId: 'dis-1-n' });
    assert.equal(note.status, 201, note.text);
    const off = await api().patch('/crm/customers/dis-1', { disabled: true });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual([off.body.status, off.body.disabled, off.body.mergedInto], ['disabled', true, null]);
    assert.deepEqual((await api().get('/crm/customers?status=disabled')).body.data.map((c: any) => c.externalId), ['dis-1']);
    assert.deepEqual((await api().get('/crm/customers?status=active&externalId=dis-1')).body.data, []);
    // A deactivated customer still takes writes, and stays deactivated unless the write says otherwise.
    const renamed = await api().put('/crm/customers/dis-1', { firstName: 'Dora' });
    assert.deepEqual([renamed.status, renamed.body.firstName, renamed.body.disabled], [200, 'Dora', true]);
    // Its attached data is refused for its state, a new note and an edit of a note alike (the edit went through before
    // 2026-11-28, with a customerNoteUpdate), and the note is unchanged.
    assert.equal((await api().post('/crm/customers/dis-1/notes', { type: 'CUSTOMER_NOTE', comments: 'after' })).status, 403);
    const edit = await api().put('/crm/customerNotes/dis-1-n', { type: 'CUSTOMER_NOTE', comments: 'edited while disabled' });
    assert.equal(edit.status, 403, edit.text);
    assert.deepEqual(errorCodes(edit), ['CustomerDisabled']);
    assert.equal((await api().get('/crm/customerNotes/dis-1-n')).body.comments, 'before');
    // It cannot be merged (either side) while deactivated.
    await api().post('/crm/customers', { externalId: 'dis-p' });
    const merge = await api().post('/crm/customers/dis-p/merge', { mergeWithCustomerIds: ['dis-1'] });
    // 403 CustomerDisabled: https://docs.tulip.com/integrating/aerial/errors/troubleshooterrors (refused for the resource's state)
    assert.equal(merge.status, 403);
    assert.deepEqual(errorCodes(merge), ['CustomerDisabled']);
    assert.equal((await api().post('/crm/customers/dis-1/merge', { mergeWithCustomerIds: ['dis-p'] })).status, 403);
    const on = await api().patch('/crm/customers/dis-1', { disabled: false });
    assert.deepEqual([on.body.status, on.body.disabled], ['active', false]);

    // Merged away: disabled reads true, and disabled: false is refused (403) until the merge is undone.
    await api().post('/crm/customers', { externalId: 'dis-2' });
    const merged = await api().withVersion('2026-11').post('/crm/customers/dis-p/merge', { mergeWithCustomerIds: ['dis-2'] });
    assert.equal(merged.status, 200, merged.text);
    const gone = (await api().get('/crm/customers/dis-2')).body;
    assert.deepEqual([gone.status, gone.disabled, gone.mergedInto?.externalId], ['disabled', true, 'dis-p']);
    for (const write of [
      () => api().patch('/crm/customers/dis-2', { disabled: false }),
      () => api().put('/crm/customers/dis-2', { disabled: false }),
    ]) {
      const r = await write();
      assert.equal(r.status, 403, r.text);
      assert.deepEqual(errorCodes(r), ['CustomerDisabled']);
      assert.match(r.body.errors[0].message, /undo/);
    }
    const bulk = await api().post('/crm/customers/bulk', [{ externalId: 'dis-2', disabled: false }]);
    assert.equal(bulk.body.results[0].status, 403);
    const undo = await api().withVersion('2026-11').post(`/crm/merges/${merged.body.mergeUuid ?? merged.body.uuid}/undo`, {});
    assert.equal(undo.status, 200, undo.text);
    assert.deepEqual([(await api().get('/crm/customers/dis-2')).body.disabled, (await api().get('/crm/customers/dis-2')).body.mergedInto], [false, null]);

    // Bulk writes disabled too (2026-11 patch semantics: omitted keeps the status).
    const b = await api().withVersion('2026-11').post('/crm/customers/bulk', [{ externalId: 'dis-1', disabled: true }, { externalId: 'dis-3', disabled: true }]);
    assert.deepEqual(b.body.results.map((x: any) => [x.status, x.customer.disabled]), [[200, true], [201, true]]);
    const keep = await api().withVersion('2026-11').post('/crm/customers/bulk', [{ externalId: 'dis-1', lastName: 'Kept' }]);
    assert.deepEqual([keep.body.results[0].customer.lastName, keep.body.results[0].customer.disabled], ['Kept', true]);
  });

  // https://docs.tulip.com/tgen/customers_partialupdate — addresses[0].uuid: "Unique Tulip identifier of the address. Required for patching."
  it('a partial update (PATCH, a 2026-11 bulk item) naming an address by uuid or externalId patches it: the fields given replace, the others stay', async () => {
    const home = { externalId: 'ph-home', address1: '12 Byron St', address2: 'Flat 2', city: 'London', countryCode: 'GB', zoneCode: 'GB-LND', postCode: 'W1 1AA', type: 'home' };
    const work = { address1: '1 Rue de Rivoli', city: 'Paris', countryCode: 'FR', postCode: '75001', type: 'work' };
    const created = await api().withVersion('2025-12').post('/crm/customers', { externalId: 'ph-1', addresses: [home, work] });
    assert.equal(created.status, 201, created.text);
    const [h, w] = created.body.addresses;
    // PATCH (Tulip's 2025-12): the city of one, by uuid; the list given is the new list (the Paris address goes).
    const p = await api().withVersion('2025-12').patch('/crm/customers/ph-1', { addresses: [{ uuid: h.uuid, city: 'Westminster', address2: null }] });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body.addresses, [{ ...h, city: 'Westminster', address2: null }], 'before 2026-11-28: {uuid, city} and every other field null');
    // By externalId (no uuid sent), beside a new address.
    const q = await api().withVersion('2025-12').patch('/crm/customers/ph-1', { addresses: [{ externalId: 'ph-home', postCode: 'SW1 1AA' }, work] });
    assert.deepEqual(q.body.addresses[0], { ...h, city: 'Westminster', address2: null, postCode: 'SW1 1AA' });
    assert.equal(q.body.addresses[1].address1, '1 Rue de Rivoli');
    assert.notEqual(q.body.addresses[1].uuid, w.uuid, 'the Paris address was removed before: a new one');
    // Checked as stored: a country that does not hold the kept zoneCode is a 400 naming it, nothing written.
    await refused(() => api().withVersion('2025-12').patch('/crm/customers/ph-1', { addresses: [{ uuid: h.uuid, countryCode: 'FR' }] }), 'body.addresses.0.zoneCode');
    // A 2026-11 bulk item is a patch: the same; one before 2026-11 replaces the record, the address given whole.
    const b = await api().withVersion('2026-11').post('/crm/customers/bulk', [{ externalId: 'ph-1', addresses: [{ uuid: h.uuid, city: 'Camden' }] }]);
    assert.deepEqual(b.body.results[0].customer.addresses, [{ ...h, city: 'Camden', address2: null, postCode: 'SW1 1AA' }]);
    const bad = await api().withVersion('2026-11').post('/crm/customers/bulk', [{ externalId: 'ph-1', addresses: [{ uuid: h.uuid, countryCode: 'FR' }] }]);
    assert.deepEqual([bad.body.results[0].status, bad.body.results[0].errors[0].moreInfo], [400, 'addresses.0.zoneCode']);
    const old = await api().withVersion('2025-04').post('/crm/customers/bulk', [{ externalId: 'ph-1', addresses: [{ uuid: h.uuid, city: 'Camden' }] }]);
    const [replaced] = old.body.results[0].customer.addresses;
    assert.deepEqual([replaced.uuid, replaced.city, replaced.address1, replaced.countryCode], [h.uuid, 'Camden', null, null], 'a replace empties what it omits');
    // Named in upper case: the same address, its uuid kept as stored (the spelling sent was stored before 2026-11-28);
    // a new uuid sent in upper case is stored lower-case.
    const upper = await api().withVersion('2026-11').patch('/crm/customers/ph-1', { addresses: [{ uuid: h.uuid.toUpperCase(), city: 'Soho' }, { uuid: 'A1B2C3D4-0000-4000-8000-00000000ABCD', address1: '3 New St' }] });
    assert.equal(upper.status, 200, upper.text);
    assert.deepEqual(upper.body.addresses.map((a: any) => [a.uuid, a.city]), [[h.uuid, 'Soho'], ['a1b2c3d4-0000-4000-8000-00000000abcd', null]]);
  });

  it('address uuids stay across PUT and PATCH when the uuid or externalId is sent back, or the address is sent unchanged; new addresses get new uuids', async () => {
    // https://docs.tulip.com/tgen/customers_partialupdate — addresses[0].uuid: "Unique Tulip identifier of the address. Required for patching."
    const c = await api().post('/crm/customers', { externalId: 'addr-1', addresses: [{ address1: '1 A St', city: 'Albany', countryCode: 'US' }, { externalId: 'work', address1: '2 B St' }] });
    const [home, work] = c.body.addresses;
    assert.notEqual(home.uuid, work.uuid);
    const events = () => count(`SELECT count(*) AS n FROM events WHERE resource_external_id = 'addr-1'`);
    const before = await events();
    // Sent again as it was (no uuids): the same uuids, no change, no event.
    const same = await api().put('/crm/customers/addr-1', { addresses: [{ address1: '1 A St', city: 'Albany', countryCode: 'US' }, { externalId: 'work', address1: '2 B St' }] });
    assert.deepEqual(same.body.addresses.map((a: any) => a.uuid), [home.uuid, work.uuid]);
    assert.equal(await events(), before, 'nothing changed');
    // Changed, named by uuid and by externalId, reordered, plus a new one.
    const put = await api().put('/crm/customers/addr-1', { addresses: [
      { externalId: 'work', address1: '3 C St', city: 'Boston' }, { uuid: home.uuid, address1: '1 A Street', city: 'Albany' }, { address1: '9 New Rd' },
    ] });
    assert.deepEqual(put.body.addresses.slice(0, 2).map((a: any) => [a.uuid, a.address1]), [[work.uuid, '3 C St'], [home.uuid, '1 A Street']]);
    const fresh = put.body.addresses[2].uuid;
    assert.ok(![home.uuid, work.uuid].includes(fresh));
    // PATCH with the addresses as read keeps every uuid.
    const patched = await api().patch('/crm/customers/addr-1', { addresses: put.body.addresses.map((a: any) => ({ ...a, isPrimary: a.uuid === fresh })) });
    assert.deepEqual(patched.body.addresses.map((a: any) => a.uuid), [work.uuid, home.uuid, fresh]);
    assert.deepEqual(patched.body.addresses.map((a: any) => a.isPrimary), [false, false, true]);
    // Bulk (an item for an existing customer) keeps them the same way.
    const bulk = await api().post('/crm/customers/bulk', [{ externalId: 'addr-1', addresses: [{ externalId: 'work', address1: '4 D St' }] }]);
    assert.deepEqual(bulk.body.results[0].customer.addresses.map((a: any) => [a.uuid, a.address1]), [[work.uuid, '4 D St']]);
    // Two addresses may not share a uuid.
    await refused(() => api().put('/crm/customers/addr-1', { addresses: [{ uuid: home.uuid }, { uuid: home.uuid }] }), 'body.addresses.1.uuid');
    // Nor get one: an address matching a current one (by content, or by externalId) does not take the uuid a later
    // address of the list names (both got it until 2026-11-29, through every writer; the list as read was then refused).
    const cur = (await api().get('/crm/customers/addr-1')).body.addresses as any[];
    const [w] = cur;
    const asStored = (({ uuid: _u, ...rest }) => rest)(w);
    for (const [name, named, write] of [
      ['PUT', '5 E St', () => api().put('/crm/customers/addr-1', { addresses: [asStored, { uuid: w.uuid, address1: '5 E St' }] })],
      ['PATCH', '7 G St', () => api().patch('/crm/customers/addr-1', { addresses: [{ externalId: 'work', address1: '6 F St' }, { uuid: w.uuid, externalId: 'other', address1: '7 G St' }] })],
      ['bulk', '8 H St', () => api().post('/crm/customers/bulk', [{ externalId: 'addr-1', addresses: [{ externalId: 'work', address1: '6 F St' }, { uuid: w.uuid, externalId: 'other2', address1: '8 H St' }] }])],
    ] as const) {
      const r = await write();
      assert.equal(r.status, 200, `${name}: ${r.text}`);
      const got = (await api().get('/crm/customers/addr-1')).body.addresses as any[];
      assert.equal(new Set(got.map((a) => a.uuid)).size, got.length, `${name}: every address its own uuid: ${JSON.stringify(got.map((a) => [a.uuid, a.address1]))}`);
      assert.equal(got.find((a) => a.uuid === w.uuid)?.address1, named, `${name}: the uuid stays with the address that named it`);
      assert.equal((await api().put('/crm/customers/addr-1', { addresses: got })).status, 200, `${name}: the list sent back as read is taken`);
    }
    // An address named by externalId does not patch the one another address of the list names by uuid (both carried
    // its uuid until 2026-11-29: migration 072): the uuid claims it, the other is a new address.
    for (const [name, write] of [
      ['PATCH', (w: string) => api().patch('/crm/customers/addr-1', { addresses: [{ externalId: 'work', address1: '6 F St' }, { uuid: w, externalId: 'other', address1: '7 G St' }] })],
      ['bulk', (w: string) => api().post('/crm/customers/bulk', [{ externalId: 'addr-1', addresses: [{ externalId: 'work', address1: '6 F St' }, { uuid: w, externalId: 'other', address1: '7 G St' }] }])],
    ] as const) {
      const reset = await api().put('/crm/customers/addr-1', { addresses: [{ externalId: 'work', address1: '1 W St' }] });
      const w = reset.body.addresses[0].uuid;
      assert.equal((await write(w)).status, 200, name);
      const got = (await api().get('/crm/customers/addr-1')).body.addresses as any[];
      assert.equal(new Set(got.map((a) => a.uuid)).size, 2, `${name}: ${JSON.stringify(got.map((a) => [a.uuid, a.externalId]))}`);
      assert.deepEqual(got.map((a) => [a.uuid === w, a.externalId, a.address1]), [[false, 'work', '6 F St'], [true, 'other', '7 G St']], name);
    }
  });

  it('externalId is optional: a customer created without one (every version) is found by uuid and by search, gets one later by PATCH, and is merged and restored by uuid', async () => {
    // https://docs.tulip.com/tgen/customers — externalId: "Required: No"; and
    // https://docs.tulip.com/integrating/webhooks/automatingexternalidassignment — a customer is created, its uuid
    // reaches the integrator's system by a customerCreate webhook, which then sets the externalId by an update.
    const made: any[] = [];
    for (const v of versionsWithCustomers) {
      const r = await api().withVersion(v).post('/crm/customers', { firstName: 'Walkin', lastName: `Shopper${made.length}` });
      assert.equal(r.status, 201, `${v}: ${r.text}`);
      assert.equal(r.body.externalId, null, v);
      made.push(r.body);
    }
    assert.equal(new Set(made.map((c) => c.uuid)).size, made.length, 'each its own customer: customers without an externalId do not collide');
    const [first, second] = made;
    const created = (await ctx.tdb.db.query(`SELECT resource_external_id FROM events WHERE event_type = 'customerCreate' AND resource_uuid = $1`, [first.uuid])).rows;
    assert.deepEqual(created, [{ resource_external_id: null }], 'its customerCreate names it by uuid, externalId null');
    assert.deepEqual((await api().get(`/crm/customers/${first.uuid}`)).body, first);
    const found = await api().get('/crm/customers?q=shopper0');
    assert.deepEqual(found.body.data.map((c: any) => c.uuid), [first.uuid], 'found by search (its search text was NULL without an externalId)');
    // A full replace by uuid that gives none keeps none.
    const put = await api().put(`/crm/customers/${first.uuid}`, { firstName: 'Walk-in', lastName: 'Shopper0' });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.externalId, null);
    // The round trip: the integrator's system gives it its key; then it is found by it. A taken key is a 409.
    const named = await api().patch(`/crm/customers/${first.uuid}`, { externalId: 'pos-77' });
    assert.equal(named.status, 200, named.text);
    assert.equal((await api().get('/crm/customers/pos-77')).body.uuid, first.uuid);
    const taken = await api().patch(`/crm/customers/${second.uuid}`, { externalId: 'pos-77' });
    assert.equal(taken.status, 409, taken.text);
    assert.equal((await api().get(`/crm/customers/${second.uuid}`)).body.externalId, null, 'the refused PATCH changed nothing');
    // Merged by uuid: the result names it by uuid (it has no externalId), as does the refusal of a write to it, and the undo.
    const merged = await api().withVersion('2026-11').post('/crm/customers/pos-77/merge', { mergeWithCustomerIds: [second.uuid] });
    assert.equal(merged.status, 200, merged.text);
    assert.deepEqual(merged.body.mergedCustomerIds, [second.uuid]);
    const gone = await api().get(`/crm/customers/${second.uuid}`);
    assert.deepEqual([gone.body.status, gone.body.mergedInto], ['disabled', { uuid: first.uuid, externalId: 'pos-77' }]);
    const write = await api().patch(`/crm/customers/${second.uuid}`, { firstName: 'X' });
    assert.equal(write.status, 403, write.text);
    assert.match(write.body.errors[0].message, new RegExp(`customer ${second.uuid} is disabled: merged into pos-77`));
    const undo = await api().withVersion('2026-11').post(`/crm/merges/${merged.body.mergeUuid}/undo`, {});
    assert.equal(undo.status, 200, undo.text);
    assert.deepEqual(undo.body.restoredCustomerIds, [second.uuid]);
    // Bulk items still need it: it is their upsert key (Tulip: "Missing field externalId" on multiple-entities endpoints).
    const bulk = await api().post('/crm/customers/bulk', [{ firstName: 'No key' }]);
    assert.deepEqual(bulk.body.results.map((r: any) => r.status), [400]);
  });

  it('POST takes externalId: null as none (every version), so a customer read without one can be posted back; bulk items, PUT and PATCH still refuse null', async () => {
    // GET serves externalId: null for a customer without one; a client re-posting what it read was a 400 (a probe, 2026-11-30).
    const read = (await api().post('/crm/customers', { firstName: 'Copy', lastName: 'Me', emails: [{ email: 'copy@x.io' }] })).body;
    const { uuid, id, status, mergedInto, createdAt, updatedAt, ...writable } = read;
    assert.equal(writable.externalId, null);
    const made: string[] = [];
    for (const v of versionsWithCustomers) {
      const r = await api().withVersion(v).post('/crm/customers', writable);
      assert.equal(r.status, 201, `${v}: ${r.text}`);
      assert.deepEqual([r.body.externalId, r.body.firstName, r.body.emails], [null, 'Copy', read.emails], v);
      made.push(r.body.uuid);
    }
    assert.equal(new Set([uuid, ...made]).size, made.length + 1, 'each a customer of its own');
    const bulk = await api().post('/crm/customers/bulk', [{ externalId: null, firstName: 'No key' }]);
    assert.deepEqual(bulk.body.results.map((r: any) => [r.status, r.errors[0].moreInfo]), [[400, 'externalId']], bulk.text);
    for (const r of [await api().put(`/crm/customers/${uuid}`, { externalId: null }), await api().patch(`/crm/customers/${uuid}`, { externalId: null })]) {
      assert.equal(r.status, 400, r.text);
    }
  });
});
