// Console in a real browser: the customers list (no search term) and the audit log show their first page and load
// the next ones with the shared "Load more" control (dom.js moreButton), which goes once the last page is in.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { appendAudit, SYSTEM } from '../../src/audit/store.ts';

describeConsole('load more', (ctx) => {
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
});
