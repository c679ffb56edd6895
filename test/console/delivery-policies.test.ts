// Console in a real browser: a subscription's delivery policy (issue 26, docs/delivery-policies.md) edited in
// Integrations → Webhooks — its retry schedule, jitter and rate cap set in the edit dialog, read back from the API and
// shown again when the dialog is reopened; a bad value answers with the server's 400 in the dialog; clearing the
// schedule and the cap returns to the service's schedule and no cap.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' };
const SUBS = '/integrations/webhooks/subscriptions';

describeConsole('webhook delivery policy', (ctx) => {
  it('sets a subscription\'s retry schedule, jitter and rate cap, and reads them back', async () => {
    const { page, srv } = ctx;
    const api = srv.api.withVersion('2026-11');
    const url = 'http://127.0.0.1:9/policy-hook';
    const created = await api.post(SUBS, { url, eventTypes: ['customerCreate'], isActive: false });
    assert.equal(created.status, 201, created.text);
    const uuid = created.body.uuid;

    await ctx.signIn();
    await ctx.go('Webhooks');
    const row = page.getByRole('row', { name: /policy-hook/ });
    await row.waitFor();
    const open = async () => {
      await row.getByRole('button', { name: 'Edit' }).click();
      const d = page.getByRole('dialog', { name: 'Edit subscription' });
      await d.waitFor();
      return d;
    };

    let edit = await open();
    // The service's schedule is shown where the subscription has none of its own.
    assert.equal(await edit.getByLabel('Retry schedule (seconds)').inputValue(), '5, 20, 125');
    assert.equal(await edit.getByLabel('Retry jitter (%)').inputValue(), '0');
    assert.equal(await edit.getByLabel('Rate cap (requests per second)').inputValue(), '');
    // Out of bounds: the server's 400 names the field, in the dialog; nothing saved.
    await edit.getByLabel('Retry schedule (seconds)').fill('60, 86401');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByRole('alert').filter({ hasText: 'retrySchedule' }).waitFor();
    assert.deepEqual((await api.get(`${SUBS}/${uuid}`)).body.retrySchedule, [5, 20, 125]);

    await edit.getByLabel('Retry schedule (seconds)').fill('60, 300, 3600, 86400');
    await edit.getByLabel('Retry jitter (%)').fill('20');
    await edit.getByLabel('Rate cap (requests per second)').fill('25');
    await ctx.shot('webhook-delivery-policy');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    const saved = (await api.get(`${SUBS}/${uuid}`)).body;
    assert.deepEqual([saved.retrySchedule, saved.retryJitter, saved.maxPerSecond], [[60, 300, 3600, 86400], 20, 25]);

    // Read back in the dialog (after a reload: from the API, not from the page's memory).
    await page.reload();
    await row.waitFor();
    edit = await open();
    assert.equal(await edit.getByLabel('Retry schedule (seconds)').inputValue(), '60, 300, 3600, 86400');
    assert.equal(await edit.getByLabel('Retry jitter (%)').inputValue(), '20');
    assert.equal(await edit.getByLabel('Rate cap (requests per second)').inputValue(), '25');

    // Cleared: the service's schedule again, and no cap.
    await edit.getByLabel('Retry schedule (seconds)').fill('');
    await edit.getByLabel('Rate cap (requests per second)').fill('');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    const reset = (await api.get(`${SUBS}/${uuid}`)).body;
    assert.deepEqual([reset.retrySchedule, reset.retryJitter, reset.maxPerSecond], [[5, 20, 125], 20, null]);
    assert.deepEqual(ctx.pageErrors, []);
  });
}, ENV);
