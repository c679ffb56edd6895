// Console in a real browser: a bad percent-escape in a route is "Page not found" (not a blank page), and
// Integrations → Audit log lists administrative acts with filters.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';

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
});
