// Console in a real browser with values the API accepts but a page must not let loose (found by a probe,
// 2026-11-29): an externalId with an unclosed right-to-left override (U+202E) reversed the rest of the merge preview's
// sentence around the other customer's name; a 255-character externalId without spaces made the customer page scroll
// sideways; a possible-duplicate pair's customer without an externalId was an empty, unclickable link.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeConsole } from './browser.ts';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';

describeConsole('odd but valid values', (ctx) => {
  before(() => ctx.signIn());

  it('a right-to-left override in an externalId is closed where the value ends: the rest of the sentence reads as written', async () => {
    const { page, srv } = ctx;
    const spoof = 'spam-\u202EecilA-PIV otni';
    for (const externalId of ['bidi-target', spoof]) assert.equal((await srv.api.post('/crm/customers', { externalId, firstName: 'Bidi' })).status, 201);
    await page.goto('/admin/#/customers/bidi-target');
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.getByLabel('External IDs of the customers to merge into this one').fill(spoof);
    await page.getByRole('button', { name: 'Preview merge' }).click();
    const preview = page.getByRole('region', { name: /Merge preview/ });
    await preview.waitFor();
    const sentence = await preview.locator('p').first().evaluate((p) => p.textContent ?? '');
    const end = sentence.indexOf(spoof) + spoof.length;
    assert.ok(sentence.indexOf(spoof) > 0, JSON.stringify(sentence));
    assert.equal(sentence[end], '\u202C', `the override is closed right after the value: ${JSON.stringify(sentence)}`);
    assert.match(sentence.slice(end + 1), /^ into bidi-target would move:$/);
  });

  it('a 255-character externalId without spaces wraps: the customer page does not scroll sideways', async () => {
    const { page, srv } = ctx;
    const long = `L${'x'.repeat(254)}`;
    assert.equal((await srv.api.post('/crm/customers', { externalId: long })).status, 201);
    assert.equal((await srv.api.post('/crm/customers', { externalId: 'long-pri' })).status, 201);
    assert.equal((await srv.api.post('/crm/customers/long-pri/merge', { mergeWithCustomerIds: [long] })).status, 200);
    for (const id of [long, 'long-pri']) {
      await page.goto(`/admin/#/customers/${id}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.getByText('Merge history').first().waitFor();
      const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
      assert.ok(scroll <= client, `${id.slice(0, 12)}…: the page is ${scroll} px wide in a ${client} px window`);
    }
  });

  it('a possible-duplicate pair\'s customer without an externalId is a link named by its uuid', async () => {
    const { page, srv } = ctx;
    const a = await srv.api.post('/crm/customers', { firstName: 'Noid', lastName: 'Person', emails: [{ email: 'noid.person@example.com' }] });
    const b = await srv.api.post('/crm/customers', { externalId: 'noid-2', firstName: 'Noid', lastName: 'Person', emails: [{ email: 'noid.person@example.com' }] });
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    await refreshDuplicates(ctx.tdb.db, 'US');
    await page.goto('/admin/#/duplicates');
    const link = page.getByRole('link', { name: a.body.uuid, exact: true });
    await link.waitFor();
    assert.ok(await link.isVisible());
    await page.getByRole('link', { name: `Preview merge of ${a.body.uuid} into noid-2` }).or(page.getByRole('link', { name: `Preview merge of noid-2 into ${a.body.uuid}` })).waitFor();
  });
});
