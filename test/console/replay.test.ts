// Console in a real browser: Integrations → Webhooks → Replay on a subscription: a bad window shows the API's
// message; a replay started from the dialog (since, until, types) is watched to completion (events queued), then
// listed under Recent replays. A real replay worker queues the deliveries in this process.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { ReplayWorker } from '../../src/webhooks/replay-worker.ts';

let worker: ReplayWorker;

describeConsole('webhook replay', (ctx) => {
  it('starts a replay of a window and watches it complete', async () => {
    const { page } = ctx;
    const db = ctx.tdb.db;
    // 120 customerCreate and 30 customerNoteCreate events of the last hour, from before the subscription existed.
    await db.query(`INSERT INTO events (event_type, resource_type, resource_uuid, source, created_at)
      SELECT CASE WHEN g <= 120 THEN 'customerCreate' ELSE 'customerNoteCreate' END, 'Customer', gen_random_uuid(), 'TEST',
        now() - interval '1 hour' + g * interval '1 s' FROM generate_series(1, 150) g`);
    const url = 'http://127.0.0.1:9/replay-hook';
    const sub = await ctx.srv.api.withVersion('2026-11').post('/integrations/webhooks/subscriptions',
      { url, eventTypes: ['customerCreate', 'customerNoteCreate', 'webhookDeliveryFailed'], isActive: false });
    assert.equal(sub.status, 201, sub.text);

    await ctx.signIn();
    await ctx.go('Webhooks');
    await page.getByRole('button', { name: `Replay events to ${url}` }).click();
    const dialog = page.getByRole('dialog', { name: `Replay events to ${url}` });
    await dialog.waitFor();
    await dialog.getByText('No replays yet.').waitFor();
    await dialog.getByText('webhookDeliveryFailed: not kept as events, not replayed.').waitFor();

    // A window that ends before it starts: the API's message, nothing started.
    await dialog.getByLabel('Until (optional)').fill('2020-01-01T00:00');
    await dialog.getByRole('button', { name: 'Start replay' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'until must be after since' }).waitFor();
    await dialog.getByLabel('Until (optional)').fill('');

    // Only customerCreate.
    await dialog.getByRole('checkbox', { name: 'customerNoteCreate' }).uncheck();
    await ctx.shot('webhook-replay-form');
    await dialog.getByRole('button', { name: 'Start replay' }).click();
    const progress = dialog.getByRole('region', { name: 'Replay progress' });
    await progress.getByText('completed').waitFor();
    await progress.getByText('120 events queued').waitFor();
    assert.match(await progress.innerText(), /customerCreate/);
    await dialog.getByRole('table', { name: 'Recent replays' }).getByText('completed').waitFor();
    await ctx.shot('webhook-replay-done');

    const n = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.uuid = $1`, [sub.body.uuid]);
    assert.equal(n.rows[0].n, 120);
    const list = await ctx.srv.api.withVersion('2026-11').get(`/integrations/webhooks/subscriptions/${sub.body.uuid}/replays`);
    assert.equal(list.body.data.length, 1, 'the failed attempt started nothing');
    assert.deepEqual(ctx.pageErrors, []);
  });

  // Probe (2026-11-28): opened over http on another address (HOST=0.0.0.0), the page is not a secure context and has
  // no crypto.randomUUID; the dialog threw as it opened and *Start replay* reloaded the page, starting nothing. And
  // the audit log's Action filter did not offer replay.started, so a link filtered by it showed "All actions".
  it('starts a replay where crypto.randomUUID does not exist (http on another host); the audit log filters by replay.started', async () => {
    const { page } = ctx;
    const url = 'http://127.0.0.1:9/replay-insecure';
    const sub = await ctx.srv.api.withVersion('2026-11').post('/integrations/webhooks/subscriptions', { url, eventTypes: ['customerCreate'], isActive: false });
    assert.equal(sub.status, 201, sub.text);
    await page.addInitScript(() => { delete (Crypto.prototype as any).randomUUID; });
    await page.goto('/admin#/integrations/webhooks');
    await page.reload(); // a new document: the init script runs (a change of hash alone loads nothing)
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    assert.equal(await page.evaluate(() => typeof (crypto as any).randomUUID), 'undefined');
    await page.getByRole('button', { name: `Replay events to ${url}` }).click();
    const dialog = page.getByRole('dialog', { name: `Replay events to ${url}` });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Start replay' }).click();
    await dialog.getByRole('region', { name: 'Replay progress' }).getByText('completed').waitFor();
    const list = await ctx.srv.api.withVersion('2026-11').get(`/integrations/webhooks/subscriptions/${sub.body.uuid}/replays`);
    assert.equal(list.body.data.length, 1);
    await page.goto('/admin#/integrations/audit-log?action=replay.started');
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    assert.equal(await page.getByLabel('Action').inputValue(), 'replay.started');
    assert.deepEqual(ctx.pageErrors, []);
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' }, {
  started: async (ctx) => {
    worker = new ReplayWorker(ctx.tdb.db, { chunkEvents: 50 });
    await worker.start();
  },
  stopping: () => worker.stop(),
});
