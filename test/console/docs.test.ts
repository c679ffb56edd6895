// /docs in a real browser: Swagger UI loads under the strict CSP (no violation, no script error), shows
// the operations of the latest version, switches versions, and shows Bulb's logo rather than Fastify's.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';

describeConsole('API reference (/docs)', (ctx) => {
  it('Swagger UI loads under the CSP and lists the operations of every version', async () => {
    const p = ctx.page;
    const violations: string[] = [];
    p.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    await p.goto('/docs');
    await p.locator('.opblock-summary-path', { hasText: '/api/2026-11/crm/customers/{id}' }).first().waitFor();
    assert.ok((await p.locator('.opblock').count()) > 30, 'the operations are shown');
    await p.getByText('Authorize', { exact: true }).waitFor();
    const logo = await p.locator('.topbar img').getAttribute('src');
    assert.match(logo ?? '', /^data:image\/svg\+xml;base64,/);
    assert.match(Buffer.from(logo!.split(',')[1], 'base64').toString('utf8'), /#f2b705/, "Bulb's logo");
    await ctx.shot('docs-2026-11');
    // The version selector of the top bar loads another version's document.
    await p.locator('.topbar select').selectOption({ label: '2022-04' });
    // 2022-04's operations are deprecated: Swagger UI shows them struck through (their own class).
    await p.locator('.opblock-summary-path__deprecated', { hasText: '/api/2022-04/crm/customers/{id}/merge_by_external_id' }).first().waitFor();
    assert.equal(await p.locator('.opblock-summary-path, .opblock-summary-path__deprecated', { hasText: '/api/2026-11/' }).count(), 0);
    assert.deepEqual(violations, []);
  });
});
