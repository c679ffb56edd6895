// Console in a real browser, by keyboard: after an act that draws its part of the page again, focus lands somewhere a
// keyboard or screen-reader user can go on from, never on the page's body (a probe, 2026-11-29: after a merge, an undo,
// a subscription saved or (de)activated, and an API key's "Done, hide it", document.activeElement was <body>).
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import type { Page } from 'playwright-core';
import { describeConsole } from './browser.ts';

/** What has focus, as "tag: accessible text" (text or aria-label). */
const focused = (page: Page) => page.evaluate(() => {
  const el = document.activeElement;
  return el ? `${el.tagName.toLowerCase()}: ${el.getAttribute('aria-label') ?? el.textContent?.trim().slice(0, 60)}` : 'none';
});

/** Waits until focus is on something other than the body (or gives the last answer after ~15 s: a loaded machine). */
async function focusSettled(page: Page) {
  for (let i = 0; i < 150; i++) {
    const f = await focused(page);
    if (!f.startsWith('body')) return f;
    await page.waitForTimeout(100);
  }
  return focused(page);
}

describeConsole('focus after acts', (ctx) => {
  before(() => ctx.signIn());

  it('a merge and its undo, confirmed by keyboard, leave focus on the page heading', async () => {
    const { page, srv } = ctx;
    for (const externalId of ['fo-pri', 'fo-sec']) assert.equal((await srv.api.post('/crm/customers', { externalId })).status, 201);
    await page.goto('/admin/#/customers/fo-pri');
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.getByLabel('External IDs of the customers to merge into this one').fill('fo-sec');
    await page.getByRole('button', { name: 'Preview merge' }).press('Enter');
    const preview = page.getByRole('region', { name: /Merge preview/ });
    await preview.getByRole('button', { name: 'Confirm merge' }).press('Enter');
    await page.getByRole('dialog', { name: /Merge 1 customer into/ }).getByRole('button', { name: 'Merge' }).press('Enter');
    await page.getByRole('status').filter({ hasText: 'Merged fo-sec into fo-pri' }).waitFor();
    assert.match(await focusSettled(page), /^h1: /, 'after the merge');

    const undo = page.getByRole('region', { name: 'Merge history' }).getByRole('button', { name: 'Undo merge of fo-sec' });
    await undo.press('Enter');
    await page.getByRole('region', { name: /Undo preview/ }).getByRole('button', { name: 'Confirm undo' }).press('Enter');
    await page.getByRole('dialog', { name: /Undo the merge of fo-sec/ }).getByRole('button', { name: 'Undo merge' }).press('Enter');
    await page.getByRole('status').filter({ hasText: 'Undid the merge of fo-sec' }).waitFor();
    assert.match(await focusSettled(page), /^h1: /, 'after the undo');
    assert.equal((await srv.api.get('/crm/customers/fo-sec')).body.status, 'active');
  });

  it('Webhooks: after a subscription is created, saved and deactivated, focus is back on its row', async () => {
    const { page, srv } = ctx;
    await ctx.go('Webhooks');
    await page.getByRole('button', { name: 'New subscription' }).press('Enter');
    const dialog = page.getByRole('dialog', { name: 'New webhook subscription' });
    await dialog.getByLabel('Webhook URL').fill('https://93.184.215.14/focus');
    await dialog.getByRole('button', { name: 'Create subscription' }).press('Enter');
    const created = page.getByRole('dialog', { name: 'Subscription created' });
    await created.getByRole('button', { name: 'Done' }).press('Enter');
    await created.waitFor({ state: 'detached' });
    assert.equal(await focusSettled(page), 'button: New subscription', 'after the create: back where it started');

    const row = page.locator('tr', { hasText: 'https://93.184.215.14/focus' });
    await row.getByRole('button', { name: /^Edit / }).press('Enter');
    const edit = page.getByRole('dialog', { name: 'Edit subscription' });
    await edit.getByRole('checkbox', { name: 'customerUpdate' }).check();
    await edit.getByRole('button', { name: 'Save changes' }).press('Enter');
    await edit.waitFor({ state: 'detached' });
    assert.match(await focusSettled(page), /^button: Edit .*93\.184\.215\.14\/focus/, 'after the save');

    await row.getByRole('button', { name: /^Deactivate / }).press('Enter');
    await row.getByRole('button', { name: /^Activate / }).waitFor();
    assert.match(await focusSettled(page), /^button: Activate .*93\.184\.215\.14\/focus/, 'after the deactivation');
    const subs = (await srv.api.withVersion('2026-11').get('/integrations/webhooks/subscriptions')).body.data;
    const sub = subs.find((s: any) => s.url === 'https://93.184.215.14/focus');
    assert.deepEqual([sub.isActive, sub.eventTypes.includes('customerUpdate')], [false, true]);
  });

  it('a failed act leaves focus on its button; a dialog opened by one gives it back there; an undo preview\'s Cancel too', async () => {
    // A probe (2026-11-29): the busy button was disabled, which moved the focus to the body; a failure left it there,
    // and the secret dialog, opened meanwhile, returned it there.
    const { page, srv } = ctx;
    await ctx.go('Webhooks');
    const row = page.locator('tr', { hasText: 'https://93.184.215.14/focus' });
    await page.route('**/integrations/webhooks/subscriptions/*', (route) => (route.request().method() === 'PATCH'
      ? route.fulfill({ status: 429, headers: { 'content-type': 'application/json', 'retry-after': '1' }, body: JSON.stringify({ errors: [{ message: 'slow down', errorCode: 'RateLimited', moreInfo: '' }] }) })
      : route.continue()));
    try {
      await row.getByRole('button', { name: /^Activate / }).press('Enter');
      await page.getByText('Could not change the state: slow down').waitFor();
      assert.match(await focused(page), /^button: Activate .*93\.184\.215\.14\/focus/, 'after the refused act');
    } finally {
      await page.unroute('**/integrations/webhooks/subscriptions/*');
    }
    await row.getByRole('button', { name: /^Reveal secret / }).press('Enter');
    const secret = page.getByRole('dialog', { name: /secret/i });
    await secret.waitFor();
    await page.keyboard.press('Escape');
    await secret.waitFor({ state: 'detached' });
    assert.match(await focused(page), /^button: Reveal secret .*93\.184\.215\.14\/focus/, 'after the secret dialog');

    for (const externalId of ['fc-pri', 'fc-sec']) assert.equal((await srv.api.post('/crm/customers', { externalId })).status, 201);
    assert.equal((await srv.api.withVersion('2026-11').post('/crm/customers/fc-pri/merge', { mergeWithCustomerIds: ['fc-sec'] })).status, 200);
    await page.goto('/admin/#/customers/fc-pri');
    const undo = page.getByRole('region', { name: 'Merge history' }).getByRole('button', { name: 'Undo merge of fc-sec' });
    await undo.press('Enter');
    await page.getByRole('region', { name: /Undo preview/ }).getByRole('button', { name: 'Cancel' }).press('Enter');
    assert.equal(await focused(page), 'button: Undo merge of fc-sec', 'after cancelling the undo preview');
    assert.deepEqual(ctx.pageErrors.splice(0), []);
  });

  it('API Keys: "Done, hide it" leaves focus on the list of keys', async () => {
    const { page } = ctx;
    await ctx.go('API Keys');
    await page.getByLabel('Name').fill('focus-key');
    await page.getByRole('button', { name: 'Create API key' }).press('Enter');
    await page.getByRole('button', { name: 'Done, hide it' }).press('Enter');
    assert.match(await focusSettled(page), /^h2: /, 'after hiding the new key');
    assert.deepEqual(ctx.pageErrors.splice(0), []);
  });
});
