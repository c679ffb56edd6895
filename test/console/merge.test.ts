// Console in a real browser: a customer's attached data, then a merge previewed (dry run: counts, nothing
// changes), refused with the API's message for an unknown id, confirmed, and its result: merge history,
// the secondaries disabled and linking to their survivor. Long histories (found by a probe, 2026-11-29): the history
// read one page of 100 merges, oldest first, so the newest (the likeliest to be undone) were not shown; attached data
// stopped at 250 rows with no way to the rest.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeConsole } from './browser.ts';

describeConsole('customer page and merge', (ctx) => {
  before(() => ctx.signIn());

  it('shows attached data, previews a merge, runs it, and the secondaries link to the survivor', async () => {
    const { page, srv } = ctx;
    const api = srv.api;
    const assoc = (await api.post('/crm/associates', { externalId: 'as-1', firstName: 'Ari' })).body;
    for (const [externalId, firstName, lastName] of [['m-pri', 'Pat', 'Primary'], ['m-sec1', 'Sam', 'Second'], ['m-sec2', 'Sid', 'Third']]) {
      assert.equal((await api.post('/crm/customers', { externalId, firstName, lastName, emails: [{ email: `${externalId}@example.com` }] })).status, 201);
    }
    const add = async (id: string, kind: string, body: unknown) => {
      const r = await api.post(`/crm/customers/${id}/${kind}`, body);
      assert.equal(r.status, 201, `${kind}: ${r.text}`);
    };
    await add('m-pri', 'messages', { channel: 'sms', direction: 'outbound', body: 'Your order is ready' });
    await add('m-pri', 'associates', { associateUuid: assoc.uuid, role: 'stylist' });
    await add('m-sec1', 'orders', { externalId: 'o-1', orderedAt: '2025-01-02T10:00:00.000Z', currency: 'EUR', total: '129.90', lineItems: [{ sku: 'SKU-1', quantity: 1, price: '129.90' }] });
    await add('m-sec1', 'orders', { externalId: 'o-2', orderedAt: '2025-02-03T10:00:00.000Z', currency: 'EUR', total: '15.00' });
    await add('m-sec1', 'notes', { type: 'CUSTOMER_PHONE_LOG', comments: 'Called about the fitting' });
    await add('m-sec1', 'preferences', { category: 'size', value: 'M' });
    await add('m-sec1', 'associates', { associateUuid: assoc.uuid }); // duplicate of the primary's
    await add('m-sec2', 'followUps', { dueAt: '2025-03-01T09:00:00.000Z', subject: 'Invite to the spring event' });

    await ctx.go('Customers');
    await page.getByLabel('Name, email or external ID').fill('Primary');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'Pat Primary' }).click();
    await page.getByRole('heading', { level: 1, name: 'Pat Primary' }).waitFor();
    const counts = page.getByRole('list', { name: 'Counts' });
    await counts.waitFor();
    assert.match(await counts.innerText(), /1\s*Messages/);
    assert.match(await counts.innerText(), /0\s*Orders/);
    await page.getByText('Messages (1)').click(); // a <details> disclosure
    await page.getByRole('cell', { name: 'Your order is ready' }).waitFor();

    // Unknown id: the API's 404 message, nothing changes.
    const ids = page.getByLabel('External IDs of the customers to merge into this one');
    await ids.fill('m-sec1, no-such-customer');
    await page.getByRole('button', { name: 'Preview merge' }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'The merge cannot be done' });
    await refused.waitFor();
    assert.match(await refused.innerText(), /no-such-customer/);

    // Preview: the counts that would move; nothing changes yet.
    await ids.fill('m-sec1\nm-sec2');
    await page.getByRole('button', { name: 'Preview merge' }).click();
    const preview = page.getByRole('region', { name: /Merge preview/ });
    await preview.waitFor();
    assert.match(await preview.getByRole('row', { name: /^Orders/ }).innerText(), /2/);
    assert.match(await preview.getByRole('row', { name: /^Follow-ups/ }).innerText(), /1/);
    assert.match(await preview.getByRole('row', { name: /^Notes/ }).innerText(), /1/);
    assert.match(await preview.getByRole('row', { name: /Duplicate associate/ }).innerText(), /1/);
    await ctx.shot('merge-preview');
    assert.equal((await api.get('/crm/customers/m-sec1')).body.status, 'active', 'the preview changed nothing');
    assert.equal((await api.get('/crm/customers/m-sec1/orders')).body.data.length, 2);

    await preview.getByRole('button', { name: 'Confirm merge' }).click();
    const confirm = page.getByRole('dialog', { name: /Merge 2 customers into m-pri/ });
    await confirm.getByRole('button', { name: 'Merge' }).click();
    await page.getByRole('status').filter({ hasText: 'Merged m-sec1, m-sec2 into m-pri' }).waitFor();

    // The page reloads: data moved here, and the merge is in the history.
    await page.getByRole('list', { name: 'Counts' }).filter({ hasText: /2\s*Orders/ }).waitFor();
    const history = page.getByRole('region', { name: 'Merge history' });
    await history.getByRole('link', { name: 'm-sec2' }).waitFor();
    assert.match(await history.innerText(), /Orders: 2/);
    await ctx.shot('merge-done');
    const sec1 = (await api.get('/crm/customers/m-sec1')).body;
    assert.equal(sec1.status, 'disabled');
    assert.equal(sec1.mergedInto.externalId, 'm-pri');
    // The console's changes are tagged as made in the app.
    const ev = await ctx.tdb.db.query<{ source: string }>(`SELECT source FROM events WHERE event_type = 'customerMerge'`);
    assert.deepEqual(ev.rows.map((r) => r.source), ['TULIP_APP']);

    // A secondary: disabled, links to its survivor; no merge form on it.
    await history.getByRole('link', { name: 'm-sec1' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sam Second' }).waitFor();
    const note = page.getByRole('note');
    assert.match(await note.innerText(), /This customer is disabled/);
    assert.equal(await page.getByRole('button', { name: 'Preview merge' }).count(), 0);
    await ctx.shot('customer-disabled');
    await note.getByRole('link', { name: 'm-pri' }).click();
    await page.getByRole('heading', { level: 1, name: 'Pat Primary' }).waitFor();

    // The customers list finds the disabled ones with their survivor.
    await ctx.go('Customers');
    await page.getByLabel('Status').selectOption('disabled');
    await page.getByRole('button', { name: 'Search' }).click();
    const rows = page.getByRole('row', { name: /disabled/ });
    await rows.first().waitFor();
    assert.equal(await rows.count(), 2);
    assert.match(await rows.first().innerText(), /m-pri/);
    await ctx.shot('customers-disabled');
  });

  /** count older merges into primary, written directly (the history only reads them), each of a customer `${prefix}N`. */
  async function olderMerges(primary: string, prefix: string, count: number) {
    const db = ctx.tdb.db;
    assert.equal((await ctx.srv.api.post('/crm/customers', { externalId: primary })).status, 201);
    await db.query(`INSERT INTO customers (external_id, status) SELECT $1 || g, 'disabled' FROM generate_series(1, $2::int) g`, [prefix, count]);
    await db.query(
      `INSERT INTO merges (primary_id, secondary_ids, moved, duplicates_removed, source)
       SELECT p.id, ARRAY[s.id], $3::jsonb, 0, 'TEST' FROM generate_series(1, $2::int) g
       JOIN customers p ON p.external_id = $4 JOIN customers s ON s.external_id = $1 || g ORDER BY g`,
      [prefix, count, JSON.stringify({ orders: 0, followUps: 0, notes: 0, messages: 0, preferences: 0, productShares: 0, associates: 0 }), primary],
    );
  }

  it('a long merge history shows the newest merge first, with Undo; attached data past 250 rows loads on demand', async () => {
    const { page, srv } = ctx;
    await olderMerges('many-pri', 'many-old-', 300);
    assert.equal((await srv.api.post('/crm/customers', { externalId: 'many-new' })).status, 201);
    assert.equal((await srv.api.post('/crm/customers/many-pri/merge', { mergeWithCustomerIds: ['many-new'] })).status, 200);
    await ctx.tdb.db.query(
      `INSERT INTO preferences (customer_id, category, value) SELECT c.id, 'size', 'p-' || g FROM customers c, generate_series(1, 260) g WHERE c.external_id = 'many-pri'`,
    );

    await page.goto('/admin/#/customers/many-pri');
    const history = page.getByRole('region', { name: 'Merge history' });
    const merges = history.getByRole('table').first();
    await merges.waitFor();
    const rows = merges.getByRole('row');
    assert.equal(await rows.count(), 1 + 301, 'a header row and every merge');
    assert.match(await rows.nth(1).innerText(), /many-new/, 'the newest merge comes first');
    assert.ok(await rows.nth(1).getByRole('button', { name: 'Undo merge of many-new' }).isVisible());
    assert.match(await rows.nth(301).innerText(), /many-old-1\b/, 'the oldest comes last');
    assert.equal(await page.getByRole('button', { name: 'Load newer merges' }).count(), 0, 'nothing left to load');

    // 260 preferences: the first 250, then the rest on demand; the counts follow.
    const counts = page.getByRole('list', { name: 'Counts' });
    await counts.getByRole('listitem').filter({ hasText: 'Preferences' }).filter({ hasText: '250+' }).waitFor();
    await page.getByText('Preferences (250+)').click();
    const prefs = page.getByRole('table', { name: 'Preferences' });
    assert.equal(await prefs.getByRole('row').count(), 1 + 250);
    const more = page.getByRole('button', { name: 'Load more preferences' });
    assert.equal(await more.count(), 1, 'the rest can be reached');
    await more.click();
    await page.getByText('Preferences (260)').waitFor();
    assert.equal(await prefs.getByRole('row').count(), 1 + 260);
    await prefs.getByRole('cell', { name: 'p-260', exact: true }).waitFor();
    assert.match(await counts.getByRole('listitem').filter({ hasText: 'Preferences' }).innerText(), /^260\s*Preferences$/);
    assert.equal(await more.count(), 0, 'the last page is in');
    await ctx.shot('long-history');
  });

  it('a history longer than the console reads at once says so, and loads the newer merges on top', async () => {
    const { page } = ctx;
    await olderMerges('huge-pri', 'huge-', 1010); // the console reads 4 pages of 250 at once
    await page.goto('/admin/#/customers/huge-pri');
    const history = page.getByRole('region', { name: 'Merge history' });
    const rows = history.getByRole('table').first().getByRole('row');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 1 + 1000);
    await history.getByText('Showing the 1000 oldest merges of this customer; newer ones are not loaded yet.').waitFor();
    assert.match(await rows.nth(1).innerText(), /huge-1000\b/);
    await history.getByRole('button', { name: 'Load newer merges' }).click();
    await history.getByRole('button', { name: 'Load newer merges' }).waitFor({ state: 'detached' });
    assert.equal(await rows.count(), 1 + 1010);
    assert.match(await rows.nth(1).innerText(), /huge-1010\b/, 'the newest on top');
    assert.match(await rows.nth(11).innerText(), /huge-1000\b/);
    assert.equal(await history.getByText(/newer ones are not loaded yet/).count(), 0);
  });
});
