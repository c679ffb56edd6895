// Console page for possible duplicates across all customers (#/duplicates, GET /api/2026-11/crm/duplicates;
// issue 24 item 11), in Chromium at 1440 and 390 px: it lists the pairs the API lists (score, reasons), pages
// on with "Show more pairs", filters by the lowest score, and each pair's *Preview merge* opens the merge
// preview (a dry run) of the second customer into the first.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeConsole } from './browser.ts';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';

const NAMES = ['Quill', 'Harrow', 'Benedek', 'Okonkwo', 'Larkspur', 'Vasquez', 'Tennant', 'Marchetti', 'Osei', 'Lindqvist'];

describeConsole('possible duplicates page', (ctx) => {
  let pairs: any[] = [];
  before(async () => {
    const api = ctx.srv.api;
    const mk = async (body: Record<string, unknown>) => assert.equal((await api.post('/crm/customers', body)).status, 201);
    await mk({ externalId: 'u-pri', firstName: 'Nora', lastName: 'Vance', emails: [{ email: 'nora.vance@example.com' }], phones: [{ number: '(201) 555-0188' }] });
    await mk({ externalId: 'u-dup', firstName: 'NORA', lastName: 'VANCE', emails: [{ email: 'Nora.Vance@Example.com' }], phones: [{ number: '+1 201 555 0188' }] });
    assert.equal((await api.post('/crm/customers/u-dup/orders', { externalId: 'o-dup', orderedAt: '2025-05-01T10:00:00.000Z', currency: 'USD', total: '42.00' })).status, 201);
    // A pair sharing only a phone (a household: 0.6, below the default minScore of 0.8).
    await mk({ externalId: 'h-1', firstName: 'Sam', lastName: 'Ortiz', phones: [{ number: '(201) 555-0111' }] });
    await mk({ externalId: 'h-2', firstName: 'Ivy', lastName: 'Brennan', phones: [{ number: '+1 201 555 0111' }] });
    // 51 more pairs of different names sharing an email (0.9): more than the page's 50.
    const people = Array.from({ length: 51 }, (_, i) => [
      { externalId: `p-${i}-0`, firstName: NAMES[i % 10], lastName: `${NAMES[Math.floor(i / 10)]}son`, emails: [{ email: `person.${i}@example.org` }] },
      { externalId: `p-${i}-1`, firstName: 'Robin', lastName: `${NAMES[(i + 3) % 10]}berg`, emails: [{ email: `person.${i}@example.org` }] },
    ]).flat();
    for (let i = 0; i < people.length; i += 100) {
      const r = await api.post('/crm/customers/bulk', people.slice(i, i + 100));
      assert.equal(r.status, 200, r.text);
    }
    // Reads serve the pairs as they stand: the worker's refresher folds the new customers in (here, the test does).
    await refreshDuplicates(ctx.tdb.db, 'US');
    pairs = (await api.withVersion('2026-11').get('/crm/duplicates?limit=250')).body.data;
    assert.ok(pairs.length >= 52, `the API lists the pairs (${pairs.length})`);
    await ctx.signIn();
  });

  it('lists the pairs the API lists, pages on, and fits a 1440 px and a 390 px screen', async () => {
    const { page } = ctx;
    for (const width of [1440, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await ctx.go('Customers');
      await ctx.go('Possible duplicates');
      const table = page.getByRole('table', { name: 'Possible duplicate pairs, best first' });
      const rows = table.locator('tbody tr');
      await rows.first().waitFor();
      assert.equal(pairs.length, 52, 'precondition: 52 pairs at the default minScore');
      assert.equal(await rows.count(), 50, 'the first page');
      await page.getByRole('button', { name: 'Show more pairs' }).click();
      await page.waitForFunction((n) => document.querySelectorAll('tbody tr').length === n, pairs.length);
      assert.equal(await page.getByRole('button', { name: 'Show more pairs' }).count(), 0, 'no further page');
      const nora = table.getByRole('row', { name: /u-pri/ });
      const text = await nora.innerText();
      assert.match(text, /u-dup/);
      assert.match(text, /\d+%/);
      assert.match(text, /Email: same email nora\.vance@example\.com/);
      // The order of the page is the API's.
      const shown = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.querySelector('a')!.textContent));
      assert.deepEqual(shown, pairs.map((p) => p.customers[0].externalId));
      const m = await table.evaluate((t) => ({ table: t.getBoundingClientRect().width, box: t.parentElement!.clientWidth, page: document.documentElement.scrollWidth }));
      assert.ok(m.table <= m.box + 0.5, `${width} px: the table (${m.table} px) fits its box (${m.box} px)`);
      assert.ok(m.page <= width, `${width} px: the page does not scroll sideways`);
      await ctx.shot(`duplicate-pairs-${width}`);
    }
  });

  it('filters by the lowest score', async () => {
    const { page, srv } = ctx;
    const count = async (min: number) => (await srv.api.withVersion('2026-11').get(`/crm/duplicates?minScore=${min}&limit=250`)).body.data.length;
    assert.deepEqual([await count(0.95), await count(0.8), await count(0.5)], [1, 52, 53], 'precondition: the scores planted');
    await page.setViewportSize({ width: 1440, height: 900 });
    await ctx.go('Possible duplicates');
    const rows = page.getByRole('table', { name: 'Possible duplicate pairs, best first' }).locator('tbody tr');
    await page.getByLabel('Lowest score').selectOption('0.95');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await page.waitForURL(/#\/duplicates\?minScore=0\.95$/);
    await page.getByText('1 pair scoring 95% or more.', { exact: true }).waitFor();
    assert.equal(await rows.count(), 1);
    assert.match(await rows.innerText(), /u-pri/);

    await page.getByLabel('Lowest score').selectOption('0.5');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByText('50+ pairs scoring 50% or more.', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Show more pairs' }).click();
    await page.getByText('53 pairs scoring 50% or more.', { exact: true }).waitFor();
    const household = page.getByRole('row', { name: /h-1/ });
    assert.match(await household.innerText(), /60%[\s\S]*Phone: same phone \+12015550111/);
  });

  it("Preview merge opens the first customer with the second's merge previewed, changing nothing", async () => {
    const { page, srv } = ctx;
    await ctx.go('Possible duplicates');
    await page.getByRole('link', { name: 'Preview merge of u-dup into u-pri' }).click();
    await page.getByRole('heading', { level: 1, name: 'Nora Vance' }).waitFor();
    const preview = page.getByRole('region', { name: /Merge preview/ });
    await preview.waitFor();
    assert.match(await preview.getByRole('row', { name: /^Orders/ }).innerText(), /1/);
    // By uuid (an externalId may look like another customer's uuid); the preview names it as resolved.
    assert.equal(await page.getByLabel('External IDs of the customers to merge into this one').inputValue(), (await srv.api.get('/crm/customers/u-dup')).body.uuid);
    assert.match(await preview.innerText(), /Merging u-dup into u-pri would move/);
    assert.equal((await srv.api.get('/crm/customers/u-dup')).body.status, 'active', 'a preview changes nothing');
    await ctx.shot('duplicate-pairs-preview');
  });

  it('says how many changed customers are still being checked (the pairs are those already folded in)', async () => {
    const { page, srv } = ctx;
    assert.equal((await srv.api.post('/crm/customers', { externalId: 'late-1', firstName: 'Nora', lastName: 'Vance', emails: [{ email: 'nora.vance@example.com' }] })).status, 201);
    await ctx.go('Customers');
    await ctx.go('Possible duplicates');
    await page.getByText('1 recently changed customer is still being checked in the background: their pairs appear once checked.').waitFor();
    await refreshDuplicates(ctx.tdb.db, 'US');
    await ctx.go('Customers');
    await ctx.go('Possible duplicates');
    await page.getByRole('row', { name: /late-1/ }).first().waitFor();
    assert.equal(await page.getByText(/still being checked/).count(), 0);
  });
});
