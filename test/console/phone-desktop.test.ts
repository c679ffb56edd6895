// Console layout at a phone's width (390 px) and a desktop's (1440 px), in Chromium (issue 24, item 11): the
// Webhooks table fits its box (or scrolls inside a labelled, focusable region; the page itself never scrolls
// sideways), the chart's labels render at 10 px or more, and times carry their time zone (the browser runs in
// Asia/Kolkata, UTC+5:30, so a missing or wrong zone shows).
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeConsole } from './browser.ts';

const WIDTHS = [390, 1280, 1440]; // a phone, a small laptop, a desktop
const LONG_URL = 'http://127.0.0.1:9/webhooks/bulb/a-rather-long-path-that-a-real-integrator-might-use?tenant=acme-retail-eu-west';

describeConsole('phone and desktop widths', (ctx) => {
  before(() => ctx.signIn());

  it('Webhooks: the subscriptions table fits its box and the chart labels are at least 10 px, at 390, 1280 and 1440 px', async () => {
    const { page, srv } = ctx;
    const api = srv.api.withVersion('2026-11');
    for (const url of [LONG_URL, 'http://127.0.0.1:9/hook']) {
      const r = await api.post('/integrations/webhooks/subscriptions', { url, eventTypes: ['customerCreate', 'customerUpdate', 'customerMerge', 'customerNoteCreate'] });
      assert.equal(r.status, 201, r.text);
    }
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 844 });
      await ctx.go('Webhooks');
      const table = page.getByRole('table', { name: 'Webhook subscriptions' });
      await table.getByRole('row', { name: /a-rather-long-path/ }).waitFor();
      const m = await table.evaluate((t) => {
        const wrap = t.parentElement!;
        return { table: t.getBoundingClientRect().width, box: wrap.clientWidth, scrollWidth: document.documentElement.scrollWidth, viewport: window.innerWidth };
      });
      assert.ok(m.table <= m.box + 0.5, `${width} px: the table (${m.table} px) fits its box (${m.box} px)`);
      assert.ok(m.scrollWidth <= m.viewport, `${width} px: the page does not scroll sideways (${m.scrollWidth} > ${m.viewport})`);
      // Every action of a row is on screen, not cut off.
      const del = table.getByRole('button', { name: `Delete ${LONG_URL}` });
      const box = (await del.boundingBox())!;
      assert.ok(box.x >= 0 && box.x + box.width <= width, `${width} px: the Delete button is on screen`);

      const chart = page.getByRole('img', { name: /^All subscriptions:/ });
      await chart.waitFor();
      const labels = await chart.evaluate((svg) => [...svg.querySelectorAll('text')].map((t) => {
        const scale = (t as SVGTextElement).getScreenCTM()!.a;
        return { text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale, h: t.getBoundingClientRect().height };
      }));
      assert.ok(labels.length >= 4, 'the chart has hour and scale labels');
      for (const l of labels) assert.ok(l.px >= 10 && l.h >= 10, `${width} px: label "${l.text}" renders at ${l.px.toFixed(1)} px (box ${l.h.toFixed(1)} px)`);
      const chartBox = (await chart.boundingBox())!;
      assert.ok(chartBox.x + chartBox.width <= width, `${width} px: the chart fits the screen`);
      await ctx.shot(`webhooks-${width}`);
    }
  });

  it('scrolls a table too wide for a phone inside a labelled, focusable region, not the page', async () => {
    const { page, srv } = ctx;
    // An audited act with a long target, so the six-column audit table is wider than a phone.
    assert.equal((await srv.api.post('/integrations/apiKeys', { name: 'a-key-with-a-long-name-for-the-audit-log', scopes: ['read'] })).status, 201);
    await page.setViewportSize({ width: 390, height: 844 });
    await ctx.go('Audit log');
    const table = page.getByRole('table', { name: 'Audit log entries, newest first' });
    await table.getByRole('row', { name: /a-key-with-a-long-name/ }).first().waitFor();
    const m = await table.evaluate((t) => ({ table: t.scrollWidth, box: t.parentElement!.clientWidth }));
    assert.ok(m.table > m.box, `precondition: the table (${m.table} px) is wider than a phone's box (${m.box} px)`);
    const region = page.getByRole('region', { name: 'Audit log entries, newest first, scrolls sideways' });
    await region.waitFor();
    assert.equal(await region.getAttribute('tabindex'), '0', 'the scrolling box can be reached by keyboard');
    assert.ok(await region.evaluate((r) => r.scrollWidth > r.clientWidth), 'the region is what scrolls');
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'the page does not scroll sideways');
    await ctx.shot('audit-390');
    // At desktop width the same table fits: no scrolling region.
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.waitForFunction(() => !document.querySelector('[aria-label$="scrolls sideways"]'));
  });

  it('no page of the console scrolls sideways on a phone', async () => {
    const { page, srv } = ctx;
    assert.equal((await srv.api.post('/crm/customers', { externalId: 'wide-1', firstName: 'Wilhelmina-Josephine', lastName: 'Featherstonehaugh-Cholmondeley', emails: [{ email: 'wilhelmina.josephine.featherstonehaugh@a-long-domain-name.example.com' }] })).status, 201);
    await page.setViewportSize({ width: 390, height: 844 });
    const pages = ['Customers', 'Possible duplicates', 'Imports', 'Webhooks', 'Webhooks Logs', 'API Keys', 'Auth Clients', 'Audit log'];
    for (const name of pages) {
      await ctx.go(name);
      await page.waitForFunction(() => !document.querySelector('[aria-busy="true"], .state-loading'));
      const m = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, viewport: innerWidth }));
      assert.ok(m.page <= m.viewport, `${name}: the page is ${m.page} px wide in a ${m.viewport} px screen`);
    }
    await page.goto('/admin#/customers/wide-1');
    await page.getByRole('heading', { level: 1, name: /Wilhelmina/ }).waitFor();
    await page.waitForFunction(() => !document.querySelector('[aria-busy="true"], .state-loading'));
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), 'a customer page fits a phone');
    await ctx.shot('customer-390');
  });

  it('shows times with their time zone (UTC+5:30 here), and the chart says its hours are local', async () => {
    const { page, srv } = ctx;
    await page.setViewportSize({ width: 1440, height: 900 });
    const created = (await srv.api.post('/crm/customers', { externalId: 'tz-1', firstName: 'Zoned' })).body;
    await page.goto('/admin#/customers/tz-1');
    await page.getByRole('heading', { level: 1, name: 'Zoned' }).waitFor();
    const shown = await page.locator('time').first().innerText();
    // The UTC instant shifted by +5:30 and labelled as such.
    const local = new Date(Date.parse(created.createdAt) + 330 * 60_000).toISOString().replace('T', ' ').slice(0, 19);
    assert.equal(shown, `${local} UTC+5:30`);
    await ctx.go('Webhooks');
    await page.getByText('Hours in UTC+5:30').waitFor();
    await ctx.go('Webhooks Logs');
    await page.getByText('In your time zone, UTC+5:30').first().waitFor();
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' }, { context: { timezoneId: 'Asia/Kolkata' } });
