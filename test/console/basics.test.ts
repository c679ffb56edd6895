// Console in a real browser: sign-in (a bad key is refused), API keys and auth clients (secret shown once,
// revoke), customers (search, customer page). Elements are found by role and label, as a user would.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { ADMIN_KEY } from '../helpers/server.ts';

describeConsole('sign-in, API keys, auth clients, customers', (ctx) => {
  it('serves /admin offline-ready: own assets only, strict CSP', async () => {
    const r = await fetch(`${ctx.srv.url}/admin`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/html/);
    assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    const html = await r.text();
    assert.doesNotMatch(html, /https?:\/\//, 'no external URL in the page');
    assert.equal((await fetch(`${ctx.srv.url}/admin/js/main.js`)).status, 200);
  });

  it('refuses a bad key with the API message, then signs in with the admin key', async () => {
    const { page } = ctx;
    await page.goto('/admin');
    await assert.doesNotReject(page.getByRole('heading', { name: 'Sign in to the console' }).waitFor());
    await page.getByLabel('Admin API key').fill('not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /not accepted/);
    assert.match(await alert.innerText(), /invalid, revoked or expired/, 'the API message is shown');
    await ctx.shot('signin-refused');

    // A key without the admin scope is refused too.
    const readKey = (await ctx.srv.api.post('/integrations/apiKeys', { name: 'reader', scopes: ['read'] })).body.key;
    await page.getByLabel('Admin API key').fill(readKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'no admin scope' }).waitFor();

    // Keyboard only: the key field has focus after a refusal; Enter submits.
    await page.keyboard.press('Control+A');
    await page.keyboard.type(ADMIN_KEY);
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Console sections' }).waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1', 'focus is on the first page heading');
    // After a reload (still signed in: sessionStorage), the first Tab reaches the skip link;
    // following a navigation link moves focus to the page heading.
    await page.reload();
    await page.getByRole('navigation', { name: 'Console sections' }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'Webhooks Logs' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Webhooks Logs' }).waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1');
    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'Customers' }).click();
    assert.ok(!page.url().includes(ADMIN_KEY), 'the key is never in the URL');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('bulb.console.adminKey')), ADMIN_KEY);
    await page.getByRole('heading', { level: 1, name: 'Customers' }).waitFor();
  });

  it('creates an API key (shown once, with a copy button), which works, then revokes it', async () => {
    const { page } = ctx;
    await ctx.go('API Keys');
    await page.getByLabel('Name').fill('POS integration');
    await page.getByLabel(/^write/).check();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const secret = page.getByLabel('New API key');
    await secret.waitFor();
    const key = await secret.inputValue();
    assert.match(key, /^bulb_key_/);
    await page.getByRole('region', { name: /created/ }).getByRole('button', { name: 'Copy' }).waitFor();
    const row = page.getByRole('row', { name: /POS integration/ });
    await row.waitFor();
    assert.match(await row.innerText(), /read/);
    assert.match(await row.innerText(), /write/);
    await ctx.shot('api-key-created');

    // The key works against the API, and is not in the list answer.
    const asKey = ctx.srv.api.withToken(key);
    assert.equal((await asKey.get('/crm/customers')).status, 200);

    await row.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: /Revoke API key/ });
    await dialog.waitFor();
    await ctx.shot('api-key-revoke-confirm');
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await asKey.get('/crm/customers')).status, 401, 'a revoked key is refused');
  });

  it('creates and revokes an auth client (secret shown once)', async () => {
    const { page } = ctx;
    await ctx.go('Auth Clients');
    // The form's own validation message appears without a name.
    await page.getByRole('button', { name: 'Create auth client' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter a name' }).waitFor();
    await page.getByLabel('Name').fill('Warehouse sync');
    await page.getByRole('button', { name: 'Create auth client' }).click();
    const secret = await page.getByLabel('Client secret').inputValue();
    const clientId = await page.getByLabel('Client ID').inputValue();
    assert.match(secret, /^bulb_cs_/);
    const tok = await fetch(`${ctx.srv.url}/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
    });
    assert.equal(tok.status, 200);
    const row = page.getByRole('row', { name: /Warehouse sync/ });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await row.waitFor({ state: 'detached' });
    await ctx.shot('auth-clients');
  });

  it('searches customers by name, email and externalId and opens a customer', async () => {
    const { page, srv } = ctx;
    await srv.api.post('/crm/customers', {
      externalId: 'ext-ada', prefix: 'Countess', firstName: 'Ada', lastName: 'Lovelace', emails: [{ email: 'ada@example.com', isPrimary: true }], loyaltyTier: 'gold',
      addresses: [{ address1: '12 St James Square', city: 'London', countryCode: 'GB', zoneCode: 'GB-LND', postCode: 'SW1Y 4JH', phone: '+442079460000', type: 'home' }],
    });
    await srv.api.post('/crm/customers', { externalId: 'ext-alan', firstName: 'Alan', lastName: 'Turing', emails: [{ email: 'alan@example.com' }] });
    await srv.api.post('/crm/customers', { externalId: 'ext-grace', firstName: 'Grace', lastName: 'Hopper', image: 'javascript:alert(document.cookie)' });

    await ctx.go('Customers');
    await page.getByRole('row', { name: /Grace Hopper/ }).waitFor(); // browsing lists everyone

    const search = async (q: string) => {
      await page.getByLabel('Name, email or external ID').fill(q);
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('heading', { name: `Results for “${q}”` }).waitFor();
      await page.getByRole('status').filter({ hasText: /match/ }).or(page.getByText(/No customer matches/)).first().waitFor();
    };
    await search('lovelace');
    assert.equal(await page.getByRole('row', { name: /Ada Lovelace/ }).count(), 1);
    assert.equal(await page.getByRole('row', { name: /Alan Turing/ }).count(), 0);
    await search('alan@example.com');
    assert.equal(await page.getByRole('row', { name: /Alan Turing/ }).count(), 1);
    await search('ext-grace');
    assert.equal(await page.getByRole('row', { name: /Grace Hopper/ }).count(), 1);
    await search('nobody-by-that-name');
    await page.getByText('No customer matches “nobody-by-that-name”.').waitFor();
    await ctx.shot('customers-empty-search');

    await search('Ada');
    await ctx.shot('customers-search');
    await page.getByRole('link', { name: 'Ada Lovelace' }).click();
    await page.getByRole('heading', { level: 1, name: 'Ada Lovelace' }).waitFor();
    const profile = page.getByRole('region', { name: 'Profile' });
    assert.match(await profile.innerText(), /ext-ada/);
    assert.match(await profile.innerText(), /ada@example\.com/);
    assert.match(await profile.innerText(), /gold/);
    assert.match(await profile.innerText(), /Countess/, "Tulip's prefix");
    assert.match(await profile.innerText(), /12 St James Square, London, GB-LND, SW1Y 4JH, GB · \+442079460000 \(home\)/, "the address with Tulip's names");
    await page.getByRole('heading', { name: 'Attached data' }).waitFor();
    await page.getByRole('heading', { name: 'Merge history' }).waitFor();
    await ctx.shot('customer-page');
    assert.equal(await profile.getByRole('link', { name: /example|javascript/ }).count(), 0, 'no image, no link');

    // An image is a link only when it is a web address: the API takes any text, and a javascript: URL is shown as text.
    await srv.api.patch('/crm/customers/ext-ada', { image: 'https://cdn.example.com/ada.jpg' });
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Ada Lovelace' }).waitFor();
    assert.equal(await page.getByRole('region', { name: 'Profile' }).getByRole('link', { name: 'https://cdn.example.com/ada.jpg' }).getAttribute('href'), 'https://cdn.example.com/ada.jpg');
    await page.goto('/admin#/customers/ext-grace');
    await page.getByRole('heading', { level: 1, name: 'Grace Hopper' }).waitFor();
    const grace = page.getByRole('region', { name: 'Profile' });
    await grace.getByText('javascript:alert(document.cookie)').waitFor();
    assert.equal(await grace.getByRole('link', { name: /javascript/ }).count(), 0, 'a javascript: image is no link');

    // An unknown customer shows the API's error.
    await page.goto('/admin#/customers/does-not-exist');
    await page.getByRole('alert').filter({ hasText: /not found/ }).waitFor();
  });

  it('finds a customer by a two-letter name past the first 10,000 customers (the API looks for such a term 10,000 customers a page)', async () => {
    // The console read the first page only and said "No customer matches" (the review, 2026-11-29).
    const { page, srv } = ctx;
    await ctx.tdb.db.query(
      `INSERT INTO customers (external_id, first_name, last_name) SELECT 'filler-' || g, 'Bo', 'Filler' FROM generate_series(1, 10500) g`,
    );
    assert.equal((await srv.api.post('/crm/customers', { externalId: 'ext-wu', firstName: 'Wei', lastName: 'Wu' })).status, 201);
    await ctx.go('Customers');
    await page.getByLabel('Name, email or external ID').fill('Wu');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('heading', { name: 'Results for “Wu”' }).waitFor();
    await page.getByRole('status').filter({ hasText: /match/ }).or(page.getByText(/No customer matches/)).first().waitFor();
    assert.equal(await page.getByRole('row', { name: /Wei Wu/ }).count(), 1);
  });

  it('signs out, and a revoked session key sends the user back to sign-in', async () => {
    const { page } = ctx;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('bulb.console.adminKey')), null);

    const temp = (await ctx.srv.api.post('/integrations/apiKeys', { name: 'temp admin', scopes: ['admin'] })).body;
    await ctx.signIn(temp.key);
    await ctx.srv.api.delete(`/integrations/apiKeys/${temp.uuid}`);
    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'API Keys' }).click();
    await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'You have been signed out' }).waitFor();
  });
});
