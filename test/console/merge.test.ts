// Console in a real browser: a customer's attached data, then a merge previewed (dry run: counts, nothing
// changes), refused with the API's message for an unknown id, confirmed, and its result: merge history,
// the secondaries disabled and linking to their survivor.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';

describeConsole('customer page and merge', (ctx) => {
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

    await ctx.signIn();
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
});
