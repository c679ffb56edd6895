// Console in a real browser: the possible-duplicates panel of a customer (score, reasons), its one-click
// merge preview, the merge, then Undo from the merge history: a dry-run preview of what moves back, the
// confirmation, and the result (secondary active again, its order back, the history says undone).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';

describeConsole('possible duplicates and merge undo', (ctx) => {
  it('duplicates panel → merge preview → merge → undo preview → undo', async () => {
    const { page, srv } = ctx;
    const api = srv.api;
    const home = { address1: '5 Elm St', city: 'Hoboken', postCode: '07030', countryCode: 'US' };
    const mk = async (body: Record<string, unknown>) => assert.equal((await api.post('/crm/customers', body)).status, 201);
    await mk({ externalId: 'u-pri', firstName: 'Nora', lastName: 'Vance', emails: [{ email: 'nora.vance@example.com' }], phones: [{ number: '(201) 555-0188' }], addresses: [home] });
    await mk({ externalId: 'u-dup', firstName: 'NORA', lastName: 'VANCE', emails: [{ email: 'Nora.Vance@Example.com' }], phones: [{ number: '+1 201 555 0188' }] });
    await mk({ externalId: 'u-kid', firstName: 'Theo', lastName: 'Vance', addresses: [home] });
    const order = await api.post('/crm/customers/u-dup/orders', { externalId: 'o-dup', orderedAt: '2025-05-01T10:00:00.000Z', currency: 'USD', total: '42.00' });
    assert.equal(order.status, 201, order.text);
    // Reads serve the pairs as they stand: the worker's refresher folds the new customers in (here, the test does).
    await refreshDuplicates(ctx.tdb.db, 'US');

    await ctx.signIn();
    await page.goto(`/admin#/customers/u-pri`);
    await page.getByRole('heading', { level: 1, name: 'Nora Vance' }).waitFor();
    const panel = page.getByRole('region', { name: 'Possible duplicates' });
    const dupRow = panel.getByRole('row', { name: /u-dup/ });
    await dupRow.waitFor();
    const rowText = await dupRow.innerText();
    assert.match(rowText, /9\d%|100%/);
    assert.match(rowText, /Email: same email nora\.vance@example\.com/);
    assert.match(rowText, /Phone: same phone \+12015550188/);
    assert.equal(await panel.getByRole('row', { name: /u-kid/ }).count(), 0, 'the family member is not listed');
    await ctx.shot('duplicates-panel');

    // One click: the merge form is filled and its dry run shown.
    await panel.getByRole('button', { name: 'Preview merge of u-dup' }).click();
    const preview = page.getByRole('region', { name: /Merge preview/ });
    await preview.waitFor();
    assert.match(await preview.getByRole('row', { name: /^Orders/ }).innerText(), /1/);
    assert.equal(await page.getByLabel('External IDs of the customers to merge into this one').inputValue(), (await api.get('/crm/customers/u-dup')).body.uuid);
    await ctx.shot('duplicates-merge-preview');
    await preview.getByRole('button', { name: 'Confirm merge' }).click();
    await page.getByRole('dialog', { name: /Merge 1 customer into u-pri/ }).getByRole('button', { name: 'Merge' }).click();
    await page.getByRole('status').filter({ hasText: 'Merged u-dup into u-pri' }).waitFor();
    assert.equal((await api.get('/crm/customers/u-dup')).body.status, 'disabled');

    // After the reload: the duplicate is gone from the panel; the merge is in the history with Undo.
    const history = page.getByRole('region', { name: 'Merge history' });
    const undoBtn = history.getByRole('button', { name: 'Undo merge of u-dup' });
    await undoBtn.waitFor();
    await page.getByRole('region', { name: 'Possible duplicates' }).getByText('No likely duplicates of this customer.').waitFor();
    await undoBtn.click();
    const undoPreview = page.getByRole('region', { name: /Undo preview/ });
    await undoPreview.waitFor();
    assert.match(await undoPreview.innerText(), /makes u-dup active again/);
    assert.match(await undoPreview.getByRole('row', { name: /^Orders/ }).innerText(), /1/);
    await ctx.shot('undo-preview');
    assert.equal((await api.get('/crm/customers/u-dup')).body.status, 'disabled', 'the preview changed nothing');

    await undoPreview.getByRole('button', { name: 'Confirm undo' }).click();
    await page.getByRole('dialog', { name: /Undo the merge of u-dup into u-pri/ }).getByRole('button', { name: 'Undo merge' }).click();
    await page.getByRole('status').filter({ hasText: 'Undid the merge of u-dup into u-pri' }).waitFor();
    await page.getByRole('region', { name: 'Merge history' }).getByText(/Undone/).waitFor();
    await page.getByRole('region', { name: 'Possible duplicates' }).getByRole('row', { name: /u-dup/ }).waitFor();
    await ctx.shot('undo-done');
    const dup = (await api.get('/crm/customers/u-dup')).body;
    assert.equal(dup.status, 'active');
    assert.equal(dup.mergedInto, null);
    assert.deepEqual((await api.get('/crm/customers/u-dup/orders')).body.data.map((o: any) => o.externalId), ['o-dup']);
    const ev = await ctx.tdb.db.query<{ source: string }>(`SELECT source FROM events WHERE event_type = 'customerUnmerge'`);
    assert.deepEqual(ev.rows.map((r) => r.source), ['TULIP_APP']);
    assert.deepEqual(ctx.pageErrors, []);
  });
});
