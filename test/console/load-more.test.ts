// Console in a real browser: the customers list (no search term), the audit log and the webhook subscriptions show
// their first page and load the next ones with the shared "Load more" control (dom.js moreButton), which goes once the
// last page is in. The Webhooks page read every subscription at once (10,000: 43 requests, 19 s, ~960,000 DOM nodes),
// and the Webhooks Logs filter put every one into its select, until 2026-11-30.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Request } from 'playwright-core';
import { describeConsole } from './browser.ts';
import { appendAudit, SYSTEM } from '../../src/audit/store.ts';

const SUBS = '/integrations/webhooks/subscriptions';

describeConsole('load more', (ctx) => {
  const total = 120; // subscriptions: more than two pages of 50, more than the Logs filter's first 100
  const subUrl = (n: number) => `https://93.184.215.14/paged-${String(n).padStart(3, '0')}`;
  /** The search of each request for the list of subscriptions the page makes (not those of one subscription). */
  const listed: string[] = [];
  const onRequest = (r: Request) => {
    const u = new URL(r.url());
    if (u.pathname.endsWith(SUBS)) listed.push(u.search);
  };

  it('Customers: pages of 50 until the last, newest first, each customer once', async () => {
    const { page, srv } = ctx;
    const total = 120;
    for (let i = 0; i < total; i += 60) {
      const items = Array.from({ length: Math.min(60, total - i) }, (_, k) => ({ externalId: `more-${i + k}`, firstName: 'Paged', lastName: `P${String(i + k).padStart(3, '0')}` }));
      for (let j = 0; j < items.length; j += 30) {
        const r = await srv.api.post('/crm/customers/bulk', items.slice(j, j + 30));
        assert.equal(r.status, 200, r.text);
      }
    }
    await ctx.signIn();
    await ctx.go('Customers');
    const rows = page.locator('table tbody tr');
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 50);
    const more = page.getByRole('button', { name: 'Load more' });
    await more.click();
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 100);
    await more.click();
    await page.waitForFunction((n) => document.querySelectorAll('table tbody tr').length === n, total);
    await more.waitFor({ state: 'detached' });
    const names = (await rows.allInnerTexts()).map((t) => /P(\d{3})/.exec(t)?.[1]);
    assert.equal(new Set(names).size, total, 'each customer once');
    assert.ok(names.every(Boolean));
    assert.deepEqual(ctx.pageErrors.splice(0), []);
  });

  it('Audit log: "Load older entries" appends the next pages and goes after the last', async () => {
    const { page } = ctx;
    const acts = 75;
    for (let i = 0; i < acts; i++) {
      await appendAudit(ctx.tdb.db, { actor: SYSTEM, action: 'subscription.disabled', targetType: 'WebhookSubscription', targetId: null, ip: null, details: { reason: `paged ${i}` } });
    }
    await ctx.go('Audit log');
    const older = page.getByRole('button', { name: 'Load older entries' });
    await older.waitFor();
    const before = await page.locator('table tbody tr').count();
    assert.equal(before, 50);
    await older.click();
    await older.waitFor({ state: 'detached' });
    const texts = await page.locator('table tbody tr').allInnerTexts();
    const paged = texts.map((t) => /paged (\d+)/.exec(t)?.[1]).filter(Boolean);
    assert.equal(new Set(paged).size, acts, 'every entry once');
    assert.equal(paged[0], String(acts - 1), 'newest first');
    assert.deepEqual(ctx.pageErrors.splice(0), []);
  });

  it('Webhooks: a page of subscriptions, then "Load more subscriptions" until the last, each once; one created here shows at once', async () => {
    const { page, srv } = ctx;
    const api = srv.api.withVersion('2026-11');
    for (let i = 0; i < total; i += 10) {
      await Promise.all(Array.from({ length: 10 }, async (_, k) => {
        const r = await api.post(SUBS, { url: subUrl(i + k), eventTypes: ['webhookTest'], isActive: false });
        assert.equal(r.status, 201, r.text);
      }));
    }
    page.on('request', onRequest);
    try {
      await ctx.go('Webhooks');
      const rows = page.locator('tbody tr[data-sub]');
      const more = page.getByRole('button', { name: 'Load more subscriptions' });
      await more.waitFor();
      assert.equal(await rows.count(), 50, 'a page');
      assert.deepEqual(listed.splice(0), ['?limit=50'], 'one request');
      await more.click();
      await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-sub]').length === 100);
      await more.click();
      await more.waitFor({ state: 'detached' });
      assert.equal(listed.splice(0).length, 2, 'one request a page');
      // Oldest first (the API's order), each once; the rows added later labelled for the stacked (phone) layout too.
      assert.deepEqual(await rows.locator('th').allInnerTexts(), Array.from({ length: total }, (_, n) => subUrl(n)));
      assert.equal(await rows.last().locator('td[data-label="Event types"]').count(), 1);

      // A subscription created here is the newest, past the page shown: it is shown at once, after the page, and once.
      await ctx.go('Customers');
      await ctx.go('Webhooks');
      await more.waitFor();
      assert.equal(await rows.count(), 50);
      await page.getByRole('button', { name: 'New subscription' }).click();
      const dialog = page.getByRole('dialog', { name: 'New webhook subscription' });
      await dialog.getByLabel('Webhook URL').fill(subUrl(total));
      await dialog.getByRole('button', { name: 'Create subscription' }).click();
      await page.getByRole('dialog', { name: 'Subscription created' }).getByRole('button', { name: 'Done' }).click();
      await rows.filter({ hasText: subUrl(total) }).waitFor();
      assert.equal(await rows.count(), 51);
      await more.click();
      await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-sub]').length === 101);
      await more.click();
      await more.waitFor({ state: 'detached' });
      assert.equal(await rows.count(), total + 1);
      assert.equal(await rows.filter({ hasText: subUrl(total) }).count(), 1);
    } finally {
      page.off('request', onRequest);
    }
    assert.deepEqual(ctx.pageErrors.splice(0), []);
  });

  it('Webhooks Logs: the subscription filter offers the first 100, and takes another by its UUID', async () => {
    const { page, srv } = ctx;
    const all = (await srv.api.withVersion('2026-11').get(`${SUBS}?limit=250`)).body.data as { uuid: string; url: string }[];
    const far = all.find((s) => s.url === subUrl(total - 1))!; // past the first 100
    listed.length = 0;
    page.on('request', onRequest);
    try {
      await ctx.go('Webhooks Logs');
      const filter = page.getByLabel('Subscription', { exact: true });
      await filter.locator('option', { hasText: 'Another subscription' }).waitFor({ state: 'attached' });
      assert.equal(await filter.locator('option').count(), 1 + 100 + 1, 'all, the first 100, another');
      assert.equal(await filter.locator('option', { hasText: subUrl(total - 1) }).count(), 0);
      assert.deepEqual(listed.splice(0), ['?limit=100'], 'one request');
      const uuid = page.getByLabel('UUID', { exact: true });
      assert.equal(await uuid.isVisible(), false);
      await filter.selectOption('other');
      // Not a UUID: the form says so and goes nowhere.
      await uuid.fill('not-a-uuid');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      assert.equal(await uuid.evaluate((el: HTMLInputElement) => el.validity.patternMismatch), true);
      assert.doesNotMatch(page.url(), /subscription=/);
      await uuid.fill(far.uuid);
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.waitForURL(new RegExp(`subscription=${far.uuid}`));
      // Filtered by one past the first 100 (a Logs link does the same): it is named in the filter, read alone.
      await filter.locator(`option[value="${far.uuid}"]`).waitFor({ state: 'attached' });
      assert.equal(await filter.inputValue(), far.uuid);
      assert.match(await filter.locator(`option[value="${far.uuid}"]`).innerText(), new RegExp(subUrl(total - 1)));
      assert.deepEqual(listed.splice(0), ['?limit=100']);
    } finally {
      page.off('request', onRequest);
    }
    assert.deepEqual(ctx.pageErrors.splice(0), []);
  });
});
