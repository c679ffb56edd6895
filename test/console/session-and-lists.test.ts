// Console in a real browser (probe, 2026-11-28): a dialog open when the session ended (its key revoked) stayed over the
// sign-in page, a signing secret still on screen. (The Webhooks list, which showed at most 2,000 subscriptions then,
// shows them a page at a time since 2026-11-30: load-more.test.ts.)
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { bootstrapAdminKey } from '../../src/auth/service.ts';

const SUBS = '/integrations/webhooks/subscriptions';

describeConsole('sessions', (ctx) => {
  it('a dialog open when the session ends (its key revoked) is closed with it', async () => {
    const { page, srv } = ctx;
    const key = (await srv.api.post('/integrations/apiKeys', { name: 'console session', scopes: ['admin'] })).body;
    await ctx.signIn();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await ctx.signIn(key.key);
    // "this session" marks the key signed in with, not also a BULB_ADMIN_KEY's row: its stored prefix is its first 4
    // characters (`bulb…` for an operator's `bulb_key_…`), which matched every key until 2026-11-28.
    await bootstrapAdminKey(ctx.tdb.db, 'bulb_key_operator_chosen_0123456789');
    await ctx.go('API Keys');
    const mine = page.locator('tr', { hasText: 'this session' });
    await mine.first().waitFor();
    assert.equal(await mine.count(), 1);
    assert.match(await mine.innerText(), /console session/);
    const sub = await srv.api.withVersion('2026-11').post(SUBS, { url: 'https://93.184.215.14/the-newest', eventTypes: ['webhookTest'], isActive: false });
    assert.equal(sub.status, 201, sub.text);
    await ctx.go('Webhooks');
    const row = page.locator('tr', { hasText: 'https://93.184.215.14/the-newest' });
    await row.getByRole('button', { name: 'Reveal secret' }).click();
    const dialog = page.getByRole('dialog', { name: 'Signing secret' });
    await dialog.waitFor();
    assert.match(await dialog.getByLabel('Signing secret').inputValue(), /^whsec_/);
    assert.equal((await srv.api.delete(`/integrations/apiKeys/${key.uuid}`)).status, 204);
    // The next request the console makes is refused (401): the tab signs out.
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate' }).click();
    await page.getByLabel('Admin API key').waitFor();
    assert.equal(await page.locator('dialog').count(), 0, 'no dialog left over the sign-in page');
    assert.equal(await page.getByText(/whsec_/).count(), 0);
  });
});
