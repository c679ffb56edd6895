// Tulip's TGEN CSV files through POST /crm/imports?format=tgen (SPEC §16, issue 23), on both engines: the kind and
// version from the file name, the header checked against the kind, records mapped onto bulk items with Tulip's field
// names, full update (replace) and partial update (patch, SET_AS_NULL clears), customers named by uuid or externalId.
// Each documented fact names its docs.tulip.com page. Addresses files merge into a customer's addresses, notes files
// upsert notes; both have apply steps of their own.
import assert from 'node:assert/strict';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { it } from 'node:test';
import pg from 'pg';
import { describeEachDb, describePg } from '../helpers/suite.ts';
import { untilWaitingForLock } from '../helpers/db.ts';
import { textGuard, type StagedLine } from '../../src/imports/parse.ts';
import { tgenFileOf, tgenRows } from '../../src/imports/tgen.ts';
import { batchSink } from '../../src/imports/staging.ts';
import { createImport } from '../../src/imports/store.ts';
import { mergeAddressOutcome } from '../../src/imports/tgen-apply.ts';

const mergeAddress = (list: Record<string, unknown>[], a: Record<string, unknown>) => mergeAddressOutcome(list, a).list;
import { importErrors, importFinished, useImportWorker } from '../helpers/imports.ts';

/** The staged lines TGEN makes of a file (no database: the uuid resolution comes after). */
async function linesOf(csv: string, name?: string): Promise<StagedLine[]> {
  const out: StagedLine[] = [];
  const sink = new Writable({ objectMode: true, write: (l, _e, cb) => (out.push(l), cb()) });
  await pipeline([Readable.from([Buffer.from(csv)]), textGuard(1e9), ...tgenRows(name ? tgenFileOf(name) : undefined), sink]);
  return out;
}

// https://docs.tulip.com/tgen/customers : columns, and "addresses[0].address1"-style array columns.
it('maps a customers full update record onto the bulk item with Tulip\'s names: every Tulip field set, lists from indexed columns', async () => {
  const csv = [
    'uuid,externalId,firstName,lastName,prefix,suffix,disabled,excludeFromCampaigns,image,attributes[0].value,attributes[0].attributeExternalId,addresses[0].address1,addresses[0].city,addresses[0].countryCode,addresses[0].zoneCode,addresses[0].postCode,addresses[0].type,addresses[0].isPrimary,addresses[1].address1,addresses[1].city,addresses[1].countryCode,addresses[1].postCode,addresses[1].type',
    ',t-1,Ada,Lovelace,Dr,PhD,,TRUE,https://x.io/a.png,gold,tier,1 Main St,Springfield,US,US-IL,62701,address-Home,true,,,,,',
    ',t-2,Bob,Stone,,,false,,,,,,,,,,,,2 High St,London,GB,N1 9GU,address-billing',
  ].join('\r\n');
  const [a, b] = await linesOf(csv, 'TGEN_customers_fullupdate_2025-08_batch1.csv');
  assert.equal(a.line, 2);
  // A full update gives each address whole: the fields its record leaves empty are emptied (no uuid: Bulb assigns one).
  const whole = (a: Record<string, unknown>) => ({
    externalId: null, address1: null, address2: null, city: null, countryCode: null, zoneCode: null, postCode: null, firstName: null,
    lastName: null, phone: null, emailAddress: null, type: null, disabled: false, isPrimary: false, ...a,
  });
  const expectA = {
    externalId: 't-1', firstName: 'Ada', lastName: 'Lovelace', prefix: 'Dr', suffix: 'PhD', excludeFromCampaigns: true, image: 'https://x.io/a.png',
    attributes: [{ value: 'gold', attributeExternalId: 'tier' }],
    addresses: [whole({ address1: '1 Main St', city: 'Springfield', countryCode: 'US', zoneCode: 'US-IL', postCode: '62701', type: 'address-Home', isPrimary: true })],
  };
  const expectB = {
    externalId: 't-2', firstName: 'Bob', lastName: 'Stone', prefix: null, suffix: null, disabled: false, excludeFromCampaigns: false, image: null,
    attributes: [], addresses: [whole({ address1: '2 High St', city: 'London', countryCode: 'GB', postCode: 'N1 9GU', type: 'address-billing' })],
  };
  assert.deepEqual(a.item, expectA);
  assert.deepEqual(b.item, expectB);
});

// https://docs.tulip.com/tgen/customers_partialupdate : "to clear field set value to string SET_AS_NULL"; addresses[0] "Address, External ID, UUID or SET_AS_NULL".
it('maps a partial update: an empty cell leaves the field, SET_AS_NULL clears it, removes a list element or empties a list', async () => {
  const csv = [
    'externalId,firstName,lastName,addresses,addresses[0].externalId,addresses[0].address1,addresses[0].city,addresses[1],attributes',
    'p-1,,SET_AS_NULL,,home,1 Main St,Springfield,SET_AS_NULL,SET_AS_NULL',
    'p-2,Bo,,SET_AS_NULL,,,,,',
    'p-3,Cy,,,,,,,',
  ].join('\n');
  const lines = await linesOf(csv, 'TGEN_customers_partialupdate_2025-12.csv');
  const raw = lines.map((l) => l.item ?? l.errors);
  assert.deepEqual(raw, [
    { externalId: 'p-1', lastName: null, addresses: [{ externalId: 'home', address1: '1 Main St', city: 'Springfield' }], attributes: [] },
    { externalId: 'p-2', firstName: 'Bo', addresses: [] },
    { externalId: 'p-3', firstName: 'Cy' },
  ]);
  // An address's booleans cleared are false, as the customer's own (they were null, which the address check refuses).
  const booleans = await linesOf('externalId,addresses[0].uuid,addresses[0].isPrimary,addresses[0].disabled,addresses[0].city\np-4,6f1c1f3e-0000-4000-8000-000000000001,SET_AS_NULL,SET_AS_NULL,SET_AS_NULL\n', 'TGEN_customers_partialupdate_2025-12.csv');
  assert.deepEqual(booleans.map((l) => l.item ?? l.errors), [
    { externalId: 'p-4', addresses: [{ uuid: '6f1c1f3e-0000-4000-8000-000000000001', isPrimary: false, disabled: false, city: null }] },
  ]);
});

it('a bad cell is a line error naming the column; SET_AS_NULL in a full update is refused', async () => {
  const lines = await linesOf(
    'externalId,firstName,lastName,disabled,excludeFromCampaigns\nb-1,A,B,yes,\nb-2,SET_AS_NULL,B,,\nb-3,C,D,,maybe\n',
    'TGEN_customers_fullupdate_2025-08_x.csv',
  );
  assert.deepEqual(lines.map((l) => l.errors?.map((e) => e.moreInfo)), [['disabled'], ['firstName'], ['excludeFromCampaigns']]);
  assert.equal(lines[0].errors![0].message, '"disabled" must be true or false, not "yes"');
});

// The API takes {"attributeExternalId":"attrA","value":""}: a record naming the attribute with an empty value cell gives
// that (it was a line error, missing field "attributes.0.value", refusing the whole customer: a probe, 2026-11-30).
it('an attribute named with its value cell empty has the value "" in a full update; in a partial one (an empty cell leaves a field as it is) it is a line error; without a value column it is missing', async () => {
  const header = 'externalId,firstName,lastName,attributes[0].attributeExternalId,attributes[0].value,attributes[1].attributeExternalId,attributes[1].value';
  const [l] = await linesOf(`${header}\ne-1,A,B,attrA,,attrB,x\n`, 'TGEN_customers_fullupdate_2025-08_e.csv');
  assert.deepEqual(l.errors, null);
  assert.deepEqual((l.item as any).attributes, [{ attributeExternalId: 'attrA', value: '' }, { attributeExternalId: 'attrB', value: 'x' }]);
  const [p] = await linesOf(`${header}\ne-1,A,B,attrA,,attrB,x\n`, 'TGEN_customers_partialupdate_2025-08_e.csv');
  assert.ok(p.errors?.some((e) => String(e.moreInfo).startsWith('attributes')), JSON.stringify(p.errors));
  // An element left wholly empty is still not sent.
  const [none] = await linesOf(`${header}\ne-2,A,B,,,attrB,x\n`, 'TGEN_customers_fullupdate_2025-08_e.csv');
  assert.deepEqual((none.item as any).attributes, [{ attributeExternalId: 'attrB', value: 'x' }]);
  const [noColumn] = await linesOf('externalId,firstName,lastName,attributes[0].attributeExternalId\ne-3,A,B,attrA\n', 'TGEN_customers_fullupdate_2025-08_e.csv');
  assert.deepEqual(noColumn.errors?.map((e) => e.moreInfo), ['attributes.0.value']);
});

// https://docs.tulip.com/tgen/customers : "TGEN_customers_fullupdate_2025-08_<optionalSuffix>.csv" (importType, apiVersion).
it('reads the kind, import type and version from a TGEN file name; refuses names that are not one or that Bulb does not import', () => {
  assert.deepEqual(tgenFileOf('TGEN_customers_partialupdate_2025-08_x.csv'), { kind: 'customers', importType: 'partialupdate', version: '2025-08' });
  assert.deepEqual(tgenFileOf('TGEN_customers_fullupdate_2025-12.csv'), { kind: 'customers', importType: 'fullupdate', version: '2025-12' });
  // https://docs.tulip.com/tgen/customernotes : "TGEN_customerNotes_fullupdate_2025-08_<optionalSuffix>.csv"
  assert.deepEqual(tgenFileOf('TGEN_customerNotes_fullupdate_2025-08_n.csv'), { kind: 'customerNotes', importType: 'fullupdate', version: '2025-08' });
  // https://docs.tulip.com/tgen/addresses : "TGEN_addresses_fullupdate_2025-08_<optionalSuffix>.csv"
  assert.deepEqual(tgenFileOf('TGEN_addresses_fullupdate_2025-08_a.csv'), { kind: 'addresses', importType: 'fullupdate', version: '2025-08' });
  for (const [name, why] of [
    ['customers.csv', /is not a TGEN file name/],
    ['TGEN_customers_fullupdate_2025-08_x.txt', /is not a TGEN file name/],
    ['TGEN_phoneLogs_fullupdate_2025-08_x.csv', /names the kind "phoneLogs"/], // https://docs.tulip.com/tgen/phonelogs
    ['TGEN_customerNotes_partialupdate_2025-08_x.csv', /names customerNotes partialupdate, which Bulb does not import/],
    ['TGEN_addresses_partialupdate_2025-08_x.csv', /names addresses partialupdate, which Bulb does not import/],
    ['TGEN_customers_upsert_2025-08_x.csv', /names the import type "upsert"/],
    ['TGEN_customers_fullupdate_2024-01_x.csv', /names the API version 2024-01/],
  ] as const) {
    assert.throws(() => tgenFileOf(name), (e: any) => e.status === 400 && why.test(e.message), name);
  }
});

// https://docs.tulip.com/tgen/customernotes : columns uuid, externalId, customer, employee, store, comments, isPrivate, isDeleted,
// type ("Allowed: CUSTOMER_OPTIN_LOG"), wishListId; customer, comments and type required.
it('maps a customer notes record onto a note (a full update: every field, defaults for those left empty); bad cells are line errors', async () => {
  const lines = await linesOf([
    'uuid,externalId,customer,employee,store,comments,isPrivate,isDeleted,type,wishListId',
    ',n-1,c-1,,s-9,Likes blue,true,,CUSTOMER_OPTIN_LOG,42',
    ',n-2,c-1,,,,,,CUSTOMER_OPTIN_LOG,',
    ',n-3,c-1,,,Hi,maybe,,NOTE,x1',
  ].join('\n'), 'TGEN_customerNotes_fullupdate_2025-08_n.csv');
  assert.deepEqual(lines[0].record, {
    uuid: null, externalId: 'n-1', customer: 'c-1', employee: null, store: 's-9', comments: 'Likes blue', isPrivate: true, isDeleted: false, type: 'CUSTOMER_OPTIN_LOG', wishListId: 42,
  });
  assert.equal(lines[0].item, null);
  assert.deepEqual(lines[1].errors!.map((e) => e.message), ['"comments" is required']);
  assert.deepEqual(lines[2].errors!.map((e) => e.moreInfo), ['isPrivate', 'wishListId', 'type']);
  await assert.rejects(linesOf('customer,comments\nc,x\n', 'TGEN_customerNotes_fullupdate_2025-08_n.csv'), /must have a type column/);
});

it('a notes record\'s lengths are counted in characters, as the notes API counts them (an emoji is one)', async () => {
  const emoji = '\u{1F600}';
  const lines = await linesOf([
    'externalId,customer,store,comments,type',
    `,${emoji.repeat(255)},${emoji.repeat(255)},${emoji.repeat(20000)},CUSTOMER_OPTIN_LOG`,
    `,c-1,${emoji.repeat(256)},x,CUSTOMER_OPTIN_LOG`,
  ].join('\n'), 'TGEN_customerNotes_fullupdate_2025-08_n.csv');
  assert.equal(lines[0].errors, null, JSON.stringify(lines[0].errors?.map((e) => e.message)));
  assert.equal((lines[0].record as any).comments, emoji.repeat(20000));
  assert.deepEqual(lines[1].errors!.map((e) => e.message), ['"store" must NOT have more than 255 characters']);
});

// https://docs.tulip.com/tgen/addresses : "If the UUID of the Address Resource exists …, or no UUID is provided and an External ID exists,
// then an update is performed. Otherwise, the resource is created."
it('an address replaces the one with its uuid, else the one with its externalId (keeping that uuid), else is added', () => {
  const list = [{ uuid: 'u1', externalId: 'home', address1: 'Old' }, { uuid: 'u2', address1: 'Work' }];
  assert.deepEqual(mergeAddress(list, { externalId: 'home', address1: 'New' }), [{ externalId: 'home', address1: 'New', uuid: 'u1' }, list[1]]);
  assert.deepEqual(mergeAddress(list, { uuid: 'u2', address1: 'Work 2' }), [list[0], { uuid: 'u2', address1: 'Work 2' }]);
  assert.deepEqual(mergeAddress(list, { externalId: 'other', address1: 'Third' }), [...list, { externalId: 'other', address1: 'Third' }]);
  assert.deepEqual(mergeAddress(list, { address1: 'Fourth' }), [...list, { address1: 'Fourth' }]);
  // Named in another case: the same address, its stored uuid kept (a new address until 2026-11-29, then refused).
  const stored = [{ uuid: 'c8b22309-0000-4000-8000-00000000abcd', address1: 'Old' }];
  assert.deepEqual(mergeAddress(stored, { uuid: 'C8B22309-0000-4000-8000-00000000ABCD', address1: 'New' }), [{ uuid: stored[0].uuid, address1: 'New' }]);
});

await describeEachDb('TGEN imports', (ctx) => {
  useImportWorker(ctx, 100);
  const api = () => ctx.srv.api.withVersion('2026-11');
  const csv = { 'content-type': 'text/csv' };
  const finished = (uuid: string) => importFinished(api(), uuid);
  const errorsOf = (uuid: string) => importErrors(api(), uuid);
  const tgen = async (name: string, file: string) => {
    const r = await api().post(`/crm/imports?format=tgen&name=${encodeURIComponent(name)}`, file, csv);
    assert.equal(r.status, 202, r.text);
    return { created: r.body, done: await finished(r.body.uuid) };
  };

  // https://docs.tulip.com/tgen/customers_partialupdate : "If the UUID of the Customer exists …, or no UUID is provided and an External ID exists,
  // then an update is performed on the provided fields. Note: to clear field set value to string SET_AS_NULL"
  it('a customers partial update patches: empty cells keep, SET_AS_NULL clears; a customer named by uuid alone is found', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'pu-1', firstName: 'Ada', lastName: 'Byron' }, { externalId: 'pu-2', firstName: 'Bob', lastName: 'Stone' }]);
    const uuid2 = (await api().get('/crm/customers/pu-2')).body.uuid;
    const { created, done } = await tgen('TGEN_customers_partialupdate_2025-08_day1.csv', [
      'uuid,externalId,firstName,lastName',
      ',pu-1,,SET_AS_NULL',
      `${uuid2},,Robert,`,
      `00000000-0000-4000-8000-000000000000,,Nobody,`,
      `${uuid2},pu-other,X,`,
      ',pu-3,New,Person',
    ].join('\n'));
    assert.equal(created.format, 'tgen');
    assert.equal(created.tgenFile, 'customers partialupdate 2025-08');
    assert.deepEqual([done.status, done.created, done.updated, done.failed], ['completed', 1, 2, 2]);
    const c1 = (await api().get('/crm/customers/pu-1')).body;
    assert.deepEqual([c1.firstName, c1.lastName], ['Ada', null]);
    const c2 = (await api().get('/crm/customers/pu-2')).body;
    assert.deepEqual([c2.firstName, c2.lastName], ['Robert', 'Stone']);
    assert.equal((await api().get('/crm/customers/pu-3')).body.firstName, 'New');
    const errs = await errorsOf(created.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors[0].moreInfo]), [[4, 'uuid'], [5, 'externalId']]);
    assert.match(errs[0].errors[0].message, /no customer has the uuid/);
  });

  it('a record naming by uuid a customer whose stored externalId is now reserved updates it, as PATCH by uuid does', async () => {
    // Stored before "export" was reserved (every write refuses it now): the record never gives it, so it is not
    // refused for it (it was, on customers and addresses files: found by a probe).
    assert.equal((await api().post('/crm/customers', { externalId: 'rsv-tgen', firstName: 'Old' })).status, 201);
    await ctx.tdb.db.query(`UPDATE customers SET external_id = 'export' WHERE external_id = 'rsv-tgen'`);
    const uuid = (await ctx.tdb.db.query<{ uuid: string }>(`SELECT uuid FROM customers WHERE external_id = 'export'`)).rows[0].uuid;
    const { done } = await tgen('TGEN_customers_partialupdate_2025-08_rsv.csv', `uuid,firstName\n${uuid},New\n`);
    assert.deepEqual([done.status, done.updated, done.failed], ['completed', 1, 0]);
    const addr = await tgen('TGEN_addresses_fullupdate_2025-08_rsv.csv', `customer,address1,city,countryCode,postCode,type\n${uuid},1 Main St,Oslo,NO,0150,home\n`);
    assert.deepEqual([addr.done.status, addr.done.failed], ['completed', 0]);
    const c = (await api().get(`/crm/customers/${uuid}`)).body;
    assert.deepEqual([c.externalId, c.firstName, c.addresses.map((a: any) => a.city)], ['export', 'New', ['Oslo']]);
    // A record that writes a reserved externalId itself is still refused.
    const sent = await tgen('TGEN_customers_partialupdate_2025-08_rsv2.csv', 'externalId,firstName\nbulk,X\n');
    assert.deepEqual([sent.done.failed, (await errorsOf(sent.created.uuid))[0].errors[0].moreInfo], [1, 'externalId']);
  });

  // https://docs.tulip.com/tgen/customers_partialupdate : "addresses[0].uuid: Unique Tulip identifier of the address. Required for patching."
  it('a partial update naming an address by uuid patches that address (its other fields kept); a full update gives it whole', async () => {
    const home = { externalId: 'pa-home', address1: '12 Byron St', address2: 'Flat 2', city: 'London', countryCode: 'GB', zoneCode: 'GB-LND', postCode: 'W1 1AA', type: 'home' };
    const work = { address1: '1 Rue de Rivoli', city: 'Paris', countryCode: 'FR', postCode: '75001', type: 'work' };
    await api().post('/crm/customers/bulk', [{ externalId: 'pa-1', addresses: [home, work] }, { externalId: 'pa-2', addresses: [home] }]);
    const [h1] = (await api().get('/crm/customers/pa-1')).body.addresses;
    const [h2] = (await api().get('/crm/customers/pa-2')).body.addresses;
    await tgen('TGEN_customers_partialupdate_2025-08_pa.csv', [
      'externalId,addresses[0].uuid,addresses[0].city,addresses[0].address2',
      `pa-1,${h1.uuid},Westminster,SET_AS_NULL`,
    ].join('\n'));
    const after = (await api().get('/crm/customers/pa-1')).body.addresses;
    assert.deepEqual(after, [{ ...h1, city: 'Westminster', address2: null }], 'the city patched, address2 cleared, the rest kept; the list is the one given');
    // Before (2026-11-28) the address became {uuid, city}: its street, postal code, country and type were emptied.
    // Checked as stored: a country that does not hold the kept zoneCode refuses the line, the customer unchanged.
    const bad = await tgen('TGEN_customers_partialupdate_2025-08_pb.csv', `externalId,addresses[0].uuid,addresses[0].countryCode\npa-1,${h1.uuid},FR\n`);
    assert.deepEqual([bad.done.updated, bad.done.failed], [0, 1]);
    assert.deepEqual((await errorsOf(bad.created.uuid)).map((e) => [e.line, e.errors[0].moreInfo]), [[2, 'addresses.0.zoneCode']]);
    assert.deepEqual((await api().get('/crm/customers/pa-1')).body.addresses, after);
    await tgen('TGEN_customers_fullupdate_2025-08_pa.csv', [
      'externalId,firstName,lastName,addresses[0].uuid,addresses[0].city',
      `pa-2,Pat,Ames,${h2.uuid},Westminster`,
    ].join('\n'));
    const whole = (await api().get('/crm/customers/pa-2')).body.addresses;
    assert.deepEqual(whole, [{ ...Object.fromEntries(Object.keys(h2).map((k) => [k, typeof h2[k] === 'boolean' ? false : null])), uuid: h2.uuid, city: 'Westminster' }], 'a full update replaces the address');
  });

  // https://docs.tulip.com/tgen/customers : full update, "If the UUID … exists …, an update is performed. Otherwise, the resource is created";
  // firstName and lastName are required columns.
  // https://docs.tulip.com/tgen/customers_partialupdate : addresses[0] "Address, External ID, UUID or SET_AS_NULL". Probe
  // (2026-11-28): a record that only removed an element emptied the list (every address gone, no line error), and two
  // records patching one address lost the first one's change.
  it('a partial update that only drops list elements is a line error (it emptied the list); two records patching one address keep both', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'sn-1', addresses: [
      { address1: '1 A St', city: 'NYC', countryCode: 'US' }, { address1: '2 B St', city: 'LA', countryCode: 'US' }, { address1: '3 C St', city: 'SF', countryCode: 'US' },
    ], attributes: [] }]);
    const before = (await api().get('/crm/customers/sn-1')).body.addresses;
    const drop = await tgen('TGEN_customers_partialupdate_2025-08_drop.csv', 'externalId,addresses[1]\nsn-1,SET_AS_NULL\n');
    assert.deepEqual([drop.done.updated, drop.done.failed], [0, 1]);
    const [err] = await errorsOf(drop.created.uuid);
    assert.equal(err.errors[0].moreInfo, 'addresses[1]');
    assert.match(err.errors[0].message, /would remove them all/);
    assert.deepEqual((await api().get('/crm/customers/sn-1')).body.addresses, before);
    // Keeping two by naming them drops the third.
    await tgen('TGEN_customers_partialupdate_2025-08_keep.csv', `externalId,addresses[0].uuid,addresses[1].uuid\nsn-1,${before[0].uuid},${before[2].uuid}\n`);
    assert.deepEqual((await api().get('/crm/customers/sn-1')).body.addresses, [before[0], before[2]]);
    await tgen('TGEN_customers_partialupdate_2025-08_fold.csv', [
      'externalId,addresses[0].uuid,addresses[0].city,addresses[0].address2',
      `sn-1,${before[0].uuid},Boston,`,
      `sn-1,${before[0].uuid},,Apt 2`,
    ].join('\n'));
    const [first] = (await api().get('/crm/customers/sn-1')).body.addresses;
    assert.deepEqual([first.uuid, first.address1, first.city, first.address2], [before[0].uuid, '1 A St', 'Boston', 'Apt 2']);
  });

  // https://docs.tulip.com/tgen/customers_partialupdate : addresses[0].uuid "Required for patching". Probe (2026-11-29): a
  // record clearing one field of addresses[0] without naming the address replaced every address with an empty one.
  it('a partial update clearing an address field without naming the address is a line error, the addresses unchanged', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'sx-1', addresses: [
      { address1: '1 A St', city: 'NYC', countryCode: 'US' }, { address1: '2 B St', city: 'LA', countryCode: 'US' },
    ] }]);
    const before = (await api().get('/crm/customers/sx-1')).body.addresses;
    const r = await tgen('TGEN_customers_partialupdate_2025-08_sx.csv', 'externalId,firstName,addresses[0].address1\nsx-1,Named,SET_AS_NULL\n');
    assert.deepEqual([r.done.updated, r.done.failed], [0, 1]);
    const [err] = await errorsOf(r.created.uuid);
    assert.equal(err.errors[0].moreInfo, 'addresses[0].address1');
    assert.match(err.errors[0].message, /names none: give addresses\[0\]\.uuid/);
    const after = (await api().get('/crm/customers/sx-1')).body;
    assert.deepEqual([after.addresses, after.firstName], [before, null], 'nothing of the record applied');
    // Named by its uuid, the same cell clears that address's field, the other address kept as given.
    await tgen('TGEN_customers_partialupdate_2025-08_sx2.csv', `externalId,addresses[0].uuid,addresses[0].address1,addresses[1].uuid\nsx-1,${before[0].uuid},SET_AS_NULL,${before[1].uuid}\n`);
    assert.deepEqual((await api().get('/crm/customers/sx-1')).body.addresses, [{ ...before[0], address1: null }, before[1]]);
  });

  // https://docs.tulip.com/tgen/customers_partialupdate : addresses[0].uuid "Required for patching"; docs.tulip.com/tgen/addresses
  // marks address1, city, countryCode, postCode and type required. Probe (2026-11-30): addresses[0].city alone replaced
  // every address with one holding only the city.
  it('a partial update\'s address naming no current address and lacking a required field is a line error naming the column', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'pn-1', addresses: [{ address1: '1 Main St', city: 'Paris', countryCode: 'FR', postCode: '75001', type: 'address-Home' }] }]);
    const before = (await api().get('/crm/customers/pn-1')).body;
    const r = await tgen('TGEN_customers_partialupdate_2025-08_pn.csv', 'externalId,firstName,addresses[0].city\npn-1,Named,Genève\n');
    assert.deepEqual([r.done.status, r.done.updated, r.done.failed], ['completed', 0, 1]);
    const errs = await errorsOf(r.created.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors[0].moreInfo]), [[2, 'addresses[0].address1']]);
    assert.match(errs[0].errors[0].message, /names no current address/);
    assert.deepEqual((await api().get('/crm/customers/pn-1')).body, before);
    // Named by its uuid it is patched; given whole without a key it is the customer's new address.
    const byUuid = await tgen('TGEN_customers_partialupdate_2025-08_pn2.csv', `externalId,addresses[0].uuid,addresses[0].city\npn-1,${before.addresses[0].uuid},Genève\n`);
    assert.deepEqual([byUuid.done.updated, byUuid.done.failed], [1, 0]);
    assert.deepEqual((await api().get('/crm/customers/pn-1')).body.addresses.map((a: any) => [a.address1, a.city]), [['1 Main St', 'Genève']]);
    const whole = await tgen('TGEN_customers_partialupdate_2025-08_pn3.csv', 'externalId,addresses[0].address1,addresses[0].city,addresses[0].countryCode,addresses[0].postCode,addresses[0].type\npn-1,2 Rue,Lyon,FR,69001,address-Home\n');
    assert.deepEqual([whole.done.updated, whole.done.failed], [1, 0]);
    assert.deepEqual((await api().get('/crm/customers/pn-1')).body.addresses.map((a: any) => a.city), ['Lyon']);
  });

  it('a customers full update storing an attribute\'s empty value: the customer is written with value "", as the API takes it', async () => {
    assert.equal((await api().post('/crm/customerAttributes', { externalId: 'ev-attr' })).status, 201);
    const { done } = await tgen('TGEN_customers_fullupdate_2025-08_ev.csv', 'externalId,firstName,lastName,attributes[0].attributeExternalId,attributes[0].value\nev-1,A,B,ev-attr,\n');
    assert.deepEqual([done.status, done.created, done.failed], ['completed', 1, 0]);
    assert.deepEqual((await api().get('/crm/customers/ev-1')).body.attributes, [{ attributeExternalId: 'ev-attr', value: '', languageExternalId: null }]);
  });

  it('a customers full update replaces Tulip\'s fields (those left empty are emptied) and creates unknown customers', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'fu-1', firstName: 'Old', lastName: 'Name', prefix: 'Mr', suffix: 'Jr' }]);
    const { done } = await tgen('TGEN_customers_fullupdate_2025-08_x.csv', [
      'externalId,firstName,lastName,prefix,excludeFromCampaigns,addresses[0].address1,addresses[0].city,addresses[0].countryCode,addresses[0].postCode,addresses[0].type',
      'fu-1,Ada,Lovelace,Dr,true,1 Main St,Springfield,US,62701,address-Home',
      'fu-2,Bob,Stone,,,,,,,',
    ].join('\n'));
    assert.deepEqual([done.status, done.created, done.updated, done.failed], ['completed', 1, 1, 0]);
    const c1 = (await api().get('/crm/customers/fu-1')).body;
    assert.deepEqual([c1.firstName, c1.prefix, c1.suffix, c1.excludeFromCampaigns], ['Ada', 'Dr', null, true]);
    assert.deepEqual([c1.addresses[0].address1, c1.addresses[0].city, c1.addresses[0].countryCode], ['1 Main St', 'Springfield', 'US']);
    assert.deepEqual((await api().get('/crm/customers/fu-2')).body.addresses, []);
  });

  // https://docs.tulip.com/tgen/customers lists attributes and addresses, and Tulip ships addresses in a file of their own
  // (docs.tulip.com/tgen/addresses): a customers full update whose header has no column of a list does not give it.
  it('a customers full update whose header has no address (or attribute) column keeps them; present and empty, it empties them', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'fk-1', firstName: 'Ada', lastName: 'Byron', addresses: [{ address1: '1 Main St', city: 'Paris', countryCode: 'FR', postCode: '75001', type: 'address-Home' }] }]);
    const attrs = [{ attributeExternalId: 'tier', value: 'gold', languageExternalId: null }];
    await ctx.tdb.db.query(`UPDATE customers SET attributes = $1::jsonb WHERE external_id = 'fk-1'`, [JSON.stringify(attrs)]);
    const before = (await api().get('/crm/customers/fk-1')).body;
    const events = async () => Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM events WHERE resource_external_id = 'fk-1'`)).rows[0].n);
    const eventsBefore = await events();
    const same = await tgen('TGEN_customers_fullupdate_2025-08.csv', 'externalId,firstName,lastName\nfk-1,Ada,Byron\n');
    assert.deepEqual([same.done.status, same.done.updated, same.done.unchanged], ['completed', 0, 1]);
    assert.deepEqual((await api().get('/crm/customers/fk-1')).body, before);
    assert.equal(await events(), eventsBefore);
    // Address columns present and empty: the record empties the addresses (the attributes, without a column, kept).
    const empty = await tgen('TGEN_customers_fullupdate_2025-08.csv', 'externalId,firstName,lastName,addresses[0].address1,addresses[0].city\nfk-1,Ada,Byron,,\n');
    assert.equal(empty.done.updated, 1);
    const after = (await api().get('/crm/customers/fk-1')).body;
    assert.deepEqual([after.addresses, after.attributes], [[], attrs]);
  });

  // https://docs.tulip.com/tgen/customers : "If the UUID of the Customer Resource exists in the system, or no UUID is provided and an
  // External ID exists, then an update is performed. Otherwise, the resource is created." A retailer moving from Tulip
  // keeps the uuids its systems hold: the customer created takes the record's uuid, and later files (a partial
  // update, an addresses file, notes) that name it by that uuid find it. Until 2026-11-28 it got a uuid of Bulb's.
  it('a customers record whose uuid no customer has creates the customer with that uuid; later files name it by it', async () => {
    const tulipUuid = '3f2b8c1e-7d4a-4e6b-9c21-5a8f0e7d6c4b';
    const other = '9a1c2e3f-4b5d-4c6e-8f70-112233445566';
    const { created, done } = await tgen('TGEN_customers_fullupdate_2025-08_move.csv', [
      'uuid,externalId,firstName,lastName',
      `${tulipUuid.toUpperCase()},mv-1,Ada,Lovelace`,
      `${other},mv-2,Bob,Stone`,
      `${other},mv-3,Cy,Twice`,
      `not-a-uuid,mv-4,Di,Bad`,
    ].join('\n'));
    assert.deepEqual([done.status, done.created, done.failed], ['completed', 3, 1]);
    assert.equal((await api().get('/crm/customers/mv-1')).body.uuid, tulipUuid);
    assert.equal((await api().get(`/crm/customers/${tulipUuid}`)).body.externalId, 'mv-1');
    // A uuid given twice for two new customers: the first record takes it, the second gets a uuid of Bulb's.
    assert.equal((await api().get('/crm/customers/mv-2')).body.uuid, other);
    const third = (await api().get('/crm/customers/mv-3')).body.uuid;
    assert.notEqual(third, other);
    assert.deepEqual((await errorsOf(created.uuid)).map((e) => [e.line, e.errors[0].moreInfo, e.errors[0].message]), [[5, 'uuid', '"uuid" must match format "uuid"']]);
    assert.equal((await api().get('/crm/customers/mv-4')).status, 404);
    // Named by that uuid alone: a partial update, an addresses file, a note (which keeps its own given uuid too).
    await tgen('TGEN_customers_partialupdate_2025-08_move.csv', `uuid,firstName\n${tulipUuid},Augusta\n`);
    await tgen('TGEN_addresses_fullupdate_2025-08_move.csv', `customer,externalId,address1,city,countryCode,postCode,type\n${tulipUuid},a-1,12 Byron St,London,GB,W1 1AA,home\n`);
    const noteUuid = '0b7e6a52-1c3d-4f5e-a6b7-c8d9e0f1a2b3';
    const notes = await tgen('TGEN_customerNotes_fullupdate_2025-08_move.csv', `uuid,customer,comments,type\n${noteUuid},${tulipUuid},Opted in,CUSTOMER_OPTIN_LOG\n`);
    assert.deepEqual([notes.done.created, notes.done.failed], [1, 0]);
    const c = (await api().get(`/crm/customers/${tulipUuid}`)).body;
    assert.deepEqual([c.firstName, c.lastName, c.addresses.map((a: any) => a.address1)], ['Augusta', 'Lovelace', ['12 Byron St']]);
    const note = (await api().get(`/crm/customerNotes/${noteUuid}`)).body;
    assert.deepEqual([note.uuid, note.customer, note.comments], [noteUuid, tulipUuid, 'Opted in']);
    // The same note file again updates that note (its uuid exists now) instead of creating another.
    const again = await tgen('TGEN_customerNotes_fullupdate_2025-08_move2.csv', `uuid,customer,comments,type\n${noteUuid},${tulipUuid},Changed,CUSTOMER_OPTIN_LOG\n`);
    assert.deepEqual([again.done.created, again.done.updated], [0, 1]);
    assert.equal((await api().get(`/crm/customers/${tulipUuid}/notes`)).body.data.length, 1);
  });

  it('a record naming by uuid a customer an earlier record of the file creates with that uuid updates it, in one chunk or two', async () => {
    // A probe (2026-11-29): in one chunk the second record made a second customer, with Bulb's uuid and no externalId.
    const uuid = '5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f';
    const { done } = await tgen('TGEN_customers_fullupdate_2025-08_twice.csv', [
      'uuid,externalId,firstName,lastName,addresses[0].externalId,addresses[0].city,addresses[0].countryCode',
      `${uuid},tw-1,Fay,Twicely,h,Paris,FR`,
      `${uuid.toUpperCase()},,Fay,Twicely,h,Lyon,FR`,
    ].join('\n'));
    assert.deepEqual([done.status, done.created, done.failed], ['completed', 1, 0]);
    const c = (await api().get(`/crm/customers/${uuid}`)).body;
    assert.deepEqual([c.externalId, c.addresses.map((a: any) => [a.externalId, a.city])], ['tw-1', [['h', 'Lyon']]]);
    assert.equal(Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM customers WHERE last_name = 'Twicely'`)).rows[0].n), 1, 'one customer');
  });

  // A probe (2026-11-29): a record with a uuid no customer had and no externalId, then one with that uuid and an
  // externalId, made two customers when a chunk boundary fell between them (the uuid's keyless one, and the externalId's
  // with a uuid of Bulb's) and, in one chunk, one customer with that uuid AND that externalId: the import gave a
  // customer without an externalId one. Uuids were resolved at upload, before the file's earlier records were applied.
  // Each file below runs in one chunk, and again with 100 padding records at each gap (a chunk is 100 lines here).
  it('records naming one uuid give the same customers whatever the chunks: a record\'s uuid is the customer an earlier record left with it', async () => {
    let n = 0;
    const next = () => `0190bbbb-0000-7000-8000-${String(++n).padStart(12, '0')}`;
    const byLast = async (last: string) => (await ctx.tdb.db.query(`SELECT uuid::text, external_id, first_name FROM customers WHERE last_name = $1 ORDER BY id`, [last])).rows;
    /** `records(x, tag)` with x a fresh uuid, in one chunk and then split at each gap; `check` sees each outcome. */
    const eachSplit = async (records: (x: string, tag: string) => string[], check: (x: string, tag: string, errors: any[], done: any) => Promise<void>, setup?: (tag: string) => Promise<unknown>) => {
      for (let gap = 0; gap < records('', '').length; gap++) {
        const x = next();
        const tag = `ch${n}`;
        await setup?.(tag);
        const lines = records(x, tag);
        const pads = gap === 0 ? [] : Array.from({ length: 100 }, (_, i) => `,${tag}-pad${i},P,Pad`);
        const file = ['uuid,externalId,firstName,lastName', ...lines.slice(0, gap), ...pads, ...lines.slice(gap)].join('\n');
        const { created, done } = await tgen(`TGEN_customers_fullupdate_2025-08_${tag}.csv`, file);
        assert.equal(done.status, 'completed');
        const errors = (await errorsOf(created.uuid)).map((e) => ({ ...e, line: e.line > 1 + gap ? e.line - pads.length : e.line }));
        await check(x, tag, errors, done).catch((err) => {
          err.message = `${gap === 0 ? 'one chunk' : `split before record ${gap + 1}`}: ${err.message}`;
          throw err;
        });
      }
    };
    // The probe's file: the first record creates customer x without an externalId; the second gives x an externalId,
    // which an import never does (a line error, as when x existed before the file).
    await eachSplit((x, t) => [`${x},,Keyless,${t}`, `${x},${t}-e2,WithExt,${t}`], async (x, t, errors, done) => {
      assert.deepEqual([done.failed, done.created + done.updated + done.unchanged + done.failed], [1, done.rowsDone]);
      assert.deepEqual((await byLast(t)).map((c: any) => [c.uuid, c.external_id, c.first_name]), [[x, null, 'Keyless']]);
      assert.deepEqual(errors.map((e) => [e.line, e.errors[0].moreInfo]), [[3, 'externalId']]);
      assert.match(errors[0].errors[0].message, new RegExp(`^the customer with uuid ${x} has no externalId, not "${t}-e2"`));
    });
    // The other order: the keyless record updates the customer the first one created with x.
    await eachSplit((x, t) => [`${x},${t}-e1,First,${t}`, `${x},,Second,${t}`], async (x, t, errors) => {
      assert.deepEqual((await byLast(t)).map((c: any) => [c.uuid, c.external_id, c.first_name]), [[x, `${t}-e1`, 'Second']]);
      assert.deepEqual(errors, []);
    });
    // A customer named by externalId in the chunk after the one that created it with x, then by x alone: one customer.
    await eachSplit((x, t) => [`${x},${t}-f,First,${t}`, `,${t}-f,Again,${t}`, `${x},,ByUuid,${t}`], async (x, t, errors) => {
      assert.deepEqual((await byLast(t)).map((c: any) => [c.uuid, c.external_id, c.first_name]), [[x, `${t}-f`, 'ByUuid']]);
      assert.deepEqual(errors, []);
    });
    // x beside the externalId of a customer that exists: that customer is updated, keeping its uuid; x is still no
    // customer's, so the record naming x alone creates it.
    await eachSplit((x, t) => [`${x},${t}-old,Updated,${t}`, `${x},,Keyless,${t}`], async (x, t, errors) => {
      assert.deepEqual((await byLast(t)).map((c: any) => [c.uuid === x, c.external_id, c.first_name]), [[false, `${t}-old`, 'Updated'], [true, null, 'Keyless']]);
      assert.deepEqual(errors, []);
    }, (t) => api().post('/crm/customers', { externalId: `${t}-old`, firstName: 'Old', lastName: t }));
    // A customer an earlier record created without x (a uuid of Bulb's) keeps it when a later record names it beside x;
    // x is still no customer's.
    await eachSplit((x, t) => [`,${t}-g,First,${t}`, `${x},${t}-g,Second,${t}`, `${x},,Keyless,${t}`], async (x, t, errors) => {
      const rows = await byLast(t);
      assert.deepEqual(rows.map((c: any) => [c.uuid === x, c.external_id, c.first_name]), [[false, `${t}-g`, 'Second'], [true, null, 'Keyless']]);
      assert.deepEqual(errors, []);
    });
  });

  it('a file whose name or header does not match its kind is refused with a 400 naming the problem, leaving nothing behind', async () => {
    const before = Number((await ctx.tdb.db.query('SELECT count(*) AS n FROM imports')).rows[0].n);
    const cases: [string, string, RegExp][] = [
      // https://docs.tulip.com/tgen/addresses : an addresses file's header (customer, address1, …) under a customers name.
      ['TGEN_customers_fullupdate_2025-08_x.csv', 'customer,address1,city,countryCode,postCode,type\nc,1 Main,X,US,1,address-Home\n', /named a TGEN customers file but its header is that of addresses/],
      ['TGEN_customers_partialupdate_2025-08_x.csv', 'externalId,nickname\nx,y\n', /unknown column "nickname"/],
      ['TGEN_customers_partialupdate_2025-08_x.csv', 'externalId,addresses[0].line1\nx,y\n', /unknown column "addresses\[0\]\.line1": addresses\[0\] has uuid, externalId, address1/],
      ['TGEN_customers_fullupdate_2025-08_x.csv', 'externalId,firstName\nx,y\n', /must have a lastName column/],
      ['TGEN_customers_partialupdate_2025-08_x.csv', 'externalId,addresses[50].city,attributes[99].value\nx,y,z\n', /"addresses\[50\]\.city": at most 50 addresses per customer/],
      ['TGEN_customers_partialupdate_2025-08_x.csv', 'firstName\nx\n', /neither/],
      // Two spellings of one index (a probe, 2026-11-29: both passed the duplicate check, the last value won).
      ['TGEN_customers_partialupdate_2025-08_x.csv', 'externalId,addresses[1].city,addresses[01].city\nx,Lyon,Nice\n', /"addresses\[01\]\.city": write the index without leading zeros \(addresses\[1\]\)/],
      ['TGEN_users_partialupdate_2025-08_x.csv', 'username\nx\n', /names the kind "users"/],
      ['nope.csv', 'externalId\nx\n', /is not a TGEN file name/],
    ];
    for (const [name, file, why] of cases) {
      const r = await api().post(`/crm/imports?format=tgen&name=${encodeURIComponent(name)}`, file, csv);
      assert.equal(r.status, 400, `${name}: ${r.text}`);
      assert.equal(r.body.errors[0].errorCode, 'InvalidParameterError');
      assert.ok(r.body.errors.some((e: any) => why.test(e.message)), `${name}: ${r.text}`);
    }
    const ndjsonTgen = await api().post('/crm/imports?format=tgen', '{"externalId":"x"}\n', { 'content-type': 'application/x-ndjson' });
    assert.equal(ndjsonTgen.status, 415);
    assert.match(ndjsonTgen.body.errors[0].message, /text\/csv/);
    const nameWithCsv = await api().post('/crm/imports?format=csv&name=TGEN_customers_fullupdate_2025-08_x.csv', 'externalId\nx\n', csv);
    assert.equal(nameWithCsv.status, 400);
    assert.equal(Number((await ctx.tdb.db.query('SELECT count(*) AS n FROM imports')).rows[0].n), before);
  });

  // https://docs.tulip.com/tgen/addresses : one address per record, of the customer in the customer column (its uuid).
  it('an addresses import merges each line\'s address into its customer\'s addresses; an unknown or disabled customer is a line error', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'ad-1' }, { externalId: 'ad-2' }, { externalId: 'ad-3' }, { externalId: 'ad-4' }]);
    assert.equal((await api().post('/crm/customers/ad-2/merge', { mergeWithCustomerIds: ['ad-3'] })).status, 200);
    const u1 = '11111111-1111-4111-8111-111111111111';
    const u2 = '22222222-2222-4222-8222-222222222222';
    await ctx.tdb.db.query(`UPDATE customers SET addresses = $2::jsonb WHERE external_id = $1`, ['ad-1', JSON.stringify([{ uuid: u1, externalId: 'home', address1: 'Old', city: 'X' }])]);
    await ctx.tdb.db.query(`UPDATE customers SET addresses = $2::jsonb WHERE external_id = $1`, ['ad-4', JSON.stringify([{ uuid: u2, address1: 'Four', city: 'Y' }])]);
    // Staged as the mapper stages them: the apply step on its own (stored addresses written as they are, uuids chosen here).
    const imp = await createImport(ctx.tdb.db, { format: 'tgen', tgenFile: 'addresses fullupdate 2025-08', withEvents: true, source: 'TULIP_API', tokenUuid: null });
    const sink = batchSink(ctx.tdb.db, imp.id);
    const item = (externalId: string, a: object) => ({ externalId, addresses: [a] }) as any;
    await sink.write([
      { line: 2, item: item('ad-1', { externalId: 'home', address1: 'New 1', city: 'Y' }), errors: null },
      { line: 3, item: item('ad-1', { address1: 'Second', city: 'Z' }), errors: null },
      { line: 4, item: item('nobody', { address1: 'A' }), errors: null },
      { line: 5, item: item('ad-3', { address1: 'B' }), errors: null },
      { line: 6, item: null, errors: [{ message: 'bad', errorCode: 'InvalidParameterError', moreInfo: 'x' }] },
      { line: 7, item: item('ad-4', { uuid: u2, address1: 'Four 2', city: 'Y' }), errors: null },
    ]);
    assert.equal(await sink.finish(6, async () => {}), true);
    const done = await finished(imp.uuid);
    // Counted per line (docs/imports-tgen.md): ad-1's two lines each changed its addresses, as ad-4's line did (ad-1's
    // second line was counted unchanged until 2026-11-30: counts were one per customer written); events per customer.
    assert.deepEqual([done.status, done.created, done.updated, done.unchanged, done.failed], ['completed', 0, 3, 0, 3]);
    const a1 = (await ctx.tdb.db.query(`SELECT addresses FROM customers WHERE external_id = 'ad-1'`)).rows[0].addresses;
    assert.equal(a1.length, 2);
    assert.deepEqual([a1[0].uuid, a1[0].externalId, a1[0].address1, a1[0].city], [u1, 'home', 'New 1', 'Y']);
    assert.deepEqual([a1[1].address1, a1[1].city], ['Second', 'Z']);
    const a4 = (await ctx.tdb.db.query(`SELECT addresses FROM customers WHERE external_id = 'ad-4'`)).rows[0].addresses;
    assert.deepEqual([a4.length, a4[0].uuid, a4[0].address1], [1, u2, 'Four 2']);
    const errs = await errorsOf(imp.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors[0].errorCode]), [[4, 'NotFound'], [5, 'CustomerDisabled'], [6, 'InvalidParameterError']]);
    const events = (await ctx.tdb.db.query(`SELECT resource_external_id AS x FROM events WHERE event_type = 'customerUpdate' AND resource_external_id IN ('ad-1', 'ad-4') ORDER BY id`)).rows.map((r: any) => r.x);
    assert.deepEqual(events, ['ad-1', 'ad-4']);
  });

  it('an addresses file is refused when a required column is missing or a column is unknown', async () => {
    const r = await api().post(`/crm/imports?format=tgen&name=TGEN_addresses_fullupdate_2025-08_x.csv`, 'customer,address1,city,countryCode,type,line2\nc,1,X,US,address-Home,y\n', csv);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors.map((e: any) => e.message), ['unknown column "line2" for a TGEN addresses file', 'a TGEN addresses file must have a postCode column']);
  });

  it('an addresses file through the API: the customer named by uuid or externalId', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'af-1' }, { externalId: 'af-2' }]);
    const uuid1 = (await api().get('/crm/customers/af-1')).body.uuid;
    const { done } = await tgen('TGEN_addresses_fullupdate_2025-08_x.csv', [
      'customer,uuid,address1,city,countryCode,zoneCode,postCode,externalId,type,isPrimary',
      `${uuid1},,1 Main St,Springfield,US,US-IL,62701,home,address-Home,true`,
      'af-2,,2 High St,London,GB,,N1 9GU,,address-billing,',
      'af-2,,3 Low St,London,GB,,N1 9GV,,address-billing,maybe',
    ].join('\n'));
    assert.deepEqual([done.status, done.updated, done.failed], ['completed', 2, 1]);
    const a1 = (await api().get('/crm/customers/af-1')).body.addresses;
    assert.deepEqual([a1.length, a1[0].address1, a1[0].zoneCode, a1[0].isPrimary, a1[0].externalId], [1, '1 Main St', 'US-IL', true, 'home']);
    assert.equal((await api().get('/crm/customers/af-2')).body.addresses[0].postCode, 'N1 9GU');
  });

  // https://docs.tulip.com/tgen/addresses : "… Otherwise, the resource is created"; docs/tulip-customers.md "Address uuids":
  // an address without a uuid or externalId is the first current one with the same content.
  it('an addresses file without address keys delivered again changes nothing: a line equal to a current address is that address', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'ak-1' }, { externalId: 'ak-2' }]);
    const uuid1 = (await api().get('/crm/customers/ak-1')).body.uuid;
    const file = [
      'customer,address1,address2,city,countryCode,zoneCode,postCode,firstName,lastName,phone,emailAddress,type,disabled,isPrimary',
      `${uuid1},0 Rue Ünï,,Paris,FR,,75001,,,,,,false,false`,
      `${uuid1},1 Rue Ünï,,Paris,FR,,75001,,,,,address-Home,false,true`,
      'ak-2,2 Rue Ünï,,Lyon,FR,,69001,,,,,,,',
    ].join('\n');
    const first = await tgen('TGEN_addresses_fullupdate_2025-08.csv', file);
    assert.equal(first.done.status, 'completed');
    const before = await Promise.all(['ak-1', 'ak-2'].map(async (x) => (await api().get(`/crm/customers/${x}`)).body));
    assert.deepEqual(before.map((c) => c.addresses.length), [2, 1]);
    const events = async () => Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM events WHERE resource_external_id IN ('ak-1', 'ak-2')`)).rows[0].n);
    const eventsBefore = await events();
    const again = await tgen('TGEN_addresses_fullupdate_2025-08.csv', file);
    assert.deepEqual([again.done.status, again.done.created, again.done.updated, again.done.unchanged, again.done.failed], ['completed', 0, 0, 3, 0]);
    const after = await Promise.all(['ak-1', 'ak-2'].map(async (x) => (await api().get(`/crm/customers/${x}`)).body));
    assert.deepEqual(after, before);
    assert.equal(await events(), eventsBefore);
    // A line with new content is still a new address (Tulip: "Otherwise, the resource is created").
    const more = await tgen('TGEN_addresses_fullupdate_2025-08.csv', 'customer,address1,city,countryCode,postCode,type\nak-2,2 Rue Ünï,Lyon,FR,69002,\n');
    assert.equal(more.done.updated, 1);
    assert.deepEqual((await api().get('/crm/customers/ak-2')).body.addresses.map((a: any) => a.postCode), ['69001', '69002']);
  });

  it('an addresses file\'s line errors name the file\'s column (countryCode), not the patch\'s path (addresses.0.countryCode)', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'ae-1' }]);
    const uuid1 = (await api().get('/crm/customers/ae-1')).body.uuid;
    const r = await tgen('TGEN_addresses_fullupdate_2025-08_ae.csv', [
      'customer,address1,city,countryCode,postCode,type,address2',
      'ae-1,1 Main St,Paris,XX1,75001,address-Home,',
      `${uuid1},1 Main St,Paris,XX1,75001,address-Home,`,
      // address1 and address2 too (the names with a digit were missed), and the customer named as its column.
      `ae-1,1 Main St,Paris,FR,75001,address-Home,${'x'.repeat(65)}`,
      `${'c'.repeat(256)},1 Main St,Paris,FR,75001,address-Home,`,
      '..,1 Main St,Paris,FR,75001,address-Home,',
    ].join('\n'));
    assert.deepEqual([r.done.status, r.done.failed], ['completed', 5]);
    const errs = await errorsOf(r.created.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors.map((x: any) => x.moreInfo)]), [[2, ['countryCode']], [3, ['countryCode']], [4, ['address2']], [5, ['customer']], [6, ['customer']]]);
    assert.ok(errs[4].errors[0].message.endsWith('name the customer by its uuid'), errs[4].errors[0].message);
    assert.ok(errs.every((e) => e.errors.every((x: any) => !x.message.includes('addresses.0'))), JSON.stringify(errs));
    assert.ok(errs[2].errors[0].message.startsWith('"address2"'), errs[2].errors[0].message);
    assert.ok(errs[3].errors[0].message.startsWith('"customer"'), errs[3].errors[0].message);
  });

  // https://docs.tulip.com/tgen/customers : externalId "Required: No"; "If the UUID of the Customer Resource exists in the
  // system, or no UUID is provided and an External ID exists, then an update is performed. Otherwise, the resource is
  // created." Customers without an externalId (the API creates them too): a record with neither key creates one; a
  // record with a uuid only updates the customer with it, or creates it with that uuid (a retailer moving from Tulip).
  it('records without an externalId: in a full update neither key creates a customer, a uuid alone creates it with that uuid; a partial update by uuid updates one', async () => {
    const api26 = api();
    const keyless = (await api26.post('/crm/customers', { firstName: 'No', lastName: 'Key' })).body;
    const moved = '5d3c2b1a-0f9e-4d8c-b7a6-123456789abc';
    const count = async () => Number((await ctx.tdb.db.query('SELECT count(*) AS n FROM customers')).rows[0].n);
    const before = await count();
    const full = await tgen('TGEN_customers_fullupdate_2025-08_kl.csv', [
      'uuid,externalId,firstName,lastName',
      `${moved},,Moved,Over`,
      ',,Walk,In',
      ',,Walk,In',
      `${moved},,Moved again,Over`,
    ].join('\n'));
    assert.deepEqual([full.done.status, full.done.created, full.done.updated, full.done.failed], ['completed', 3, 0, 0]);
    assert.equal(await count(), before + 3, 'two walk-ins (each its own customer) and the moved one');
    const m = (await api26.get(`/crm/customers/${moved}`)).body;
    assert.deepEqual([m.uuid, m.firstName, m.lastName, m.externalId], [moved, 'Moved again', 'Over', null], 'created with its uuid; its two lines folded');
    const walkIns = (await ctx.tdb.db.query(`SELECT uuid::text, external_id FROM customers WHERE first_name = 'Walk'`)).rows;
    assert.equal(walkIns.length, 2);
    assert.ok(walkIns.every((w: any) => w.external_id === null));
    // A partial update only updates (docs.tulip.com/tgen/customers_partialupdate): by uuid, a customer without an
    // externalId (the one the API made, the one the file made); neither key is a line error, as before.
    const { created, done } = await tgen('TGEN_customers_partialupdate_2025-08_kl.csv', [
      'uuid,externalId,firstName,lastName',
      `${keyless.uuid.toUpperCase()},,Named,`,
      `${moved},,Moved thrice,`,
      ',,Walk,In',
      `${keyless.uuid},kl-x,Keyed,`,
    ].join('\n'));
    assert.deepEqual([done.status, done.created, done.updated, done.failed], ['completed', 0, 2, 2]);
    assert.equal(await count(), before + 3, 'nothing created by the partial update');
    const named = (await api26.get(`/crm/customers/${keyless.uuid}`)).body;
    assert.deepEqual([named.firstName, named.lastName, named.externalId], ['Named', 'Key', null], 'updated by its uuid, fields not given kept');
    assert.equal((await api26.get(`/crm/customers/${moved}`)).body.firstName, 'Moved thrice');
    // Line 4 names no customer (a partial update creates none); line 5 gives an externalId to a customer without one (an import does not; PATCH does).
    assert.deepEqual((await errorsOf(created.uuid)).map((e) => [e.line, e.errors[0].moreInfo]), [[4, 'externalId'], [5, 'externalId']]);
    // Each created customer has its customerCreate event, naming it by uuid (externalId null).
    const createdUuids = [moved, ...walkIns.map((w: any) => w.uuid)];
    const events = (await ctx.tdb.db.query(`SELECT resource_uuid::text AS uuid, resource_external_id FROM events WHERE event_type = 'customerCreate' AND resource_uuid = ANY($1::uuid[])`, [createdUuids])).rows;
    assert.deepEqual(events.map((e: any) => e.uuid).sort(), [...createdUuids].sort());
    assert.ok(events.every((e: any) => e.resource_external_id === null));
    // An addresses file names such a customer by its uuid (any case): its addresses merged in as any customer's, with
    // its customerUpdate event; an unknown uuid is a NotFound line error.
    const updatesOfMoved = async () => Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM events WHERE event_type = 'customerUpdate' AND resource_uuid = $1`, [moved])).rows[0].n);
    const updatesBefore = await updatesOfMoved();
    const addr = await tgen('TGEN_addresses_fullupdate_2025-08_kl.csv', [
      'customer,address1,city,countryCode,postCode,type,externalId',
      `${moved},1 Main St,Springfield,US,62701,address-Home,home`,
      `${moved.toUpperCase()},2 Side St,Springfield,US,62702,address-billing,`,
      `${keyless.uuid},9 Rue Haute,Paris,FR,75001,address-Home,`,
      `${keyless.uuid.replace(/.$/, keyless.uuid.endsWith('0') ? '1' : '0')},1 Nowhere,Paris,FR,75001,address-Home,`,
    ].join('\n'));
    assert.deepEqual([addr.done.status, addr.done.updated, addr.done.unchanged, addr.done.failed], ['completed', 3, 0, 1], 'three lines changing their customers (counted per line)');
    assert.deepEqual((await errorsOf(addr.created.uuid)).map((e) => [e.line, e.errors[0].errorCode, e.errors[0].moreInfo]), [[5, 'NotFound', 'customer']]);
    assert.deepEqual((await api26.get(`/crm/customers/${moved}`)).body.addresses.map((a: any) => [a.address1, a.externalId]), [['1 Main St', 'home'], ['2 Side St', null]]);
    assert.deepEqual((await api26.get(`/crm/customers/${keyless.uuid}`)).body.addresses.map((a: any) => a.address1), ['9 Rue Haute']);
    assert.equal(await updatesOfMoved(), updatesBefore + 1, 'one customerUpdate for the chunk');
    // A second file updates the address its externalId names, keeping the other.
    const again = await tgen('TGEN_addresses_fullupdate_2025-08_kl2.csv', `customer,address1,city,countryCode,postCode,type,externalId\n${moved},5 New St,Springfield,US,62703,address-Home,home\n`);
    assert.deepEqual([again.done.updated, again.done.failed], [1, 0]);
    assert.deepEqual((await api26.get(`/crm/customers/${moved}`)).body.addresses.map((a: any) => [a.address1, a.postCode]), [['5 New St', '62703'], ['2 Side St', '62702']]);
    // With events=false, the address is merged in and no customerUpdate is written.
    const updates = await updatesOfMoved();
    const quiet = await api().post(`/crm/imports?format=tgen&events=false&name=TGEN_addresses_fullupdate_2025-08_kl3.csv`, `customer,address1,city,countryCode,postCode,type,externalId\n${moved},7 Quiet St,Springfield,US,62704,address-Home,home\n`, csv);
    assert.equal(quiet.status, 202, quiet.text);
    assert.deepEqual([(await finished(quiet.body.uuid)).updated], [1]);
    assert.equal((await api26.get(`/crm/customers/${moved}`)).body.addresses[0].address1, '7 Quiet St');
    assert.equal(await updatesOfMoved(), updates, 'no event for an import with events=false');
  });

  // https://docs.tulip.com/tgen/customernotes : "If the UUID of the Customer note exists in the system, or no UUID is provided and an
  // External ID exists, then an update is performed. Otherwise a new Customer note is created."
  it('a customer notes import creates notes, updates the one with its uuid or externalId; bad references are line errors', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'nc-1' }, { externalId: 'nc-2' }, { externalId: 'nc-3' }]);
    assert.equal((await api().post('/crm/customers/nc-2/merge', { mergeWithCustomerIds: ['nc-3'] })).status, 200);
    const c1 = (await api().get('/crm/customers/nc-1')).body.uuid;
    const first = await tgen('TGEN_customerNotes_fullupdate_2025-08_a.csv', [
      'externalId,customer,comments,type,isPrivate,store',
      `tn-1,${c1},Opted in at the till,CUSTOMER_OPTIN_LOG,true,s-1`,
      'tn-2,nc-1,Second,CUSTOMER_OPTIN_LOG,,',
      'tn-3,nobody,X,CUSTOMER_OPTIN_LOG,,',
      'tn-4,nc-3,Y,CUSTOMER_OPTIN_LOG,,',
    ].join('\n'));
    assert.deepEqual([first.done.status, first.done.created, first.done.updated, first.done.failed], ['completed', 2, 0, 2]);
    const notes = (await api().get('/crm/customers/nc-1/notes')).body.data;
    const n1 = notes.find((n: any) => n.externalId === 'tn-1');
    assert.deepEqual([n1.comments, n1.type, n1.isPrivate, n1.store, n1.customer], ['Opted in at the till', 'CUSTOMER_OPTIN_LOG', true, 's-1', c1]);
    assert.deepEqual((await errorsOf(first.created.uuid)).map((e: any) => [e.line, e.errors[0].errorCode]), [[4, 'NotFound'], [5, 'CustomerDisabled']]);
    // By uuid (its externalId kept when the record leaves it empty), by externalId; a note stays with its customer.
    const second = await tgen('TGEN_customerNotes_fullupdate_2025-08_b.csv', [
      'uuid,externalId,customer,comments,type',
      `${n1.uuid},,nc-1,Changed,CUSTOMER_OPTIN_LOG`,
      ',tn-2,nc-1,Second,CUSTOMER_OPTIN_LOG',
      ',tn-2,nc-2,Moved?,CUSTOMER_OPTIN_LOG',
    ].join('\n'));
    assert.deepEqual([second.done.created, second.done.updated, second.done.unchanged, second.done.failed], [0, 1, 1, 1]);
    const again = (await api().get(`/crm/customerNotes/${n1.uuid}`)).body;
    assert.deepEqual([again.comments, again.externalId, again.isPrivate, again.store], ['Changed', 'tn-1', false, null]);
    const events = (await ctx.tdb.db.query(`SELECT event_type AS t FROM events WHERE resource_external_id LIKE 'tn-%' ORDER BY id`)).rows.map((r: any) => r.t);
    assert.deepEqual(events, ['customerNoteCreate', 'customerNoteCreate', 'customerNoteUpdate']);
  });

  // The source system's notes file sent again after a merge names each note's customer as it knows it: the merged-away one.
  it('a notes file sent again after a merge updates the moved notes named with their former customer; another customer is still refused', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'rm-p' }, { externalId: 'rm-s' }, { externalId: 'rm-o' }]);
    const lines = (comments: string, customer = 'rm-s') => ['externalId,customer,comments,type', `rm-n1,${customer},${comments},CUSTOMER_OPTIN_LOG`].join('\n');
    const first = await tgen('TGEN_customerNotes_fullupdate_2025-08_rm1.csv', lines('first'));
    assert.deepEqual([first.done.created, first.done.failed, await errorsOf(first.created.uuid)], [1, 0, []]);
    assert.equal((await api().post('/crm/customers/rm-p/merge', { mergeWithCustomerIds: ['rm-s'] })).status, 200);
    const again = await tgen('TGEN_customerNotes_fullupdate_2025-08_rm2.csv', lines('again'));
    assert.deepEqual([again.done.updated, again.done.failed, await errorsOf(again.created.uuid)], [1, 0, []]);
    const note = (await api().get('/crm/customerNotes/rm-n1')).body;
    assert.deepEqual([note.comments, note.customer], ['again', (await api().get('/crm/customers/rm-p')).body.uuid]);
    const other = await tgen('TGEN_customerNotes_fullupdate_2025-08_rm3.csv', lines('moved?', 'rm-o'));
    assert.deepEqual((await errorsOf(other.created.uuid)).map((e: any) => [e.line, e.errors[0].moreInfo]), [[2, 'customer']]);
  });

  it('a notes file editing a deactivated customer\'s note is a CustomerDisabled line error, as the notes API refuses it; re-activated, it goes', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'dn-c' }]);
    const file = (comments: string) => ['externalId,customer,comments,type', `dn-n1,dn-c,${comments},CUSTOMER_OPTIN_LOG`].join('\n');
    assert.deepEqual([(await tgen('TGEN_customerNotes_fullupdate_2025-08_dn1.csv', file('first'))).done.created], [1]);
    assert.equal((await api().patch('/crm/customers/dn-c', { disabled: true })).status, 200);
    assert.equal((await api().put('/crm/customerNotes/dn-n1', { customer: 'dn-c', comments: 'api', type: 'CUSTOMER_OPTIN_LOG' })).status, 403);
    const refused = await tgen('TGEN_customerNotes_fullupdate_2025-08_dn2.csv', file('edited'));
    assert.deepEqual((await errorsOf(refused.created.uuid)).map((e: any) => [e.line, e.errors[0].errorCode]), [[2, 'CustomerDisabled']]);
    assert.equal((await api().get('/crm/customerNotes/dn-n1')).body.comments, 'first');
    assert.equal((await api().patch('/crm/customers/dn-c', { disabled: false })).status, 200);
    assert.deepEqual([(await tgen('TGEN_customerNotes_fullupdate_2025-08_dn3.csv', file('edited'))).done.updated], [1]);
  });

  // One file's records are applied in line order, each seeing the ones before it (a chunk is applied as a set).
  it('a notes file\'s records see the earlier ones: create then update, an externalId moved on, a swap, conflicts', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'sq-1' }, { externalId: 'sq-2' }, { externalId: 'sq-3' }]);
    assert.equal((await api().post('/crm/customers/sq-2/merge', { mergeWithCustomerIds: ['sq-3'] })).status, 200);
    assert.equal((await api().post('/crm/associates', { externalId: 'sq-emp' })).status, 201);
    const e1 = (await api().post('/crm/customerNotes', { customer: 'sq-1', type: 'CUSTOMER_OPTIN_LOG', comments: 'E1', externalId: 'sq-e1' })).body;
    const e2 = (await api().post('/crm/customerNotes', { customer: 'sq-1', type: 'CUSTOMER_OPTIN_LOG', comments: 'E2', externalId: 'sq-e2' })).body;
    const given = '0b7e6a52-1c3d-4f5e-a6b7-c8d9e0f1a2c4';
    const { created, done } = await tgen('TGEN_customerNotes_fullupdate_2025-08_seq.csv', [
      'uuid,externalId,customer,employee,comments,type,isPrivate',
      ',sq-n1,sq-1,,One,CUSTOMER_OPTIN_LOG,', // 2: created
      ',sq-n1,sq-1,sq-emp,One changed,CUSTOMER_OPTIN_LOG,', // 3: updated (the note line 2 made)
      ',sq-n1,sq-1,sq-emp,One changed,CUSTOMER_OPTIN_LOG,', // 4: unchanged
      `${given},sq-n2,sq-1,,Two,CUSTOMER_OPTIN_LOG,true`, // 5: created with its uuid
      `${given},sq-n3,sq-1,,Two,CUSTOMER_OPTIN_LOG,true`, // 6: updated: its externalId moves on to sq-n3
      ',sq-n2,sq-1,,Three,CUSTOMER_OPTIN_LOG,', // 7: created: sq-n2 is free again
      `${given},sq-n1,sq-1,,Two,CUSTOMER_OPTIN_LOG,`, // 8: Conflict: sq-n1 is line 2's note's
      `${e1.uuid},sq-tmp,sq-1,,E1,CUSTOMER_OPTIN_LOG,`, // 9–11: E1 and E2 swap externalIds
      `${e2.uuid},sq-e1,sq-1,,E2,CUSTOMER_OPTIN_LOG,`,
      `${e1.uuid},sq-e2,sq-1,,E1,CUSTOMER_OPTIN_LOG,`,
      ',sq-n1,sq-2,,Moved?,CUSTOMER_OPTIN_LOG,', // 12: a note stays with its customer
      ',sq-n4,sq-3,,Disabled,CUSTOMER_OPTIN_LOG,', // 13: CustomerDisabled
      ',sq-n5,sq-1,nobody,X,CUSTOMER_OPTIN_LOG,', // 14: no such employee
      ',sq-n6,nobody,,X,CUSTOMER_OPTIN_LOG,', // 15: no such customer
      `${given},,sq-1,,Two again,CUSTOMER_OPTIN_LOG,`, // 16: updated, keeping sq-n3
    ].join('\n'));
    assert.deepEqual([done.status, done.created, done.updated, done.unchanged, done.failed], ['completed', 3, 6, 1, 5]);
    assert.deepEqual((await errorsOf(created.uuid)).map((e: any) => [e.line, e.errors[0].errorCode]), [
      [8, 'Conflict'], [12, 'InvalidParameterError'], [13, 'CustomerDisabled'], [14, 'InvalidParameterError'], [15, 'NotFound'],
    ]);
    const notes = (await api().get('/crm/customers/sq-1/notes')).body.data;
    const by = (ext: string) => notes.find((n: any) => n.externalId === ext);
    assert.deepEqual(notes.map((n: any) => n.externalId).sort(), ['sq-e1', 'sq-e2', 'sq-n1', 'sq-n2', 'sq-n3']);
    assert.deepEqual([by('sq-n1').comments, by('sq-n1').employee !== null], ['One changed', true]);
    assert.deepEqual([by('sq-n3').uuid, by('sq-n3').comments, by('sq-n3').isPrivate], [given, 'Two again', false]);
    assert.equal(by('sq-n2').comments, 'Three');
    assert.deepEqual([by('sq-e1').uuid, by('sq-e2').uuid], [e2.uuid, e1.uuid]);
    const events = (await ctx.tdb.db.query(`SELECT event_type AS t, resource_external_id AS x FROM events
      WHERE event_type LIKE 'customerNote%' AND resource_external_id LIKE 'sq-%' ORDER BY id`)).rows.map((r: any) => `${r.t} ${r.x}`);
    assert.deepEqual(events, [
      'customerNoteCreate sq-e1', 'customerNoteCreate sq-e2', // the API's
      'customerNoteCreate sq-n1', 'customerNoteUpdate sq-n1', 'customerNoteCreate sq-n2', 'customerNoteUpdate sq-n3', 'customerNoteCreate sq-n2',
      'customerNoteUpdate sq-tmp', 'customerNoteUpdate sq-e1', 'customerNoteUpdate sq-e2', 'customerNoteUpdate sq-n3',
    ]);
  });

  // The notes API refuses a wishListId over Number.MAX_SAFE_INTEGER; a notes file stored it rounded (…993 as …992).
  it('a notes record\'s wishListId over 9007199254740991 is a line error naming the column, as the notes API says; the bound itself is stored exactly', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'wl-1' }]);
    const { created, done } = await tgen('TGEN_customerNotes_fullupdate_2025-08_wl.csv', [
      'externalId,customer,comments,type,wishListId',
      'wl-n1,wl-1,Max,CUSTOMER_OPTIN_LOG,9007199254740991',
      'wl-n2,wl-1,Over,CUSTOMER_OPTIN_LOG,9007199254740993',
      'wl-n3,wl-1,Far over,CUSTOMER_OPTIN_LOG,123456789012345678901234',
    ].join('\n'));
    assert.deepEqual([done.status, done.created, done.failed], ['completed', 1, 2]);
    const errs = await errorsOf(created.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors.map((x: any) => [x.errorCode, x.moreInfo, x.message])]), [
      [3, [['InvalidParameterError', 'wishListId', '"wishListId" must be <= 9007199254740991']]],
      [4, [['InvalidParameterError', 'wishListId', '"wishListId" must be <= 9007199254740991']]],
    ]);
    const notes = (await api().get('/crm/customers/wl-1/notes')).body.data;
    assert.deepEqual(notes.map((n: any) => [n.externalId, n.wishListId]), [['wl-n1', 9007199254740991]]);
    // The notes API draws the same line (its value may also be null: an empty cell here).
    const direct = await api().post('/crm/customerNotes', { customer: 'wl-1', type: 'CUSTOMER_OPTIN_LOG', comments: 'x', wishListId: 9007199254740992 });
    assert.equal(direct.status, 400);
    assert.match(direct.body.errors[0].message, /^"wishListId" must be <= 9007199254740991\b/);
  });

  // https://docs.tulip.com/tgen/customers_partialupdate : SET_AS_NULL clears a field; uuid and externalId name the customer.
  it('a partial update with SET_AS_NULL as the uuid or externalId is a line error: no customer named "SET_AS_NULL", none changed', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'sn-1', firstName: 'Old' }]);
    const { created, done } = await tgen('TGEN_customers_partialupdate_2025-08_sn.csv', [
      'uuid,externalId,firstName',
      ',SET_AS_NULL,Ghost',
      'SET_AS_NULL,sn-1,Ann',
      ',sn-1,SET_AS_NULL',
    ].join('\n'));
    assert.deepEqual([done.status, done.created, done.updated, done.failed], ['completed', 0, 1, 2]);
    const errs = await errorsOf(created.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors.map((x: any) => [x.errorCode, x.moreInfo, x.message])]), [
      [2, [['InvalidParameterError', 'externalId', '"externalId" cannot be cleared: it names the customer']]],
      [3, [['InvalidParameterError', 'uuid', '"uuid" cannot be cleared: it names the customer']]],
    ]);
    assert.equal((await api().get('/crm/customers/SET_AS_NULL')).status, 404);
    assert.equal((await api().get('/crm/customers/sn-1')).body.firstName, null); // line 4 only
  });

  // The API refuses more than 50 addresses, and two addresses of one customer with the same uuid or externalId; the
  // merge of an addresses file wrote such lists.
  it('an addresses record whose merged list the API would refuse (51 addresses, an externalId twice) is a line error, the customer unchanged', async () => {
    const fifty = Array.from({ length: 50 }, (_, i) => ({ externalId: `a${i}`, address1: `${i} Main St`, city: 'X' }));
    await api().post('/crm/customers/bulk', [
      { externalId: 'al-1', addresses: fifty },
      { externalId: 'al-2', addresses: [{ externalId: 'home', address1: 'Home St', city: 'X' }, { externalId: 'work', address1: 'Work St', city: 'Y' }] },
    ]);
    const before2 = (await api().get('/crm/customers/al-2')).body;
    const home = before2.addresses[0].uuid;
    const { created, done } = await tgen('TGEN_addresses_fullupdate_2025-08_al.csv', [
      'customer,uuid,externalId,address1,city,countryCode,postCode,type',
      'al-1,,a50,New St,X,US,1,address-Home', // a 51st
      'al-1,,a0,Replaced St,X,US,1,address-Home', // replaces one: still 50
      `al-2,${home},work,Home St,X,US,1,address-Home`, // home given work's externalId
      'al-2,,,Third St,Z,US,1,address-Home', // a new one: taken
    ].join('\n'));
    assert.deepEqual([done.status, done.updated, done.failed], ['completed', 2, 2]);
    const errs = await errorsOf(created.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors.map((x: any) => [x.errorCode, x.moreInfo])]), [
      [2, [['InvalidParameterError', 'addresses']]],
      [4, [['InvalidParameterError', 'addresses.1.externalId']]],
    ]);
    assert.match(errs[0].errors[0].message, /^"addresses" must NOT have more than 50 items/);
    assert.equal(errs[1].errors[0].message, '"addresses.1.externalId" repeats the externalId of another address');
    const a1 = (await api().get('/crm/customers/al-1')).body.addresses;
    assert.deepEqual([a1.length, a1[0].externalId, a1[0].address1], [50, 'a0', 'Replaced St']);
    assert.ok(!a1.some((a: any) => a.externalId === 'a50'));
    const a2 = (await api().get('/crm/customers/al-2')).body.addresses;
    assert.deepEqual(a2.map((a: any) => [a.uuid, a.externalId, a.address1]), [...before2.addresses.map((a: any) => [a.uuid, a.externalId, a.address1]), [a2[2].uuid, null, 'Third St']]);
    // Both lists are ones the API takes back as they are.
    assert.equal((await api().patch('/crm/customers/al-1', { addresses: a1 })).status, 200);
    assert.equal((await api().patch('/crm/customers/al-2', { addresses: a2 })).status, 200);
  });

  // docs/tulip-customers.md: a deactivated customer takes writes; bulk and imports test merged_into, not the status.
  it('an addresses import takes a deactivated customer\'s address (it stays deactivated); a merged-away one is CustomerDisabled', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'dz-1', disabled: true }, { externalId: 'dz-2' }, { externalId: 'dz-3' }]);
    assert.equal((await api().post('/crm/customers/dz-2/merge', { mergeWithCustomerIds: ['dz-3'] })).status, 200);
    const { created, done } = await tgen('TGEN_addresses_fullupdate_2025-08_dz.csv', [
      'customer,address1,city,countryCode,postCode,type',
      'dz-1,1 Main St,Springfield,US,62701,address-Home',
      'dz-3,2 Main St,Springfield,US,62701,address-Home',
    ].join('\n'));
    assert.deepEqual([done.status, done.updated, done.failed], ['completed', 1, 1]);
    const c1 = (await api().get('/crm/customers/dz-1')).body;
    assert.deepEqual([c1.disabled, c1.addresses.length, c1.addresses[0].address1], [true, 1, '1 Main St']);
    const errs = await errorsOf(created.uuid);
    assert.deepEqual(errs.map((e) => [e.line, e.errors[0].errorCode]), [[3, 'CustomerDisabled']]);
    assert.match(errs[0].errors[0].message, /merged into dz-2/);
  });

  it('without a name, a customers header is read as a customers full update', async () => {
    const r = await api().post('/crm/imports?format=tgen', 'externalId,firstName,lastName\nnn-1,Ann,Lee\n', csv);
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.tgenFile, 'customers fullupdate 2025-08');
    const done = await finished(r.body.uuid);
    assert.deepEqual([done.status, done.created], ['completed', 1]);
  });

  // https://docs.tulip.com/tgen/addresses : the addresses file's columns (customer, address1, …).
  it('without a name, an addresses header is read (and applied) as an addresses file: it never creates the customer it names', async () => {
    const r = await api().post('/crm/imports?format=tgen', 'customer,address1,city,countryCode,postCode,type\nnobody-zz,1 Main St,Springfield,US,62701,address-Home\n', csv);
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.tgenFile, 'addresses fullupdate 2025-08');
    const done = await finished(r.body.uuid);
    assert.deepEqual([done.status, done.created, done.failed], ['completed', 0, 1]);
    assert.equal((await api().get('/crm/customers/nobody-zz')).status, 404);
  });
});

// A notes chunk looks its notes up, then writes them as sets: a transaction that gives a note one of the chunk's
// externalIds in between makes the chunk run again, and the run sees that note (PostgreSQL: two sessions).
await describePg('TGEN notes imports beside concurrent writers', (ctx) => {
  useImportWorker(ctx, 100);
  const api = () => ctx.srv.api.withVersion('2026-11');
  const csv = { 'content-type': 'text/csv' };
  /** Starts a notes file while another session holds an uncommitted note with `externalId`; commits it once the chunk waits. */
  const racing = async (name: string, file: string, externalId: string) => {
    const other = new pg.Client({ connectionString: ctx.tdb.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`INSERT INTO notes (customer_id, type, comments, external_id)
        SELECT id, 'CUSTOMER_OPTIN_LOG', 'theirs', $1 FROM customers WHERE external_id = 'rc-1'`, [externalId]);
      const r = await api().post(`/crm/imports?format=tgen&name=${name}`, file, csv);
      assert.equal(r.status, 202, r.text);
      await untilWaitingForLock(ctx.tdb.db, 'the chunk waits for the other session\'s note');
      await other.query('COMMIT');
      return { uuid: r.body.uuid, done: await importFinished(api(), r.body.uuid) };
    } finally {
      await other.end();
    }
  };

  it('a new note whose externalId another session took first: the chunk runs again and updates that note', async () => {
    await api().post('/crm/customers/bulk', [{ externalId: 'rc-1' }]);
    const { done } = await racing('TGEN_customerNotes_fullupdate_2025-08_rc1.csv', 'externalId,customer,comments,type\nrc-new,rc-1,Mine,CUSTOMER_OPTIN_LOG\n', 'rc-new');
    assert.deepEqual([done.status, done.created, done.updated, done.failed], ['completed', 0, 1, 0]);
    const notes = (await api().get('/crm/customers/rc-1/notes')).body.data.filter((n: any) => n.externalId === 'rc-new');
    assert.deepEqual(notes.map((n: any) => n.comments), ['Mine']);
  });

  it('a note moved onto an externalId another session took first: the chunk runs again and the line is a Conflict', async () => {
    const e = (await api().post('/crm/customerNotes', { customer: 'rc-1', type: 'CUSTOMER_OPTIN_LOG', comments: 'E', externalId: 'rc-e' })).body;
    const { uuid, done } = await racing('TGEN_customerNotes_fullupdate_2025-08_rc2.csv', `uuid,externalId,customer,comments,type\n${e.uuid},rc-moved,rc-1,E,CUSTOMER_OPTIN_LOG\n`, 'rc-moved');
    assert.deepEqual([done.status, done.updated, done.failed], ['completed', 0, 1]);
    assert.deepEqual((await importErrors(api(), uuid)).map((x: any) => [x.line, x.errors[0].errorCode]), [[2, 'Conflict']]);
    assert.equal((await api().get(`/crm/customerNotes/${e.uuid}`)).body.externalId, 'rc-e');
  });
});
