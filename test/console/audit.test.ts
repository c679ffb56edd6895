// Console in a real browser: a bad percent-escape in a route is "Page not found" (not a blank page), and
// Integrations → Audit log lists administrative acts with filters.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { appendAudit, SYSTEM } from '../../src/audit/store.ts';

describeConsole('audit log, bad addresses', (ctx) => {
  it('a route with a bad percent-escape shows "Page not found", and the console keeps working', async () => {
    const { page } = ctx;
    await ctx.signIn();
    for (const hash of ['#/customers/%E0%A4%A', '#/customers/%', '#/customers/%zz']) {
      await page.goto(`/admin${hash}`);
      await page.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor();
    }
    assert.equal(await page.title(), 'Page not found · Bulb console');
    await ctx.go('Customers');
    const errors = ctx.pageErrors.splice(0);
    assert.deepEqual(errors, [], 'no URIError or other script error');
  });

  it('Integrations → Audit log lists acts done in the console and by the API, with filters', async () => {
    const { page } = ctx;
    // Acts: an API key created in the console, an auth client created and revoked by the API, a system act.
    await ctx.go('API Keys');
    await page.getByLabel('Name').fill('audited-key');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('New API key').waitFor();
    const client = (await ctx.srv.api.post('/integrations/authClients', { name: 'audited-client', scopes: ['read'] })).body;
    assert.equal((await ctx.srv.api.delete(`/integrations/authClients/${client.uuid}`)).status, 204);
    await appendAudit(ctx.tdb.db, { actor: SYSTEM, action: 'subscription.disabled', targetType: 'WebhookSubscription', targetId: null, ip: null, details: { reason: 'no success for 120 h' } });

    await ctx.go('Audit log');
    const rows = page.getByRole('table').getByRole('row');
    await page.getByRole('row', { name: /audited-key/ }).waitFor();
    assert.equal(await rows.count(), 1 + 5, 'a header row and five entries (the admin key the start made first)');
    const texts = await rows.allInnerTexts();
    assert.match(texts[1], /subscription\.disabled[\s\S]*System[\s\S]*reason: no success for 120 h/, 'newest first: the system act');
    assert.match(texts[2], /authClient\.revoked[\s\S]*API key[\s\S]*127\.0\.0\.1/);
    assert.match(texts[4], /apiKey\.created[\s\S]*name: audited-key/);
    assert.match(texts[5], /apiKey\.created[\s\S]*System[\s\S]*source: BULB_ADMIN_KEY/, "the start's admin key, the system's act");
    await ctx.shot('audit-log');

    // Filter by action, then by actor, then clear.
    await page.getByLabel('Action').selectOption('authClient.created');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 1);
    assert.match(await rows.nth(1).innerText(), /authClient\.created[\s\S]*AuthClient[\s\S]*name: audited-client/);
    assert.match(page.url(), /action=authClient\.created/);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Actor').fill('system');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 2 && [...document.querySelectorAll('table tbody tr')].every((tr) => /System/.test(tr.textContent!)));
    await page.getByLabel('Actor').fill('nobody-by-that-name');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No entries match these filters.').waitFor();
    assert.deepEqual(ctx.pageErrors.splice(0), []);
  });
});
