// Console in a real browser with values the API accepts but a page must not let loose (found by a probe,
// 2026-11-29): an externalId with an unclosed right-to-left override (U+202E) reversed the rest of the merge preview's
// sentence around the other customer's name; a 255-character externalId without spaces made the customer page scroll
// sideways; a possible-duplicate pair's customer without an externalId was an empty, unclickable link. A second probe
// (the same day): the undo preview, its confirmation and toast, the Webhooks Logs subscription filter and the audit
// details left such an override open inside the sentence; a 255-character externalId overflowed the merge and undo
// previews and their confirmation dialogs at 390 px.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeConsole } from './browser.ts';
import type { Page } from 'playwright-core';
import { refreshDuplicates } from '../../src/crm/duplicates/refresh.ts';

const RTL = 'rtl-\u202Eevil'; // an unclosed right-to-left override

/** The text of the first element matching selector, as the page has it (bidi controls included). */
const textOf = (page: Page, selector: string) => page.locator(selector).first().evaluate((el) => el.textContent ?? '');

/** Opens `primary`'s page and previews the merge of `secondary` into it; returns the preview region. */
async function previewMerge(page: Page, primary: string, secondary: string) {
  await page.goto(`/admin/#/customers/${primary}`);
  await page.getByRole('heading', { level: 1 }).waitFor();
  await page.getByLabel('External IDs of the customers to merge into this one').fill(secondary);
  await page.getByRole('button', { name: 'Preview merge' }).click();
  const preview = page.getByRole('region', { name: /Merge preview/ });
  await preview.waitFor();
  return preview;
}

/** Asserts that every occurrence of value (holding an unclosed override) in text is closed (U+202C) right where it ends. */
function assertClosed(text: string, where: string, value = RTL) {
  assert.ok(text.includes(value), `${where} names the value: ${JSON.stringify(text)}`);
  for (let i = text.indexOf(value); i >= 0; i = text.indexOf(value, i + 1)) {
    assert.equal(text[i + value.length], '\u202C', `${where}: the override is closed right after the value: ${JSON.stringify(text)}`);
  }
}

/** Nothing in the page or in an open dialog is wider than its box (a long word wraps instead). */
async function assertNoSidewaysOverflow(page: Page, where: string) {
  const m = await page.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    viewport: document.documentElement.clientWidth,
    // An element whose text runs past its own box (the dialog itself scrolls sideways, or clips it).
    overflowing: [...document.querySelectorAll('dialog[open], dialog[open] *, .preview, .preview *')]
      .filter((el) => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== 'inline')
      .map((el) => `${el.tagName.toLowerCase()}.${el.className} (${el.scrollWidth} > ${el.clientWidth})`),
  }));
  assert.ok(m.page <= m.viewport, `${where}: the page is ${m.page} px wide in a ${m.viewport} px window`);
  assert.deepEqual(m.overflowing, [], `${where}: no text runs out of its box`);
}

describeConsole('odd but valid values', (ctx) => {
  before(() => ctx.signIn());

  it('a right-to-left override in an externalId is closed where the value ends: the rest of the sentence reads as written', async () => {
    const { page, srv } = ctx;
    const spoof = 'spam-\u202EecilA-PIV otni';
    for (const externalId of ['bidi-target', spoof]) assert.equal((await srv.api.post('/crm/customers', { externalId, firstName: 'Bidi' })).status, 201);
    const preview = await previewMerge(page, 'bidi-target', spoof);
    const sentence = await preview.locator('p').first().evaluate((p) => p.textContent ?? '');
    const end = sentence.indexOf(spoof) + spoof.length;
    assert.ok(sentence.indexOf(spoof) > 0, JSON.stringify(sentence));
    assert.equal(sentence[end], '\u202C', `the override is closed right after the value: ${JSON.stringify(sentence)}`);
    assert.match(sentence.slice(end + 1), /^ into bidi-target would move:$/);
  });

  it('an override left open inside an unclosed isolate is closed too: the words after the value stay in reading order', async () => {
    const { page, srv } = ctx;
    // U+202E then U+2067, neither closed: a U+202C put after the isolate's end is ignored by the bidi algorithm, so
    // the closers must come innermost first (U+2069, then U+202C); until 2026-11-29 they came the other way round and
    // the rest of the sentence read backwards (a probe).
    const nested = 'bidi-\u202Eab\u2067cd';
    for (const externalId of ['bidi-nest', nested]) assert.equal((await srv.api.post('/crm/customers', { externalId, firstName: 'Bidi' })).status, 201);
    const preview = await previewMerge(page, 'bidi-nest', nested);
    const p = preview.locator('p').first();
    const sentence = await p.evaluate((el) => el.textContent ?? '');
    const end = sentence.indexOf(nested) + nested.length;
    assert.equal(sentence.slice(end, end + 2), '\u2069\u202C', JSON.stringify(sentence));
    // As laid out: "into" is left of "would", "would" left of "move" (reversed, they run right to left).
    const lefts = await p.evaluate((el) => {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      const xs: Record<string, number> = {};
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        for (const word of ['into', 'would', 'move']) {
          const at = n.textContent!.lastIndexOf(word);
          if (at < 0) continue;
          const r = document.createRange();
          r.setStart(n, at);
          r.setEnd(n, at + word.length);
          xs[word] = r.getBoundingClientRect().left;
        }
      }
      return xs;
    });
    assert.ok(lefts.into < lefts.would && lefts.would < lefts.move, `reading order as laid out: ${JSON.stringify(lefts)}`);
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

  it('an override in a restored customer\'s externalId is closed in the undo preview, its confirmation and its toast', async () => {
    const { page, srv } = ctx;
    for (const externalId of ['rtl-pri', RTL, 'rtl-2']) assert.equal((await srv.api.post('/crm/customers', { externalId, firstName: 'Rtl' })).status, 201);
    assert.equal((await srv.api.post('/crm/customers/rtl-pri/merge', { mergeWithCustomerIds: [RTL, 'rtl-2'] })).status, 200);
    await page.goto('/admin/#/customers/rtl-pri');
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.getByRole('region', { name: 'Merge history' }).getByRole('button', { name: /^Undo merge of / }).click();
    const preview = page.getByRole('region', { name: /Undo preview/ });
    await preview.waitFor();
    const sentence = await preview.locator('p').first().evaluate((p) => p.textContent ?? '');
    assertClosed(sentence, 'the undo preview');
    assert.match(sentence, /^Undoing this merge makes rtl-\u202Eevil\u202C, rtl-2 active again and moves back to them, from rtl-pri:$/);

    await preview.getByRole('button', { name: 'Confirm undo' }).click();
    const dialog = page.getByRole('dialog', { name: /^Undo the merge of / });
    await dialog.waitFor();
    assertClosed(await textOf(page, 'dialog[open] h2'), 'the confirmation\'s title');
    assert.match(await textOf(page, 'dialog[open] h2'), /\u202C, rtl-2 into rtl-pri\?$/);
    assertClosed(await textOf(page, 'dialog[open] .dialog-body p'), 'the confirmation\'s message');
    await dialog.getByRole('button', { name: 'Undo merge' }).click();
    const toast = page.getByRole('status').filter({ hasText: 'Undid the merge of' });
    await toast.waitFor();
    const said = await toast.evaluate((t) => t.textContent ?? '');
    assertClosed(said, 'the toast');
    assert.match(said, /\u202C, rtl-2 into rtl-pri$/);
  });

  it('an override in a value is closed where the value ends in the Webhooks Logs filter and in the audit details', async () => {
    const { page, srv } = ctx;
    const url = `http://127.0.0.1:9/${RTL}`;
    const audited = 'aud-\u202Eevil';
    for (const externalId of ['aud-pri', audited, 'aud-2']) assert.equal((await srv.api.post('/crm/customers', { externalId })).status, 201);
    const merged = await srv.api.withVersion('2026-11').post('/crm/customers/aud-pri/merge', { mergeWithCustomerIds: [audited, 'aud-2'] });
    assert.equal(merged.status, 200, merged.text);
    const undone = await srv.api.withVersion('2026-11').post(`/crm/merges/${merged.body.mergeUuid}/undo`);
    assert.equal(undone.status, 200, undone.text);
    const sub = await srv.api.withVersion('2026-11').post('/integrations/webhooks/subscriptions', { url, eventTypes: ['customerCreate', 'customerUpdate'] });
    assert.equal(sub.status, 201, sub.text);
    await ctx.go('Webhooks Logs');
    const option = page.getByLabel('Subscription', { exact: true }).locator('option', { hasText: 'rtl-' });
    await option.waitFor({ state: 'attached' });
    assert.equal(await option.evaluate((o) => o.textContent), `${url}\u202C (customerCreate, customerUpdate)`);

    // The undo's details hold the restored customers' externalIds as JSON, and more after them.
    await ctx.go('Audit log');
    const row = page.getByRole('row', { name: /merge\.undone[\s\S]*aud-pri/ }).first();
    await row.waitFor();
    const details = await row.locator('.details').evaluate((td) => td.textContent ?? '');
    assertClosed(details, 'the merge.undone details', audited);
    assert.match(details, /restoredCustomerIds: \["aud-\u202Eevil\u202C","aud-2"\]/);
  });

  it('an override in a new API key\'s name or a search term is closed where it ends, not after the console\'s words', async () => {
    // A probe (2026-11-29): "API key “\u202eSOME KEY” created" read "API key “detaerc ”YEK EMOS".
    const { page } = ctx;
    await ctx.go('API Keys');
    await page.getByLabel('Name').fill(RTL);
    await page.getByRole('button', { name: 'Create API key' }).click();
    const heading = page.locator('[id$="-created-h"]');
    await heading.waitFor();
    assert.equal(await heading.evaluate((el) => el.textContent), `API key “${RTL}\u202C” created`);
    await page.getByRole('button', { name: 'Done, hide it' }).click();
    await page.goto(`/admin/#/customers?q=${encodeURIComponent(RTL)}`);
    const results = page.locator('#results-h');
    await results.waitFor();
    assert.equal(await results.evaluate((el) => el.textContent), `Results for “${RTL}\u202C”`);
  });

  it('a 255-character externalId wraps in the merge and undo previews and their confirmations, at 390 px', async () => {
    const { page, srv } = ctx;
    const long = `W${'y'.repeat(254)}`;
    for (const externalId of [long, 'wrap-pri']) assert.equal((await srv.api.post('/crm/customers', { externalId })).status, 201);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const preview = await previewMerge(page, 'wrap-pri', long);
      await assertNoSidewaysOverflow(page, 'the merge preview');
      await preview.getByRole('button', { name: 'Confirm merge' }).click();
      const merge = page.getByRole('dialog', { name: /^Merge 1 customer into wrap-pri/ });
      await merge.waitFor();
      await assertNoSidewaysOverflow(page, 'the merge confirmation');
      await ctx.shot('long-id-merge-dialog-390');
      await merge.getByRole('button', { name: 'Merge' }).click();
      await page.getByRole('status').filter({ hasText: 'Merged W' }).waitFor();

      await page.getByRole('region', { name: 'Merge history' }).getByRole('button', { name: /^Undo merge of W/ }).click();
      const undo = page.getByRole('region', { name: /Undo preview/ });
      await undo.waitFor();
      await assertNoSidewaysOverflow(page, 'the undo preview');
      await undo.getByRole('button', { name: 'Confirm undo' }).click();
      const confirm = page.getByRole('dialog', { name: /^Undo the merge of W/ });
      await confirm.waitFor();
      await assertNoSidewaysOverflow(page, 'the undo confirmation');
      await ctx.shot('long-id-undo-dialog-390');
      await confirm.getByRole('button', { name: 'Cancel' }).click();
    } finally {
      await page.setViewportSize({ width: 1360, height: 900 });
    }
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
