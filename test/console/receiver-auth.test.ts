// Console in a real browser: the subscription form sets OAuth2 client credentials and mutual TLS
// (docs/receiver-auth.md); the client secret and the private key are write-only, and blank keeps them on an edit.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeConsole } from './browser.ts';
import { makeCerts, type TestCerts } from '../webhooks/tls-certs.ts';
import { openSecret } from '../../src/secrets/active.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' };
let certs: TestCerts;
before(async () => {
  certs = await makeCerts();
});

describeConsole('webhook receiver authentication', (ctx) => {
  it('creates an OAuth2 + mutual TLS subscription from the form, and an edit with blank secret and key keeps both', async () => {
    const { page } = ctx;
    await ctx.signIn();
    await ctx.go('Webhooks');
    await page.getByRole('button', { name: 'New subscription' }).click();
    const dialog = page.getByRole('dialog', { name: 'New webhook subscription' });
    await dialog.waitFor();
    await dialog.getByLabel('Webhook URL').fill('https://127.0.0.1:9/hook');
    await dialog.getByLabel('Authentication').selectOption('OAUTH2_CLIENT_CREDENTIALS');
    await dialog.getByLabel('Token URL').fill('http://127.0.0.1:9/token');
    await dialog.getByLabel('Client ID').fill('console-client');
    await dialog.getByLabel('Client secret').fill('console-secret-1');
    await dialog.getByLabel('Scope (optional)').fill('hooks:write');
    await dialog.getByLabel('Mutual TLS (present a client certificate)').check();
    await dialog.getByLabel('Client certificate (PEM)').fill(certs.clientCert);
    await dialog.getByLabel('Private key (PEM, unencrypted)').fill(certs.clientKey);
    await dialog.getByLabel('CA certificate (PEM, optional)').fill(certs.ca);
    await dialog.getByRole('button', { name: 'Create subscription' }).click();
    const created = page.getByRole('dialog', { name: 'Subscription created' });
    await created.waitFor();
    await created.getByRole('button', { name: 'Done' }).click();

    const api = ctx.srv.api.withVersion('2026-11');
    const [sub] = (await api.get('/integrations/webhooks/subscriptions')).body.data;
    assert.equal(sub.authMethod, 'OAUTH2_CLIENT_CREDENTIALS');
    assert.deepEqual(sub.oauth2, { tokenUrl: 'http://127.0.0.1:9/token', clientId: 'console-client', scope: 'hooks:write', audience: null });
    assert.equal(sub.tls.clientCertificate.trim(), certs.clientCert.trim());
    const stored = async () => (await ctx.tdb.db.query<{ s: string; k: string }>('SELECT oauth2_client_secret AS s, tls_client_key AS k FROM webhook_subscriptions')).rows[0];
    const sealed = await stored();
    assert.match(sealed.s, /^v1:/);
    assert.match(sealed.k, /^v1:/);

    // Edit: change the scope only; the secret and key fields are blank and keep the stored values.
    const row = page.getByRole('row', { name: /127\.0\.0\.1:9\/hook/ });
    await row.waitFor();
    assert.match(await row.innerText(), /OAuth2 client credentials/);
    await row.getByRole('button', { name: /Edit/ }).click();
    const edit = page.getByRole('dialog', { name: 'Edit subscription' });
    await edit.waitFor();
    assert.equal(await edit.getByLabel('Client secret').inputValue(), '', 'write-only: never shown');
    assert.equal(await edit.getByLabel('Private key (PEM, unencrypted)').inputValue(), '', 'write-only: never shown');
    await edit.getByLabel('Scope (optional)').fill('hooks:write hooks:read');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    const after = (await api.get(`/integrations/webhooks/subscriptions/${sub.uuid}`)).body;
    assert.equal(after.oauth2.scope, 'hooks:write hooks:read');
    assert.ok(after.tls, 'mutual TLS kept');
    const kept = await stored();
    assert.equal(openSecret(kept.s), 'console-secret-1', 'the client secret kept (sealed afresh on the write)');
    assert.equal(openSecret(kept.k), openSecret(sealed.k), 'the private key kept');
    assert.deepEqual(ctx.pageErrors, []);
  });
}, ENV);
