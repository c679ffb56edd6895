// Console in a real browser: Integrations → Webhooks and Webhooks Logs against a real failing receiver on
// loopback and a real dispatcher in this process (fast retry schedule). Create a subscription, watch its
// failed attempts arrive, read an attempt's detail, retry after the receiver recovers, then the other actions.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { startReceiver, status, ok, waitFor, type Receiver } from '../webhooks/receiver.ts';
import { FEW_EVENTS, LOG_SCAN } from '../../src/webhooks/store.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2', BULB_WEBHOOK_TIMEOUT_MS: '15000' };
const TOKEN = 'tok-console-secret-42';

let worker: TestWorker;
let rx: Receiver;

describeConsole('webhooks and logs', (ctx) => {
  let subUuid = '';

  it('shows the empty state, then creates a subscription (Bearer) and shows its signing secret', async () => {
    const { page } = ctx;
    await ctx.signIn();
    await ctx.go('Webhooks');
    await page.getByText('No webhook subscriptions yet.').waitFor();

    await page.getByRole('button', { name: 'New subscription' }).click();
    const dialog = page.getByRole('dialog', { name: 'New webhook subscription' });
    await dialog.waitFor();
    // The URL is checked before anything is sent.
    await dialog.getByLabel('Webhook URL').fill('ftp://nope');
    await dialog.getByRole('button', { name: 'Create subscription' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'http:// or https://' }).waitFor();

    await dialog.getByLabel('Webhook URL').fill(rx.url);
    // Several event types: customerCreate is ticked by default; add customerNoteCreate.
    assert.equal(await dialog.getByRole('checkbox', { name: 'customerCreate' }).isChecked(), true);
    await dialog.getByRole('checkbox', { name: 'customerNoteCreate' }).check();
    await dialog.getByLabel('Authentication').selectOption('BEARER');
    await dialog.getByLabel('Bearer token').fill(TOKEN);
    assert.equal(await dialog.getByLabel('Webhook version').inputValue(), '2022-08');
    await ctx.shot('webhook-create-form');
    await dialog.getByRole('button', { name: 'Create subscription' }).click();

    const created = page.getByRole('dialog', { name: 'Subscription created' });
    await created.waitFor();
    const secret = await created.getByLabel('Signing secret').inputValue();
    assert.match(secret, /^whsec_/);
    await created.getByRole('button', { name: 'Done' }).click();

    const row = page.getByRole('row', { name: new RegExp(rx.url.replace(/[.?*+^$()[\]{}|\\/]/g, '\\$&')) });
    await row.waitFor();
    assert.match(await row.innerText(), /Active/);
    assert.match(await row.innerText(), /Bearer token/);
    assert.match(await row.innerText(), /no attempts/);
    assert.match(await row.innerText(), /Healthy/);
    const subs = (await ctx.srv.api.withVersion('2026-11').get('/integrations/webhooks/subscriptions')).body.data;
    assert.equal(subs.length, 1);
    subUuid = subs[0].uuid;
    assert.equal(subs[0].authMethod, 'BEARER');
    assert.deepEqual(subs[0].eventTypes, ['customerCreate', 'customerNoteCreate']);
  });

  it('lists the failed attempts in Webhooks Logs with a detail view, credentials redacted', async () => {
    const { page, srv } = ctx;
    await srv.api.post('/crm/customers', { externalId: 'wh-1', firstName: 'Hook' });
    // 1 attempt + 3 retries, all failing.
    await waitFor(async () => (await srv.api.get(`/integrations/webhooks/logs?subscription=${subUuid}`)).body.data.length >= 4, 'four failed attempts', 60_000);

    await ctx.go('Webhooks Logs');
    const failures = page.getByRole('row', { name: /Failure/ });
    await waitFor(async () => (await failures.count()) === 4, 'four failure rows', 60_000);

    // Filters: outcome=success shows none; subscription + failure shows the four.
    await page.getByLabel('Outcome').selectOption('success');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No attempts match these filters.').waitFor();
    // Time: nothing from tomorrow on.
    await page.getByLabel('Outcome').selectOption('');
    await page.getByLabel('From').fill(new Date(Date.now() + 86_400_000).toISOString().slice(0, 16));
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No attempts match these filters.').waitFor();
    assert.match(page.url(), /since=/, 'filters are in the (linkable) address');
    await page.getByLabel('From').fill('');
    await page.getByLabel('Outcome').selectOption('failure');
    await page.getByLabel('Subscription').selectOption(subUuid);
    await page.getByLabel('Event type').selectOption('customerCreate');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitFor(async () => (await page.getByRole('row', { name: /Failure/ }).count()) === 4, 'four filtered failure rows', 60_000);
    // Newest first: the top row is attempt 4.
    const first = page.getByRole('row', { name: /Failure/ }).first();
    assert.match(await first.getByRole('button', { name: /Details/ }).getAttribute('aria-label') ?? '', /attempt 4 /);
    await ctx.shot('webhook-logs-failures');

    await page.getByRole('button', { name: /Details of attempt 1 / }).click();
    const detail = page.getByRole('dialog', { name: /Attempt 1: customerCreate/ });
    await detail.waitFor();
    const text = await detail.innerText();
    assert.match(text, /Failure/);
    assert.match(text, /500/);
    assert.match(text, /HTTP_STATUS/);
    assert.match(text, /receiver down/, 'the response body is shown');
    assert.match(text, /x-tulip-hmac-256/i, 'request headers are shown');
    assert.match(text, /"externalId": "wh-1"/, 'the request body is shown, pretty-printed');
    assert.ok(!text.includes(TOKEN), 'the bearer token is redacted');
    assert.match(text, /Next attempt/);
    await ctx.shot('webhook-attempt-detail');
    await detail.getByRole('button', { name: 'Close', exact: true }).click();
    await detail.waitFor({ state: 'detached' });
  });

  it('retries the failed delivery after the receiver recovers; the success appears by live refresh', async () => {
    const { page } = ctx;
    rx.behave(ok);
    await page.getByRole('button', { name: /Details of attempt 4 / }).click();
    const detail = page.getByRole('dialog', { name: /Attempt 4: customerCreate/ });
    assert.match(await detail.innerText(), /no more automatic retries/);
    await detail.getByRole('button', { name: 'Retry delivery' }).click();
    await detail.waitFor({ state: 'detached' });
    await waitFor(async () => (await ctx.srv.api.get(`/integrations/webhooks/logs?subscription=${subUuid}&outcome=success`)).body.data.length === 1, 'the retried attempt', 60_000);

    // The filter still says failure: clear it and watch the success arrive on top.
    await page.getByRole('button', { name: 'Clear filters' }).click();
    const success = page.getByRole('row', { name: /Success/ });
    await success.first().waitFor();
    assert.equal(await success.count(), 1);
    assert.match(await page.getByRole('row', { name: /Success|Failure/ }).first().innerText(), /Success/, 'newest first');
    await page.getByRole('button', { name: /Details of attempt 5 / }).click();
    const ok5 = page.getByRole('dialog', { name: /Attempt 5/ });
    assert.match(await ok5.innerText(), /200/);
    assert.equal(await ok5.getByRole('button', { name: 'Retry delivery' }).count(), 0, 'no retry on a success');
    await ok5.getByRole('button', { name: 'Close', exact: true }).click();
    await ctx.shot('webhook-logs-retried');
    assert.equal(rx.received.filter((r) => r.body?.resource?.externalId === 'wh-1').length, 5);

    // New events show up without reloading (live refresh).
    await ctx.srv.api.post('/crm/customers', { externalId: 'wh-2' });
    await waitFor(async () => (await page.getByRole('row', { name: /Success/ }).count()) === 2, 'the new attempt, live', 60_000);
  });

  it('shows the success rate, sends a test, deactivates, reveals and rotates the secret, deletes with confirmation', async () => {
    const { page, srv } = ctx;
    await ctx.go('Webhooks');
    const row = page.getByRole('row', { name: /customerCreate/ });
    await row.getByText('6 attempts, 33% successful', { exact: true }).waitFor();

    await row.getByRole('button', { name: 'Send test' }).click();
    await page.getByRole('status').filter({ hasText: 'Test event queued' }).waitFor();
    await waitFor(() => rx.received.some((r) => r.body?.eventType === 'webhookTest'), 'the test event at the receiver', 60_000);
    assert.equal(rx.received.find((r) => r.body?.eventType === 'webhookTest')!.headers.authorization, `Bearer ${TOKEN}`);

    await row.getByRole('button', { name: 'Deactivate' }).click();
    await row.getByText('Inactive').waitFor();
    assert.equal((await srv.api.get(`/integrations/webhooks/subscriptions/${subUuid}`)).body.isActive, false);
    await row.getByRole('button', { name: 'Activate' }).click();
    await row.getByText('Active', { exact: true }).waitFor();

    // Edit: the version and the event type; credentials stay (left blank).
    await row.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit subscription' });
    await edit.getByLabel('Webhook version').selectOption('2025-04');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    await row.getByText('2025-04').waitFor();
    const after = (await srv.api.get(`/integrations/webhooks/subscriptions/${subUuid}`)).body;
    assert.equal(after.webhookVersion, '2025-04');
    assert.equal(after.authMethod, 'BEARER');

    const before = (await srv.api.get(`/integrations/webhooks/subscriptions/${subUuid}/secret`)).body.signingSecret;
    await row.getByRole('button', { name: 'Reveal secret' }).click();
    const sd = page.getByRole('dialog', { name: 'Signing secret' });
    assert.equal(await sd.getByLabel('Signing secret').inputValue(), before);
    await sd.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate' }).click();
    const fresh = await sd.getByLabel('New signing secret').inputValue();
    assert.notEqual(fresh, before);
    assert.equal((await srv.api.get(`/integrations/webhooks/subscriptions/${subUuid}/secret`)).body.signingSecret, fresh);
    await sd.getByText(/previous secret also signs until/).waitFor();
    await ctx.shot('webhook-secret-rotated');
    await sd.getByRole('button', { name: 'Done' }).click();
    await ctx.shot('webhooks-list');

    await row.getByRole('button', { name: 'Delete' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete this subscription?' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await row.waitFor();
    await row.getByRole('button', { name: 'Delete' }).click();
    await confirm.getByRole('button', { name: 'Delete subscription' }).click();
    await page.getByText('No webhook subscriptions yet.').waitFor();
    assert.equal((await srv.api.get('/integrations/webhooks/subscriptions')).body.data.length, 0);
  });

  it('shows health and why a subscription was disabled, re-activates it, and charts the last 24 hours from one stats request', async () => {
    const { page, srv } = ctx;
    // Open the page afresh (following the link of the page already shown does not reload it).
    const webhooks = async () => {
      await ctx.go('Webhooks Logs');
      await ctx.go('Webhooks');
    };
    const api = srv.api.withVersion('2026-11');
    const down = await startReceiver(status(500, 'still down'));
    try {
      const sub = (await api.post('/integrations/webhooks/subscriptions', { url: down.url, eventTypes: ['customerUpdate', 'customerMerge'] })).body;
      await api.post('/crm/customers', { externalId: 'wh-h1' });
      await api.patch('/crm/customers/wh-h1', { firstName: 'Failing' });
      await waitFor(async () => (await api.get(`/integrations/webhooks/deliveries?subscription=${sub.uuid}&status=failed`)).body.data.length === 1, 'a failed delivery', 60_000);

      // Failing: the row says since when.
      const requests: string[] = [];
      await ctx.go('Webhooks Logs');
      page.on('request', (r) => requests.push(r.url()));
      await ctx.go('Webhooks');
      const row = page.getByRole('row', { name: new RegExp(down.url.replace(/[.?*+^$()[\]{}|\\/]/g, '\\$&')) });
      await row.getByText('Failing').waitFor();
      assert.match(await row.innerText(), /4 failed attempts in a row since/);
      assert.match(await row.innerText(), /customerUpdate\s*customerMerge/);
      assert.equal(requests.filter((u) => u.includes('/integrations/webhooks/stats')).length, 1, 'one stats request feeds every chart');
      assert.equal(requests.filter((u) => u.includes('/integrations/webhooks/logs')).length, 0, 'no logs request per subscription');

      // The charts: the overall one and the row's, both from /stats, with bars for the failures.
      const stats = (await api.get('/integrations/webhooks/stats?hours=24')).body;
      const attempts = stats.overall.reduce((n: number, b: any) => n + b.attempts, 0);
      assert.equal(attempts, 4);
      const overall = page.getByRole('img', { name: /^All subscriptions: Last 24 hours: 4 attempts, 0% successful$/ });
      await overall.waitFor();
      assert.ok(await overall.locator('rect.chart-fail').count() >= 1, 'failure bars drawn');
      assert.ok(await overall.locator('rect.chart-ok').count() >= 1, 'hours with attempts have a success bar (zero high here)');
      const rowChart = row.getByRole('img', { name: /Last 24 hours: 4 attempts, 0% successful/ });
      await rowChart.waitFor();
      assert.equal(await rowChart.locator('g.chart-bar').count(), 24, 'one bar per hour');
      assert.equal(await page.locator('svg script, svg foreignObject').count(), 0);

      // Disabled after failing long enough (the first failure moved 121 h back), with the reason shown.
      await ctx.tdb.db.query(`UPDATE webhook_subscriptions SET failing_since = now() - interval '121 hours' WHERE uuid = $1`, [sub.uuid]);
      await api.patch('/crm/customers/wh-h1', { firstName: 'Still failing' });
      await waitFor(async () => (await api.get(`/integrations/webhooks/subscriptions/${sub.uuid}`)).body.health.state === 'disabled', 'disabled', 60_000);
      await webhooks();
      await row.getByText('Disabled', { exact: true }).waitFor();
      assert.match(await row.innerText(), /no successful delivery attempt for 120 hours while attempts kept failing/);
      assert.match(await row.innerText(), /HTTP_STATUS 500/);
      await ctx.shot('webhooks-health-disabled');

      // Re-activate: it is active and healthy again, and its waiting delivery goes out.
      down.behave(ok);
      await row.getByRole('button', { name: 'Re-activate' }).click();
      await page.getByRole('status').filter({ hasText: 're-activated' }).waitFor();
      await row.getByText('Healthy').waitFor();
      const after = (await api.get(`/integrations/webhooks/subscriptions/${sub.uuid}`)).body;
      assert.equal(after.isActive, true);
      assert.equal(after.health.disabledReason, null);
      await waitFor(async () => (await api.get(`/integrations/webhooks/deliveries?subscription=${sub.uuid}&status=delivered`)).body.data.length === 1, 'the waiting delivery delivered', 60_000);
      await webhooks();
      await row.getByRole('img', { name: /Last 24 hours: 6 attempts, 17% successful/ }).waitFor();
      await ctx.shot('webhooks-health-chart');
    } finally {
      await down.close();
    }
  });

  it('creates a RabbitMQ subscription from the form: the password is sealed and shown as ***, and an edit leaving the URL keeps it', async () => {
    const { page } = ctx;
    const api = ctx.srv.api.withVersion('2026-11');
    const secretPass = 'console-broker-pass-7';
    await ctx.go('Webhooks Logs');
    await ctx.go('Webhooks');
    await page.getByRole('button', { name: 'New subscription' }).click();
    const dialog = page.getByRole('dialog', { name: 'New webhook subscription' });
    await dialog.waitFor();
    await dialog.getByLabel('Webhook URL').fill(`amqp://guest:${secretPass}@127.0.0.1:5672/?exchange=bulb-console&routingKey=customer.events`);
    await dialog.getByRole('button', { name: 'Create subscription' }).click();
    const created = page.getByRole('dialog', { name: 'Subscription created' });
    await created.waitFor();
    await created.getByRole('button', { name: 'Done' }).click();

    const shown = 'amqp://guest:***@127.0.0.1:5672/?exchange=bulb-console&routingKey=customer.events';
    const row = page.getByRole('row', { name: new RegExp(shown.replace(/[.?*+^$()[\]{}|\\/]/g, '\\$&')) });
    await row.waitFor();
    assert.ok(!(await page.content()).includes(secretPass), 'the page never shows the password');
    const sub = (await api.get('/integrations/webhooks/subscriptions')).body.data.find((x: any) => x.url === shown);
    assert.ok(sub, 'stored with the password redacted from its URL');
    const sealed = async () => (await ctx.tdb.db.query<{ p: string }>('SELECT destination_password AS p FROM webhook_subscriptions WHERE uuid = $1', [sub.uuid])).rows[0].p;
    const before = await sealed();
    assert.match(before, /^v1:/, 'the password is sealed');

    // Edit: the form shows the URL as stored (***); saving another change keeps the password.
    await row.getByRole('button', { name: /^Edit / }).click();
    const edit = page.getByRole('dialog', { name: 'Edit subscription' });
    await edit.waitFor();
    assert.equal(await edit.getByLabel('Webhook URL').inputValue(), shown);
    await edit.getByRole('checkbox', { name: 'customerUpdate' }).check();
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Subscription saved' }).waitFor();
    const after = (await api.get(`/integrations/webhooks/subscriptions/${sub.uuid}`)).body;
    assert.deepEqual(after.eventTypes, ['customerCreate', 'customerUpdate']);
    assert.equal(after.url, shown);
    assert.equal(await sealed(), before, 'the stored password is unchanged');
  });

  // Probe (2026-11-28): the Username field is always blank (the API never returns it) and says blank keeps it, yet a
  // new password alone was sent with basicUsername "" and refused (400).
  it('changes a Basic password alone: the username is kept, and the receiver gets the new credentials', async () => {
    const { page, srv } = ctx;
    const api = srv.api.withVersion('2026-11');
    const url = `${rx.url}basic-edit`;
    const sub = await api.post('/integrations/webhooks/subscriptions', { url, eventTypes: ['customerNoteCreate'], authMethod: 'BASIC', basicUsername: 'shop', basicPassword: 'old-pass' });
    assert.equal(sub.status, 201, sub.text);
    await page.goto('/admin#/integrations/customers');
    await ctx.go('Webhooks');
    const row = page.getByRole('row', { name: new RegExp(url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')) });
    await row.getByRole('button', { name: /^Edit/ }).click();
    const edit = page.getByRole('dialog', { name: 'Edit subscription' });
    assert.equal(await edit.getByLabel('Username').inputValue(), '');
    await edit.getByLabel('Password').fill('new-pass');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    assert.equal((await api.post(`/integrations/webhooks/subscriptions/${sub.body.uuid}/test`, {})).status, 202);
    const want = `Basic ${Buffer.from('shop:new-pass').toString('base64')}`;
    await waitFor(() => rx.received.some((r) => r.url?.endsWith('basic-edit') && r.headers.authorization === want), 'the test event with the new password', 60_000);
  });

  // Probe (2026-11-28): a live refresh took the newest page (50) alone, so when more arrived between two polls the
  // ones past it never appeared, with nothing to say so.
  it('live refresh shows every attempt that arrived between two polls, however many', async () => {
    const { page, srv } = ctx;
    const api = srv.api.withVersion('2026-11');
    rx.behave(ok);
    const sub = await api.post('/integrations/webhooks/subscriptions', { url: `${rx.url}burst`, eventTypes: ['customerNoteCreate'] });
    assert.equal(sub.status, 201, sub.text);
    const attempts = async () => (await api.get(`/integrations/webhooks/logs?subscription=${sub.body.uuid}&limit=250`)).body.data.length;
    await api.post(`/integrations/webhooks/subscriptions/${sub.body.uuid}/test`, {});
    await waitFor(async () => (await attempts()) === 1, 'the first attempt', 60_000);
    await page.goto(`/admin#/integrations/webhooks/logs?subscription=${sub.body.uuid}`);
    const rows = page.getByRole('table', { name: /Delivery attempts/ }).locator('tbody tr');
    await waitFor(async () => (await rows.count()) === 1, 'the first row', 60_000);
    await page.getByLabel('Live refresh').uncheck();
    for (let i = 0; i < 120; i++) assert.equal((await api.post(`/integrations/webhooks/subscriptions/${sub.body.uuid}/test`, {})).status, 202);
    await waitFor(async () => (await attempts()) === 121, '121 attempts', 120_000);
    await page.getByLabel('Live refresh').check(); // polls at once
    await waitFor(async () => (await rows.count()) === 121, 'all 121 rows, none missing', 60_000);
  });

  // Filtered by a common event type (FEW_EVENTS or more), the API looks at LOG_SCAN.budget attempts a page: a page may
  // be empty and still have a nextCursor. The console showed "No attempts match these filters." for an attempt the
  // next pages held. The budget is made 2 here (the server runs in this process), the newest 4 attempts are tests.
  it('follows the cursor past empty pages of a common event type to the attempt that matches', async () => {
    const { page, srv } = ctx;
    const api = srv.api.withVersion('2026-11');
    rx.behave(ok);
    const sub = await api.post('/integrations/webhooks/subscriptions', { url: `${rx.url}sparse`, eventTypes: ['customerCreate'] });
    assert.equal(sub.status, 201, sub.text);
    const logs = async (query = '') => (await api.get(`/integrations/webhooks/logs?subscription=${sub.body.uuid}${query}`)).body;
    assert.equal((await api.post('/crm/customers', { externalId: 'sparse-1', firstName: 'Sparse' })).status, 201);
    await waitFor(async () => (await logs()).data.length === 1, 'the customerCreate attempt', 60_000);
    for (let i = 0; i < 4; i++) assert.equal((await api.post(`/integrations/webhooks/subscriptions/${sub.body.uuid}/test`, {})).status, 202);
    await waitFor(async () => (await logs()).data.length === 5, 'four test attempts after it', 60_000);
    // customerCreate made common: events of it without deliveries.
    await ctx.tdb.db.query(
      `INSERT INTO events (event_type, resource_type, resource_uuid, source) SELECT 'customerCreate', 'Customer', gen_random_uuid(), 'TULIP_API' FROM generate_series(1, $1::int)`,
      [FEW_EVENTS],
    );
    const shipped = LOG_SCAN.budget;
    LOG_SCAN.budget = 2;
    try {
      const first = await logs('&eventType=customerCreate');
      assert.deepEqual(first.data, [], 'the first page: two test attempts looked at, none matches');
      assert.ok(first.nextCursor, 'and a cursor');
      await page.goto(`/admin#/integrations/webhooks/logs?subscription=${sub.body.uuid}&eventType=customerCreate`);
      const rows = page.getByRole('table', { name: /Delivery attempts/ }).locator('tbody tr');
      await rows.first().waitFor();
      assert.equal(await rows.count(), 1);
      assert.match(await rows.first().innerText(), /customerCreate/);
      assert.equal(await page.getByText(/No attempts match/).count(), 0);
      // A live refresh (nothing new) keeps it.
      await page.getByLabel('Live refresh').uncheck();
      await page.getByLabel('Live refresh').check(); // polls at once
      await page.getByText(/^Updated /).waitFor();
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(await rows.count(), 1);
    } finally {
      LOG_SCAN.budget = shipped;
    }
  });
}, ENV, {
  started: async (ctx) => {
    worker = await startWorker(ctx.tdb.db, ENV);
    rx = await startReceiver(status(500, 'receiver down'));
  },
  stopping: async () => {
    await worker?.stop();
    await rx?.close();
  },
});
