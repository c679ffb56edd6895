// POST /crm/customers/bulk: set-based (one transaction, a constant number of statements), per-item results,
// 2026-11 patch semantics vs replace until 2025-04 (SPEC §10.1), disabled customers, duplicates in one request.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Db, Queryable } from '../../src/db/db.ts';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('bulk', (ctx) => {
  const v = (version: string) => ctx.srv.api.withVersion(version);
  const events = async (xid: string) =>
    (await ctx.tdb.db.query(`SELECT event_type FROM events WHERE resource_external_id = $1 ORDER BY id`, [xid])).rows.map((r) => r.event_type);
  const full = { firstName: 'Ann', lastName: 'Lee', emails: [{ email: 'ann@x.io' }], phones: [{ number: '+15550001' }], loyaltyTier: 'gold' };

  it('answers per item: 201 created, 200 updated, 400 invalid (errors per field), in order', async () => {
    await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'b-2', firstName: 'Old' }]);
    const r = await v('2026-11').post('/crm/customers/bulk', [
      { externalId: 'b-1', firstName: 'New' },
      { externalId: 'b-2', firstName: 'Changed' },
      { firstName: 'no externalId', extra: true },
      7,
    ]);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.results.map((x: any) => [x.index, x.status]), [[0, 201], [1, 200], [2, 400], [3, 400]]);
    assert.equal(r.body.results[0].customer.firstName, 'New');
    assert.equal(r.body.results[1].customer.firstName, 'Changed');
    const fields = r.body.results[2].errors.map((e: any) => e.moreInfo);
    assert.ok(fields.includes('externalId') && fields.includes('extra'), JSON.stringify(fields));
    // An item that is not an object says so, naming the item (it said "value must be object", moreInfo "").
    assert.deepEqual(r.body.results[3].errors, [{ message: 'the item must be a customer (a JSON object), not a number', errorCode: 'InvalidParameterError', moreInfo: 'item' }]);
    assert.deepEqual(await events('b-1'), ['customerCreate']);
    assert.deepEqual(await events('b-2'), ['customerCreate', 'customerUpdate']);
  });

  it('an item holding a NUL or a lone surrogate is its own 400; the others are applied (both bulk methods)', async () => {
    for (const method of ['post', 'put'] as const) {
      const r = await v('2026-11')[method]('/crm/customers/bulk', [
        { externalId: `bnul-${method}`, firstName: 'a\u0000b' },
        { externalId: `bok-${method}`, firstName: 'ok' },
        { externalId: `bsur-${method}`, lastName: 'x\ud800' },
      ]);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.results.map((x: any) => x.status), [400, 201, 400], r.text);
      assert.deepEqual(r.body.results[0].errors.map((e: any) => e.moreInfo), ['firstName']);
      assert.deepEqual(r.body.results[2].errors.map((e: any) => e.moreInfo), ['lastName']);
      assert.equal((await v('2026-11').get(`/crm/customers/bnul-${method}`)).status, 404, 'nothing written for the bad item');
    }
  });

  it('an email POST /crm/customers refuses is refused in bulk too (one email format for every door)', async () => {
    const odd = 'a"b\\c@example.org'; // no space or @ inside: a naive check would pass it
    const one = await v('2026-11').post('/crm/customers', { externalId: 'b-fmt-1', emails: [{ email: odd }] });
    assert.equal(one.status, 400);
    const r = await v('2026-11').post('/crm/customers/bulk', [
      { externalId: 'b-fmt-2', emails: [{ email: odd }] },
      { externalId: 'b-fmt-3', emails: [{ email: 'Ann.Lee+tag@example.org' }] },
    ]);
    assert.deepEqual(r.body.results.map((x: any) => x.status), [400, 201]);
    assert.ok(r.body.results[0].errors.some((e: any) => /emails/.test(e.moreInfo)), JSON.stringify(r.body.results[0].errors));
    assert.deepEqual(await events('b-fmt-2'), []);
  });

  it('2026-11: an item for an existing customer is a patch (omitted fields kept, null clears)', async () => {
    await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'p-1', ...full }]);
    const r = await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'p-1', lastName: null, phones: null, loyaltyTier: 'silver' }]);
    const c = r.body.results[0].customer;
    assert.equal(r.body.results[0].status, 200);
    assert.equal(c.firstName, 'Ann', 'omitted: kept');
    assert.deepEqual(c.emails, [{ email: 'ann@x.io' }], 'omitted: kept');
    assert.equal(c.lastName, null, 'null clears');
    assert.deepEqual(c.phones, [], 'null clears a list');
    assert.equal(c.loyaltyTier, 'silver');
    const got = await ctx.srv.api.get('/crm/customers/p-1');
    assert.deepEqual(got.body, c);
  });

  for (const version of ['2022-08', '2025-04']) {
    it(`${version}: an item for an existing customer replaces it (omitted fields emptied), as before`, async () => {
      const xid = `r-${version}`;
      await v('2026-11').post('/crm/customers/bulk', [{ externalId: xid, ...full }]);
      const r = await v(version).post('/crm/customers/bulk', [{ externalId: xid, loyaltyTier: 'silver' }]);
      const c = r.body.results[0].customer;
      assert.equal(r.body.results[0].status, 200);
      assert.equal(c.firstName, null);
      assert.equal(c.lastName, null);
      assert.deepEqual(c.emails, []);
      assert.deepEqual(c.phones, []);
      assert.equal(c.loyaltyTier, 'silver');
      // the e-mail filter follows the emptied list
      assert.equal((await ctx.srv.api.get('/crm/customers?email=ann@x.io&externalId=' + xid)).body.data.length, 0);
    });
  }

  it('a no-op item writes nothing and emits nothing (both semantics)', async () => {
    const first = await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'n-1', ...full }]);
    const before = await events('n-1');
    const patch = await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'n-1', firstName: 'Ann' }]);
    const replace = await v('2025-04').post('/crm/customers/bulk', [{ externalId: 'n-1', ...full, addresses: [], socialProfiles: [] }]);
    for (const r of [patch, replace]) {
      assert.equal(r.body.results[0].status, 200);
      assert.equal(r.body.results[0].customer.updatedAt, first.body.results[0].customer.updatedAt);
    }
    assert.deepEqual(await events('n-1'), before);
  });

  // 403: https://docs.tulip.com/integrating/aerial/errors/troubleshooterrors (refused for the resource's state)
  it('a disabled (merged-away) customer: that item 403 CustomerDisabled, the others applied', async () => {
    await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'd-primary' }, { externalId: 'd-gone' }]);
    const m = await v('2025-04').post('/crm/customers/d-primary/merge', { mergeWithCustomerIds: ['d-gone'] });
    assert.equal(m.status, 200);
    for (const version of ['2022-08', '2026-11']) {
      const before = await events('d-gone');
      const r = await v(version).post('/crm/customers/bulk', [{ externalId: 'd-gone', firstName: 'X' }, { externalId: `d-ok-${version}` }]);
      assert.equal(r.body.results[0].status, 403);
      assert.equal(r.body.results[0].errors[0].errorCode, 'CustomerDisabled');
      assert.match(r.body.results[0].errors[0].moreInfo, /d-primary/);
      assert.equal(r.body.results[1].status, 201);
      assert.deepEqual(await events('d-gone'), before);
      assert.equal((await ctx.srv.api.get('/crm/customers/d-gone')).body.firstName, null);
    }
  });

  it('duplicates of one externalId in a request are folded in order into one patch, applied once', async () => {
    const r = await v('2026-11').post('/crm/customers/bulk', [
      { externalId: 'dup', firstName: 'A', lastName: 'First' },
      { externalId: 'other' },
      { externalId: 'dup', firstName: 'B' },
    ]);
    assert.deepEqual(r.body.results.map((x: any) => x.status), [201, 201, 200]);
    for (const i of [0, 2]) {
      assert.equal(r.body.results[i].customer.firstName, 'B');
      assert.equal(r.body.results[i].customer.lastName, 'First');
    }
    assert.deepEqual(await events('dup'), ['customerCreate']);
    const old = await v('2025-04').post('/crm/customers/bulk', [{ externalId: 'dup', firstName: 'C', lastName: 'L' }, { externalId: 'dup', firstName: 'D' }]);
    assert.deepEqual(old.body.results.map((x: any) => [x.status, x.customer.firstName, x.customer.lastName]), [[200, 'D', null], [200, 'D', null]], 'replace: the last one wins');
  });

  // The items' address lists apply one after another (probe, 2026-11-28: the last item's list alone lost the first's change).
  it('items of one externalId changing different fields of one address keep both changes; a new customer\'s too', async () => {
    const api = ctx.srv.api.withVersion('2026-11');
    await api.post('/crm/customers', { externalId: 'baf-1', addresses: [{ address1: '1 Main', city: 'NYC', countryCode: 'US', postCode: '10001' }] });
    const [a] = (await api.get('/crm/customers/baf-1')).body.addresses;
    const r = await api.post('/crm/customers/bulk', [
      { externalId: 'baf-1', addresses: [{ uuid: a.uuid, city: 'Boston' }] },
      { externalId: 'baf-2', addresses: [{ externalId: 'home', address1: '2 High St', city: 'London', countryCode: 'GB' }] },
      { externalId: 'baf-1', addresses: [{ uuid: a.uuid, address2: 'Apt 2' }] },
      { externalId: 'baf-2', addresses: [{ externalId: 'home', postCode: 'N1 9GU' }] },
    ]);
    assert.deepEqual(r.body.results.map((x: any) => x.status), [200, 201, 200, 200]);
    const [one] = (await api.get('/crm/customers/baf-1')).body.addresses;
    assert.deepEqual([one.uuid, one.address1, one.city, one.address2, one.postCode], [a.uuid, '1 Main', 'Boston', 'Apt 2', '10001']);
    const two = (await api.get('/crm/customers/baf-2')).body.addresses;
    assert.deepEqual(two.map((x: any) => [x.externalId, x.address1, x.city, x.postCode]), [['home', '2 High St', 'London', 'N1 9GU']]);
    // Checked as stored, as a sequential application would: a later item's country that no longer holds an earlier
    // item's zoneCode refuses that item; the earlier one is applied (the whole group was refused until 2026-11-29).
    const bad = await api.post('/crm/customers/bulk', [
      { externalId: 'baf-3', addresses: [{ externalId: 'w', city: 'Austin', countryCode: 'US', zoneCode: 'US-TX' }] },
      { externalId: 'baf-3', addresses: [{ externalId: 'w', countryCode: 'FR' }] },
    ]);
    assert.deepEqual(bad.body.results.map((x: any) => [x.status, x.errors?.[0]?.moreInfo]), [[201, undefined], [400, 'addresses.0.zoneCode']]);
    assert.deepEqual((await api.get('/crm/customers/baf-3')).body.addresses.map((x: any) => [x.city, x.countryCode, x.zoneCode]), [['Austin', 'US', 'US-TX']]);
  });

  it('items of one existing customer: one whose address would be refused at its turn is; those before and after it are applied', async () => {
    const api = ctx.srv.api.withVersion('2026-11');
    await api.post('/crm/customers', { externalId: 'seq-1', firstName: 'Old', addresses: [{ address1: '1', city: 'Paris', countryCode: 'FR', zoneCode: 'FR-IDF', postCode: '75001' }] });
    const [a] = (await api.get('/crm/customers/seq-1')).body.addresses;
    const r = await api.post('/crm/customers/bulk', [
      { externalId: 'seq-1', firstName: 'New' },
      { externalId: 'seq-1', addresses: [{ uuid: a.uuid, countryCode: 'DE' }] },
      { externalId: 'seq-1', lastName: 'After', addresses: [{ uuid: a.uuid, city: 'Lyon' }] },
    ]);
    assert.deepEqual(r.body.results.map((x: any) => [x.status, x.errors?.[0]?.moreInfo]), [[200, undefined], [400, 'addresses.0.zoneCode'], [200, undefined]]);
    const got = (await api.get('/crm/customers/seq-1')).body;
    assert.deepEqual([got.firstName, got.lastName, got.addresses.map((x: any) => [x.uuid, x.city, x.countryCode, x.zoneCode])], ['New', 'After', [[a.uuid, 'Lyon', 'FR', 'FR-IDF']]]);
  });

  it('new customers only: one statement and no transaction, the same answers and events; with one existing, the transaction', async () => {
    // The bulk statements run, by what they do, and whether each ran in a transaction (background work is not a bulk statement).
    const real = ctx.srv.services.db;
    let ran: string[] = [];
    const KINDS: [RegExp, string][] = [
      [/^WITH x AS MATERIALIZED \(SELECT \* FROM jsonb_to_recordset/, 'insert all new'],
      [/FROM customers c\s+WHERE c.external_id = ANY\(\$1::text\[\]\) ORDER BY c.id FOR NO KEY UPDATE OF c/, 'lock'],
      [/^WITH c AS \(INSERT INTO customers/, 'insert'],
      [/^UPDATE customers c SET first_name/, 'update'],
    ];
    const note = (sql: string, inTx: boolean) => {
      const kind = KINDS.find(([re]) => re.test(sql.trim()))?.[1];
      if (kind) ran.push(`${kind}${inTx ? ' (in tx)' : ''}`);
    };
    ctx.srv.services.db = Object.assign(Object.create(real), {
      query: (sql: string, p?: unknown[], name?: string) => (note(sql, false), real.query(sql, p, name)),
      transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
        real.transaction((tx) => fn({ ...tx, query: (sql: string, p?: unknown[], name?: string) => (note(sql, true), tx.query(sql, p, name)) })),
    }) as Db;
    try {
      const items = [{ externalId: 'only-1', ...full }, { externalId: 'only-2', firstName: 'Bo' }, { externalId: 'only-1', lastName: 'Folded' }, { bad: 1 }];
      const r = await v('2026-11').post('/crm/customers/bulk', items);
      assert.equal(r.status, 200);
      assert.deepEqual(ran, ['insert all new']);
      assert.deepEqual(r.body.results.map((x: any) => [x.index, x.status]), [[0, 201], [1, 201], [2, 200], [3, 400]]);
      assert.equal(r.body.results[0].customer.lastName, 'Folded');
      assert.deepEqual(r.body.results[2].customer, r.body.results[0].customer);
      assert.deepEqual((await ctx.srv.api.get('/crm/customers/only-1')).body, r.body.results[0].customer);
      assert.deepEqual((await ctx.srv.api.get('/crm/customers/only-2')).body, r.body.results[1].customer);
      assert.deepEqual(await events('only-1'), ['customerCreate']);
      assert.deepEqual(await events('only-2'), ['customerCreate']);
      const order = (await ctx.tdb.db.query(`SELECT resource_external_id AS x FROM events WHERE resource_external_id IN ('only-1', 'only-2') ORDER BY id`)).rows.map((x) => x.x);
      assert.deepEqual(order, ['only-1', 'only-2'], 'events in item order');
      ran = [];
      const again = await v('2026-11').post('/crm/customers/bulk', [{ externalId: 'only-3' }, { externalId: 'only-2', firstName: 'Bea' }]);
      assert.deepEqual(again.body.results.map((x: any) => [x.status, x.customer.firstName]), [[201, null], [200, 'Bea']]);
      assert.deepEqual(ran, ['insert all new', 'lock (in tx)', 'insert (in tx)', 'update (in tx)'],
        'an existing externalId: the transaction, after the statement that wrote nothing');
      assert.deepEqual(await events('only-3'), ['customerCreate']);
      assert.deepEqual(await events('only-2'), ['customerCreate', 'customerUpdate']);
    } finally {
      ctx.srv.services.db = real;
    }
  });

  it('concurrent bulks of the same new externalIds: each customer created once, with one customerCreate event', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `race-${i}`);
    const answers = await Promise.all(Array.from({ length: 4 }, (_, k) =>
      v('2026-11').post('/crm/customers/bulk', (k % 2 ? [...ids].reverse() : ids).map((externalId) => ({ externalId, firstName: 'Same' })))));
    for (const a of answers) assert.equal(a.status, 200);
    for (const id of ids) {
      const statuses = answers.map((a) => a.body.results.find((x: any) => x.customer.externalId === id).status).sort();
      assert.deepEqual(statuses, [200, 200, 200, 201], id);
      assert.deepEqual(await events(id), ['customerCreate'], id);
    }
  });

  it('does one transaction and the same number of statements for 1 item as for 100', async () => {
    const real = ctx.srv.services.db;
    let statements = 0;
    let transactions = 0;
    const counting: Queryable = { query: (sql, p) => (statements++, real.query(sql, p)), exec: (sql) => (statements++, real.exec(sql)) };
    ctx.srv.services.db = Object.assign(Object.create(real), {
      query: counting.query,
      exec: counting.exec,
      transaction: <T>(fn: (tx: Queryable) => Promise<T>) => {
        transactions++;
        return real.transaction((tx) => fn({ query: (sql, p) => (statements++, tx.query(sql, p)), exec: (sql) => (statements++, tx.exec(sql)) }));
      },
    }) as Db;
    try {
      const count = async (items: unknown[]) => {
        statements = transactions = 0;
        const r = await v('2026-11').post('/crm/customers/bulk', items);
        assert.equal(r.status, 200);
        return { statements, transactions };
      };
      await v('2026-11').post('/crm/customers/bulk', Array.from({ length: 50 }, (_, i) => ({ externalId: `s-${i}` })));
      const mixed = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ externalId: i % 2 ? `s-${i}` : `s-${tag}-${i}`, firstName: tag }));
      const one = await count(mixed(2, 'one'));
      const hundred = await count(mixed(100, 'hundred'));
      assert.equal(one.transactions, 1);
      assert.deepEqual(hundred, one);
    } finally {
      ctx.srv.services.db = real;
    }
  });
});
