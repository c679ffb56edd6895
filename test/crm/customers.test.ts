// Customers: create, get, PUT upsert, PATCH, bulk, list with pagination and filters, events outbox.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import pg from 'pg';
import { describeEachDb } from '../helpers/suite.ts';
import { untilWaitingForLock } from '../helpers/db.ts';
import { errorCodes } from '../helpers/server.ts';

await describeEachDb('customers', (ctx) => {
  const api = () => ctx.srv.api;
  const events = async (type?: string) =>
    (await ctx.tdb.db.query(`SELECT event_type, resource_external_id, source FROM events ${type ? 'WHERE event_type = $1' : ''} ORDER BY id`, type ? [type] : [])).rows;

  it('creates a customer, emits customerCreate, and answers 409 on a duplicate externalId', async () => {
    const r = await api().post('/crm/customers', { externalId: 'c-1', firstName: 'Ann', emails: [{ email: 'Ann@Example.com', type: 'home', isPrimary: true }] });
    assert.equal(r.status, 201);
    assert.match(r.body.uuid, /^[0-9a-f-]{36}$/);
    assert.equal(r.body.status, 'active');
    assert.equal(r.body.mergedInto, null);
    assert.match(r.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const ev = await events('customerCreate');
    assert.deepEqual(ev.map((e) => e.resource_external_id), ['c-1']);
    assert.equal(ev[0].source, 'TULIP_API');
    const dup = await api().post('/crm/customers', { externalId: 'c-1' });
    assert.equal(dup.status, 409);
    assert.deepEqual(errorCodes(dup), ['Conflict']);
    assert.equal((await events('customerCreate')).length, 1, 'a rejected create writes no event');
  });

  it('externalIds that are routes under /crm/customers/ (export, bulk) are refused in every write, changing nothing', async () => {
    // A customer "export" was read by GET …/customers/export in 2025-12 and lost behind the export route in 2026-11;
    // PUT /tulip_api/v2/crm/customers/bulk made a customer the bulk route then shadowed (found by probing, 2026-11-28).
    const existing = await ctx.srv.api.post('/crm/customers', { externalId: 'rsv-1' });
    assert.equal(existing.status, 201, existing.text);
    const v26 = ctx.srv.api.withVersion('2026-11');
    for (const id of ['export', 'bulk']) {
      const writes = [
        await ctx.srv.api.post('/crm/customers', { externalId: id }),
        await ctx.srv.api.patch(`/crm/customers/rsv-1`, { externalId: id }),
      ];
      // PUT …/export in 2022-04 is its {id} route's; PUT …/bulk is the bulk route of later versions (404
      // EndpointNotInVersion since 2026-11-29, test/http/versions.test.ts): neither writes anything.
      const legacy = [
        await ctx.srv.api.withVersion('2022-04').put(`/crm/customers/${id}`, { firstName: 'X' }),
        await ctx.srv.api.put('/tulip_api/v2/crm/customers/' + id, { firstName: 'X' }),
      ];
      if (id === 'export') writes.push(...legacy);
      else for (const r of legacy) assert.deepEqual([r.status, r.body.errors[0].errorCode], [404, 'EndpointNotInVersion'], r.text);
      for (const r of writes) {
        assert.equal(r.status, 400, `${id}: ${r.text}`);
        assert.match(r.body.errors[0].message, /is reserved/);
      }
      const bulk = await v26.post('/crm/customers/bulk', [{ externalId: id }]);
      assert.deepEqual(bulk.body.results.map((x: any) => [x.status, x.errors?.[0]?.moreInfo]), [[400, 'externalId']], bulk.text);
    }
    assert.equal((await ctx.srv.api.get('/crm/customers/rsv-1')).body.externalId, 'rsv-1', 'unchanged');
    assert.equal((await ctx.srv.api.get('/crm/customers?externalId=export')).body.data.length, 0);
  });

  it('gets by uuid or externalId, 404 otherwise', async () => {
    const c = await api().post('/crm/customers', { externalId: 'c-get' });
    assert.equal((await api().get(`/crm/customers/${c.body.uuid}`)).body.externalId, 'c-get');
    assert.equal((await api().get('/crm/customers/c-get')).body.uuid, c.body.uuid);
    const nf = await api().get('/crm/customers/nope');
    assert.equal(nf.status, 404);
    assert.deepEqual(errorCodes(nf), ['NotFound']);
  });

  it('PUT creates an unknown externalId (201), replaces a known one (200) and emits customerUpdate only on change', async () => {
    const created = await api().put('/crm/customers/c-put', { firstName: 'Bo', loyaltyTier: 'gold' });
    assert.equal(created.status, 201);
    assert.equal(created.body.externalId, 'c-put');
    const replaced = await api().put('/crm/customers/c-put', { lastName: 'Lee' });
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.firstName, null, 'full replace clears omitted fields');
    assert.equal(replaced.body.lastName, 'Lee');
    assert.equal(replaced.body.loyaltyTier, null);
    const before = (await events('customerUpdate')).length;
    const same = await api().put('/crm/customers/c-put', { lastName: 'Lee' });
    assert.equal(same.status, 200);
    assert.equal(same.body.updatedAt, replaced.body.updatedAt);
    assert.equal((await events('customerUpdate')).length, before, 'no change, no event');
  });

  it('PATCH updates only given fields (2022-08+), and is not in 2022-04', async () => {
    await api().post('/crm/customers', { externalId: 'c-patch', firstName: 'Cy', lastName: 'Dee' });
    const r = await api().patch('/crm/customers/c-patch', { lastName: 'Eff' });
    assert.equal(r.status, 200);
    assert.equal(r.body.firstName, 'Cy');
    assert.equal(r.body.lastName, 'Eff');
    const old = await api().withVersion('2022-04').patch('/crm/customers/c-patch', { lastName: 'X' });
    assert.equal(old.status, 404);
    assert.deepEqual(errorCodes(old), ['EndpointNotInVersion']);
    assert.match(old.body.errors[0].moreInfo, /2022-08, 2025-04/);
  });

  it('PATCH with null clears any field, lists and excludeFromCampaigns included, as a 2026-11 bulk item does', async () => {
    assert.equal((await api().post('/crm/customerAttributes', { externalId: 'shoe-size', type: 'string' })).status, 201);
    const full = {
      firstName: 'Nell', loyaltyTier: 'gold', excludeFromCampaigns: true, emails: [{ email: 'nell@example.com' }], phones: [{ number: '+14155550100' }],
      addresses: [{ address1: '1 Main St', city: 'Springfield', countryCode: 'US' }], socialProfiles: [{ network: 'x', handle: '@nell' }],
      attributes: [{ attributeExternalId: 'shoe-size', value: '38' }],
    };
    for (const id of ['c-null-patch', 'c-null-bulk']) {
      const c = await api().post('/crm/customers', { externalId: id, ...full });
      assert.equal(c.status, 201, c.text);
    }
    const nulls = { loyaltyTier: null, excludeFromCampaigns: null, emails: null, phones: null, addresses: null, socialProfiles: null, attributes: null };
    const r = await api().patch('/crm/customers/c-null-patch', nulls);
    assert.equal(r.status, 200, r.text);
    const b = await api().withVersion('2026-11').post('/crm/customers/bulk', [{ externalId: 'c-null-bulk', ...nulls }]);
    assert.equal(b.status, 200, b.text);
    const patched = (await api().get('/crm/customers/c-null-patch')).body;
    const bulked = (await api().get('/crm/customers/c-null-bulk')).body;
    for (const c of [patched, bulked]) {
      assert.equal(c.firstName, 'Nell', 'an omitted field is kept');
      assert.equal(c.loyaltyTier, null);
      assert.equal(c.excludeFromCampaigns, false);
      for (const k of ['emails', 'phones', 'addresses', 'socialProfiles', 'attributes']) assert.deepEqual(c[k], [], k);
    }
    // A PUT replaces the whole record: null in a list there is the empty list, as in a bulk item that replaces (a 400
    // until 2026-11-29).
    const put = await api().put('/crm/customers/c-null-patch', { emails: null });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body.emails, []);
  });

  it('bulk upserts with per-item results; a bad item does not stop the others', async () => {
    await api().post('/crm/customers', { externalId: 'b-2', firstName: 'Old' });
    const r = await api().post('/crm/customers/bulk', [
      { externalId: 'b-1', firstName: 'New' },
      { externalId: 'b-2', firstName: 'Changed' },
      { firstName: 'no externalId', extra: true },
    ]);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.results.map((x: any) => [x.index, x.status]), [[0, 201], [1, 200], [2, 400]]);
    assert.equal(r.body.results[1].customer.firstName, 'Changed');
    assert.ok(r.body.results[2].errors.length >= 2, 'one error per problem');
    const tooMany = await api().post('/crm/customers/bulk', Array.from({ length: 101 }, (_, i) => ({ externalId: `x${i}` })));
    assert.equal(tooMany.status, 400);
  });

  it('paginates: a cursor walk visits each customer exactly once even while customers are added', async () => {
    for (let i = 0; i < 12; i++) await api().post('/crm/customers', { externalId: `p-${i}` });
    const seen: string[] = [];
    let cursor: string | null = null;
    let added = 0;
    do {
      const r: any = await api().get(`/crm/customers?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200);
      assert.ok(r.body.data.length <= 5);
      seen.push(...r.body.data.map((c: any) => c.uuid));
      cursor = r.body.nextCursor;
      if (added < 3) await api().post('/crm/customers', { externalId: `p-added-${added++}` });
    } while (cursor);
    assert.equal(new Set(seen).size, seen.length, 'no customer twice');
    const total = (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM customers WHERE status = 'active'`)).rows[0].n;
    assert.equal(seen.length, total, 'every customer once');
    // Numbers written as numbers: a blank or hexadecimal value was coerced (`+" "` is 0, `+"0x10"` 16) until 2026-11-29.
    for (const bad of ['limit=0', 'limit=251', 'limit=abc', 'limit=%20', 'limit=0x10', 'limit=0b11', 'limit=Infinity', 'cursor=%%%', 'status=gone']) {
      const r = await api().get(`/crm/customers?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
    }
    // A sync cursor of the right form naming a time that does not exist: "cursor is not valid" naming cursor, like any
    // other bad cursor (the database's generic out-of-range answer, naming nothing, before 2026-11-28).
    for (const at of ['2026-99-99T99:99:99.000000Z', '2026-02-30T10:00:00.000000Z']) {
      const cursor = Buffer.from(`t1:${at}:1`).toString('base64url');
      const r = await api().get(`/crm/customers?updatedSince=2026-01-01T00:00:00Z&cursor=${cursor}`);
      assert.equal(r.status, 400, at);
      assert.deepEqual(r.body.errors.map((e: any) => [e.message, e.moreInfo]), [['cursor is not valid', 'cursor']], at);
    }
    // A real cursor with something after it, or padded, is not the cursor given (Node's base64url decoder stops at
    // the first character it cannot read, so `…!!` was read as the cursor before it until 2026-11-29).
    const first = (await api().get('/crm/customers?limit=1')).body.nextCursor;
    assert.equal((await api().get(`/crm/customers?limit=1&cursor=${first}`)).status, 200);
    for (const cursor of [`${first}!!`, `${first}%3D`, `${first}.x`]) {
      const r = await api().get(`/crm/customers?limit=1&cursor=${cursor}`);
      assert.equal(r.status, 400, cursor);
      assert.deepEqual(r.body.errors.map((e: any) => [e.message, e.moreInfo]), [['cursor is not valid', 'cursor']], cursor);
    }
  });

  it('filters by email (case-insensitive), externalId and updatedSince', async () => {
    await api().post('/crm/customers', { externalId: 'f-1', emails: [{ email: 'Filter.Me@Example.com' }] });
    const byEmail = await api().get('/crm/customers?email=filter.me@example.com');
    assert.deepEqual(byEmail.body.data.map((c: any) => c.externalId), ['f-1']);
    const byExt = await api().get('/crm/customers?externalId=f-1');
    assert.equal(byExt.body.data.length, 1);
    await api().post('/crm/customers', { externalId: 'Q-77', firstName: 'Zoë', lastName: 'Quill_100%' });
    assert.deepEqual((await api().get('/crm/customers?q=zoë quill')).body.data.map((c: any) => c.externalId), ['Q-77'], 'q: by name');
    assert.deepEqual((await api().get('/crm/customers?q=q-7')).body.data.map((c: any) => c.externalId), ['Q-77'], 'q: by externalId');
    assert.deepEqual((await api().get('/crm/customers?q=filter.me')).body.data.map((c: any) => c.externalId), ['f-1'], 'q: by email');
    assert.deepEqual((await api().get('/crm/customers?q=_100%25')).body.data.map((c: any) => c.externalId), ['Q-77'], 'q: LIKE wildcards are literal');
    assert.deepEqual((await api().get('/crm/customers?q=zo%25quill')).body.data, [], 'q: % is not a wildcard');
    assert.deepEqual((await api().get('/crm/customers?q=q_77')).body.data, [], 'q: _ is not a wildcard');
    const future = await api().get(`/crm/customers?updatedSince=${encodeURIComponent('2999-01-01T00:00:00Z')}`);
    assert.deepEqual(future.body.data, []);
  });

  it('q: a name is found as typed, whatever its case or Unicode form; a term matches within one field', async () => {
    const q = async (term: string) => (await api().get(`/crm/customers?q=${encodeURIComponent(term)}`)).body.data.map((c: any) => c.externalId).sort();
    await api().post('/crm/customers', { externalId: 'uq-greek', firstName: 'ΝΙΚΟΛΑΟΣ', lastName: 'İLKER' });
    // Lower-cased by the database on both sides (JavaScript's lower case of 'İ' and a final 'Σ' is not PostgreSQL's).
    for (const term of ['ΝΙΚΟΛΑΟΣ', 'νικολαοσ', 'İLKER', 'ilker']) assert.deepEqual(await q(term), ['uq-greek'], term);
    // A final sigma (ς) is σ to the search, on both sides (migration 074): a name stored with it is found in capitals,
    // and one stored in capitals is found as typed with it; so is an externalId.
    const made = await api().post('/crm/customers', { externalId: 'uq-οδυσσέας', firstName: 'Οδυσσέας' });
    assert.equal(made.status, 201, made.text);
    for (const term of ['ΟΔΥΣΣΈΑΣ', 'οδυσσέας', 'οδυσσέασ']) assert.deepEqual(await q(term), ['uq-οδυσσέας'], term);
    assert.deepEqual(await q('νικολαος'), ['uq-greek'], 'typed with a final ς');
    assert.deepEqual(await q('UQ-ΟΔΥΣΣΈΑΣ'), ['uq-οδυσσέας'], 'in the externalId');
    const keyless = await api().post('/crm/customers', { firstName: 'Ερμής', lastName: 'Χωρίςκλειδί' });
    assert.equal(keyless.status, 201, keyless.text);
    assert.deepEqual((await api().get(`/crm/customers?q=${encodeURIComponent('ΧΩΡΊΣΚΛΕΙΔΊ')}`)).body.data.map((c: any) => c.uuid), [keyless.body.uuid], 'a customer without an externalId too');
    // René with é composed (NFC) and decomposed (NFD): each form finds both.
    await api().post('/crm/customers', { externalId: 'uq-nfc', firstName: 'Ren\u00e9' });
    await api().post('/crm/customers', { externalId: 'uq-nfd', firstName: 'Rene\u0301' });
    for (const term of ['Ren\u00e9', 'Rene\u0301']) assert.deepEqual(await q(term), ['uq-nfc', 'uq-nfd'], JSON.stringify(term));
    // Two emails: a term spanning the end of one and the start of the other finds nothing.
    await api().post('/crm/customers', { externalId: 'uq-mails', emails: [{ email: 'first@uq-example.com' }, { email: 'zed@uq.io' }] });
    assert.deepEqual(await q('uq-example.com'), ['uq-mails']);
    assert.deepEqual(await q('com zed@'), []);
    const blank = await api().get('/crm/customers?q=%20%20');
    assert.equal(blank.status, 400, 'a term of spaces only matched every customer');
    assert.match(blank.body.errors[0].moreInfo, /\bq$/);
  });

  it('serves the seed list call: GET with Content-Type json and no body', async () => {
    const r = await api().get('/crm/customers', { 'content-type': 'application/json; charset=UTF-8', 'accept-language': 'fr-FR' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-language'), 'en');
  });
  it('a walk, and a sync resuming from the latest updatedAt it saw, never pass a customer a running transaction wrote (an import chunk beside single writes)', { skip: ctx.backend === 'pg' ? false : 'PostgreSQL only: two transactions at once' }, async () => {
    await api().post('/crm/customers', { externalId: 'hz-old', firstName: 'Old' });
    const start = (await api().get('/crm/customers?externalId=hz-old')).body.data[0].updatedAt;
    // An import's chunk: it takes an id and writes a customer (and changes hz-old), and commits later.
    const chunk = new pg.Client({ connectionString: ctx.tdb.url });
    await chunk.connect();
    try {
      await chunk.query('BEGIN');
      await chunk.query(`INSERT INTO customers (external_id, first_name) VALUES ('hz-chunk', 'Chunk')`);
      await chunk.query(`UPDATE customers SET first_name = 'Chunked', updated_at = clock_timestamp() WHERE external_id = 'hz-old'`);
      // Single writes beside it take later ids and write times, and commit first.
      assert.equal((await api().post('/crm/customers', { externalId: 'hz-single', firstName: 'Single' })).status, 201);
      const walk = async (path: string) => {
        const seen: any[] = [];
        for (let cursor: string | null = null; ;) {
          const r: { status: number; text: string; body: any } = await api().get(`${path}&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
          assert.equal(r.status, 200, r.text);
          seen.push(...r.body.data);
          if (!(cursor = r.body.nextCursor)) return { seen };
        }
      };
      // Walked now, the list must not serve hz-single (a later id) while hz-chunk (an earlier one) may still come:
      // a cursor past it would never see hz-chunk. Same for the sync: hz-single's updatedAt is after hz-old's change.
      const during = (await walk('/crm/customers?status=all')).seen.map((c) => c.externalId);
      assert.ok(during.includes('hz-old'));
      assert.ok(!during.includes('hz-single'), `served past a customer still being written: ${during.join(',')}`);
      const sync1 = (await walk(`/crm/customers?updatedSince=${encodeURIComponent(start)}`)).seen;
      assert.ok(!sync1.some((c) => c.externalId === 'hz-single'), 'the sync did not pass the running change');
      await chunk.query('COMMIT');
      // The sync resumes from the latest updatedAt it saw (what a sync client keeps): everything written meanwhile comes.
      const resumeFrom = sync1.map((c) => c.updatedAt).sort().at(-1) ?? start;
      const sync2 = (await walk(`/crm/customers?updatedSince=${encodeURIComponent(resumeFrom)}`)).seen.map((c) => `${c.externalId}:${c.firstName}`);
      for (const x of ['hz-chunk:Chunk', 'hz-old:Chunked', 'hz-single:Single']) assert.ok(sync2.includes(x), `${x} in the resumed sync: ${sync2.join(',')}`);
      const after = (await walk('/crm/customers?status=all')).seen.map((c) => c.externalId);
      assert.ok(after.indexOf('hz-chunk') < after.indexOf('hz-single'), 'in id order, once committed');
    } finally {
      await chunk.query('ROLLBACK').catch(() => {});
      await chunk.end();
    }
  });

  it("a list waits only for running writers of its own table: a note or order created beside an import chunk is listed at once; a running note write holds back later notes", { skip: ctx.backend === 'pg' ? false : 'PostgreSQL only: two transactions at once' }, async () => {
    // Before 2026-11-28 every running writer held every list back: a 201'd note was missing from its customer's list for
    // as long as an unrelated import chunk (or a session idle in a transaction) ran.
    const c = (await api().post('/crm/customers', { externalId: 'hzt-1', firstName: 'T' })).body;
    const other = new pg.Client({ connectionString: ctx.tdb.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`INSERT INTO customers (external_id, first_name) VALUES ('hzt-chunk', 'Chunk')`); // an import chunk
      const note = await api().post(`/crm/customers/${c.uuid}/notes`, { type: 'CUSTOMER_NOTE', comments: 'beside a chunk' });
      assert.equal(note.status, 201, note.text);
      const order = await api().post(`/crm/customers/${c.uuid}/orders`, { externalId: 'hzt-o1', orderedAt: '2026-11-01T10:00:00Z', currency: 'EUR', total: '10.00', lineItems: [] });
      assert.equal(order.status, 201, order.text);
      assert.deepEqual((await api().get(`/crm/customers/${c.uuid}/notes`)).body.data.map((n: any) => n.uuid), [note.body.uuid]);
      assert.deepEqual((await api().get(`/crm/customers/${c.uuid}/orders`)).body.data.map((o: any) => o.uuid), [order.body.uuid]);
      await other.query('ROLLBACK');
      // A running write of notes (it took an earlier id): a note written after it is held back until it ends.
      await other.query('BEGIN');
      await other.query(`INSERT INTO notes (customer_id, type, comments) SELECT id, 'CUSTOMER_NOTE', 'running' FROM customers WHERE external_id = 'hzt-1'`);
      const later = await api().post(`/crm/customers/${c.uuid}/notes`, { type: 'CUSTOMER_NOTE', comments: 'after the running one' });
      assert.equal(later.status, 201, later.text);
      assert.deepEqual((await api().get(`/crm/customers/${c.uuid}/notes`)).body.data.map((n: any) => n.uuid), [note.body.uuid], 'held back behind the running write');
      await other.query('COMMIT');
      const all = (await api().get(`/crm/customers/${c.uuid}/notes`)).body.data;
      assert.equal(all.length, 3);
      assert.equal(all[2].uuid, later.body.uuid);
    } finally {
      await other.query('ROLLBACK').catch(() => {});
      await other.end();
    }
  });

  it('a sync filtered by email, and an incremental export resumed from the latest updatedAt it served (or its X-Bulb-Resume-Since), never pass a customer a running transaction wrote', { skip: ctx.backend === 'pg' ? false : 'PostgreSQL only: two transactions at once' }, async () => {
    const email = 'same@hze.example';
    await api().post('/crm/customers', { externalId: 'hze-old', firstName: 'Old', emails: [{ email }] });
    const start = (await api().get('/crm/customers?externalId=hze-old')).body.data[0].updatedAt;
    const exportSince = async (since: string) => {
      const r = await fetch(`${ctx.srv.url}/api/2026-11/crm/customers/export?status=all&updatedSince=${encodeURIComponent(since)}`, { headers: { authorization: `Bearer ${ctx.srv.api.token}` } });
      assert.equal(r.status, 200);
      const rows = (await r.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((c) => c.externalId.startsWith('hze-'));
      return { rows, resumeSince: r.headers.get('x-bulb-resume-since')! };
    };
    const chunk = new pg.Client({ connectionString: ctx.tdb.url });
    await chunk.connect();
    try {
      // An import's chunk writes a customer with that email, and commits after a single write beside it.
      await chunk.query('BEGIN');
      await chunk.query(`INSERT INTO customers (external_id, first_name, emails, email_keys) VALUES ('hze-chunk', 'Chunk', $1::jsonb, ARRAY[$2])`,
        [JSON.stringify([{ email }]), email]);
      assert.equal((await api().post('/crm/customers', { externalId: 'hze-single', firstName: 'Single', emails: [{ email }] })).status, 201);
      const sync1 = (await api().get(`/crm/customers?email=${email}&updatedSince=${encodeURIComponent(start)}&limit=250`)).body.data;
      assert.ok(!sync1.some((c: any) => c.externalId === 'hze-single'), 'the email sync did not pass the running write');
      const exp1 = await exportSince(start);
      assert.ok(!exp1.rows.some((c) => c.externalId === 'hze-single'), 'the incremental export did not pass the running write');
      assert.ok(exp1.resumeSince <= new Date().toISOString() && exp1.resumeSince >= start, exp1.resumeSince);
      await chunk.query('COMMIT');
      // Resumed from the latest updatedAt each served, or from the export's header: both customers come.
      const last = (rows: any[]) => rows.map((c) => c.updatedAt).sort().at(-1) ?? start;
      const sync2 = (await api().get(`/crm/customers?email=${email}&updatedSince=${encodeURIComponent(last(sync1))}&limit=250`)).body.data.map((c: any) => c.externalId);
      for (const from of [last(exp1.rows), exp1.resumeSince]) {
        const exp2 = (await exportSince(from)).rows.map((c) => c.externalId);
        for (const x of ['hze-chunk', 'hze-single']) assert.ok(exp2.includes(x), `${x} in the export resumed from ${from}: ${exp2.join(',')}`);
      }
      for (const x of ['hze-chunk', 'hze-single']) assert.ok(sync2.includes(x), `${x} in the resumed email sync: ${sync2.join(',')}`);
    } finally {
      await chunk.query('ROLLBACK').catch(() => {});
      await chunk.end();
    }
  });

  it('a search term\'s pages, a customer\'s attached list, the associates and the attribute definitions never pass a row a running transaction wrote', { skip: ctx.backend === 'pg' ? false : 'PostgreSQL only: two transactions at once' }, async () => {
    const owner = (await api().post('/crm/customers', { externalId: 'hzw-owner', firstName: 'Owner' })).body;
    const chunk = new pg.Client({ connectionString: ctx.tdb.url });
    await chunk.connect();
    try {
      // A writer holding a customer, a preference and an associate, each taking its id before the single writes beside it.
      await chunk.query('BEGIN');
      await chunk.query(`INSERT INTO customers (external_id, first_name) VALUES ('hzw-chunk', 'Hzwalker')`);
      await chunk.query(`INSERT INTO preferences (customer_id, category, value) SELECT id, 'size', 'chunk' FROM customers WHERE uuid = $1`, [owner.uuid]);
      await chunk.query(`INSERT INTO associates (external_id) VALUES ('hzw-a-chunk')`);
      await chunk.query(`INSERT INTO customer_attributes (external_id) VALUES ('hzw-attr-chunk')`);
      assert.equal((await api().post('/crm/customers', { externalId: 'hzw-single', firstName: 'Hzwalker' })).status, 201);
      assert.equal((await api().post('/crm/customers/hzw-owner/preferences', { category: 'size', value: 'single' })).status, 201);
      assert.equal((await api().post('/crm/associates', { externalId: 'hzw-a-single' })).status, 201);
      assert.equal((await api().post('/crm/customerAttributes', { externalId: 'hzw-attr-single' })).status, 201);
      const walk = async (path: string, key: (x: any) => string) => {
        const seen: string[] = [];
        for (let cursor: string | null = null; ;) {
          const r: { status: number; text: string; body: any } = await api().get(`${path}${path.includes('?') ? '&' : '?'}limit=1${cursor ? `&cursor=${cursor}` : ''}`);
          assert.equal(r.status, 200, r.text);
          seen.push(...r.body.data.map(key));
          if (!(cursor = r.body.nextCursor)) return seen;
        }
      };
      // Served now, the later rows would put a cursor past the earlier ones still being written.
      assert.ok(!(await walk('/crm/customers?q=hzwalker', (c) => c.externalId)).includes('hzw-single'), 'the search passed a running write');
      assert.ok(!(await walk('/crm/customers/hzw-owner/preferences', (p) => p.value)).includes('single'), 'the preferences passed a running write');
      assert.ok(!(await walk('/crm/associates', (a) => a.externalId)).includes('hzw-a-single'), 'the associates passed a running write');
      // The attribute definitions too (a probe, 2026-11-29: their list had no horizon).
      assert.ok(!(await walk('/crm/customerAttributes', (a) => a.externalId)).includes('hzw-attr-single'), 'the attributes passed a running write');
      await chunk.query('COMMIT');
      assert.deepEqual(await walk('/crm/customers?q=hzwalker', (c) => c.externalId), ['hzw-chunk', 'hzw-single']);
      assert.deepEqual(await walk('/crm/customers/hzw-owner/preferences', (p) => p.value), ['chunk', 'single']);
      const associates = await walk('/crm/associates', (a) => a.externalId);
      assert.ok(associates.indexOf('hzw-a-chunk') >= 0 && associates.indexOf('hzw-a-chunk') < associates.indexOf('hzw-a-single'), associates.join(','));
      const attributes = await walk('/crm/customerAttributes', (a) => a.externalId);
      assert.ok(attributes.indexOf('hzw-attr-chunk') >= 0 && attributes.indexOf('hzw-attr-chunk') < attributes.indexOf('hzw-attr-single'), attributes.join(','));
    } finally {
      await chunk.query('ROLLBACK').catch(() => {});
      await chunk.end();
    }
  });

  it('PUT racing a create of the same unknown externalId replaces it (200), never 409: PUT is idempotent', { skip: ctx.backend === 'pg' ? false : 'PostgreSQL only: two transactions at once' }, async () => {
    // Another request is creating the customer: its insert is in, not committed yet.
    const other = new pg.Client({ connectionString: ctx.tdb.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`INSERT INTO customers (external_id, first_name) VALUES ('put-race', 'First')`);
      const put = api().put('/crm/customers/put-race', { firstName: 'Second' });
      // The PUT found no customer and waits on the other insert's unique key; the other commits.
      await untilWaitingForLock(ctx.tdb.db, 'the PUT never waited for the other insert', { and: `query ILIKE '%INSERT INTO customers%'`, tries: 400, everyMs: 25 });
      await other.query('COMMIT');
      const r = await put;
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.firstName, 'Second');
      assert.equal((await api().get('/crm/customers/put-race')).body.firstName, 'Second');
    } finally {
      await other.query('ROLLBACK').catch(() => {});
      await other.end();
    }
  });
});
