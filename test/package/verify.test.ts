// verifyWebhook ('@bulb/client/verify', packages/client/src/verify.ts) on requests signed as SPEC §7 and §16 say:
// Standard Webhooks signatures made by the standardwebhooks library (key: the base64-decoded part after whsec_),
// and the X-Tulip-Hmac-256 hex HMAC of the body keyed with the whole secret string. Refuses tampering, stale
// timestamps, wrong secrets, a hex HMAC under any other key, missing headers.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../../packages/client/src/verify.ts';

const newSecret = () => 'whsec_' + crypto.randomBytes(32).toString('base64');
const secret = newSecret();
const other = newSecret();
const body = JSON.stringify({ uuid: crypto.randomUUID(), subscription: crypto.randomUUID(), createdAt: new Date().toISOString(), eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'é-1' }, source: 'TULIP_API' });
const id = 'msg_1';
const now = new Date();
const ts = Math.floor(now.getTime() / 1000);
/** SPEC §16: hex HMAC-SHA256 of the body keyed with the UTF-8 bytes of the secret exactly as shown. */
const hexOf = (s: string, b: string) => crypto.createHmac('sha256', Buffer.from(s, 'utf8')).update(b).digest('hex');
/** The rule before SPEC §16 (key: the base64-decoded tail), now refused. */
const oldHexOf = (s: string, b: string) => crypto.createHmac('sha256', Buffer.from(s.slice(6), 'base64')).update(b).digest('hex');
const headers = (sigSecrets: string[], extra: Record<string, string> = {}) => ({
  'webhook-id': id,
  'webhook-timestamp': String(ts),
  'webhook-signature': sigSecrets.map((s) => new Webhook(s).sign(id, now, body)).join(' '),
  'X-Tulip-Hmac-256': hexOf(sigSecrets[0], body),
  ...extra,
});

describe('verifyWebhook (@bulb/client/verify)', () => {
  it('accepts a request signed by the standardwebhooks library and the hex rule, from a Buffer, a Uint8Array or a string, with a Headers object or Node-style headers', () => {
    assert.equal(verifyWebhook(Buffer.from(body), headers([secret]), secret).eventType, 'customerCreate');
    assert.equal(verifyWebhook(new Uint8Array(Buffer.from(body)), headers([secret]), secret).resource.externalId, 'é-1');
    assert.equal(verifyWebhook(body, new Headers(headers([secret])), secret).resource.externalId, 'é-1');
    const nodeStyle = Object.fromEntries(Object.entries(headers([secret])).map(([k, v]) => [k.toLowerCase(), k === 'webhook-id' ? [v] : v]));
    assert.equal(verifyWebhook(body, nodeStyle, secret).source, 'TULIP_API');
    // A Fetch-style framework's `await request.arrayBuffer()`, and a view into a larger buffer (a RangeError until 2026-11-30).
    const bytes = Buffer.from(body);
    assert.equal(verifyWebhook(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length), headers([secret]), secret).eventType, 'customerCreate');
    const padded = Buffer.concat([Buffer.from('xx'), bytes, Buffer.from('yy')]);
    assert.equal(verifyWebhook(new DataView(padded.buffer, padded.byteOffset + 2, bytes.length), headers([secret]), secret).eventType, 'customerCreate');
    // Chunks not concatenated are a setup mistake, not a forged request.
    assert.throws(() => verifyWebhook([bytes] as any, headers([secret]), secret), (e: Error) => e instanceof TypeError && /concatenate chunks/.test(e.message));
  });

  // https://docs.tulip.com/integrating/webhooks/authenticationandsecurity: "sign the webhook message using the
  // secret key … plus a hashing algorithm HMAC-SHA256", header x-tulip-hmac-256. SPEC §16: the key is the secret
  // string as shown, so `openssl dgst -sha256 -hmac "$SECRET"` (the README's shell check) gives the same hex.
  it('the hex header is keyed with the whole whsec_ string: the old decoded-key HMAC is refused; openssl -hmac agrees', () => {
    assert.ok(verifyWebhook(body, headers([secret]), secret));
    assert.throws(() => verifyWebhook(body, headers([secret], { 'X-Tulip-Hmac-256': oldHexOf(secret, body) }), secret), /x-tulip-hmac-256 does not match/);
    const ssl = spawnSync('openssl', ['dgst', '-sha256', '-hmac', secret], { input: body, encoding: 'utf8' });
    if (ssl.status === 0) assert.equal(ssl.stdout.trim().split(' ').pop(), hexOf(secret, body));
    else assert.equal(ssl.error && (ssl.error as NodeJS.ErrnoException).code, 'ENOENT', 'openssl is absent, not failing');
  });

  it('another service name (X-Acme-Hmac-256) is checked the same way', () => {
    const h = { ...headers([secret]), 'X-Tulip-Hmac-256': undefined, 'X-Acme-Hmac-256': hexOf(secret, body) };
    assert.ok(verifyWebhook(body, h, secret));
    assert.throws(() => verifyWebhook(body, { ...h, 'X-Acme-Hmac-256': hexOf(other, body) }, secret), /x-acme-hmac-256/);
  });

  it('during a rotation (one signature per valid secret, hex on the oldest), a receiver holding the new, the old or both secrets verifies', () => {
    const h = { ...headers([secret, other]), 'X-Tulip-Hmac-256': hexOf(other, body) };
    assert.ok(verifyWebhook(body, h, secret));
    assert.ok(verifyWebhook(body, h, other));
    assert.ok(verifyWebhook(body, h, [secret, other]));
    assert.throws(() => verifyWebhook(body, h, newSecret()), /no matching webhook-signature/);
    // With one signature only, a list of secrets: any of them may have signed.
    assert.ok(verifyWebhook(body, headers([other]), [secret, other]));
  });

  it('refuses a tampered body, a wrong secret, a stale or future timestamp, a wrong hex HMAC, missing headers, a body that is not JSON', () => {
    assert.throws(() => verifyWebhook(body.replace('customerCreate', 'customerUpdate'), headers([secret]), secret), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, headers([secret]), other), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, headers([secret]), secret, { nowSec: ts + 301 }), /tolerance/);
    assert.throws(() => verifyWebhook(body, headers([secret]), secret, { nowSec: ts - 301 }), /tolerance/);
    assert.ok(verifyWebhook(body, headers([secret]), secret, { nowSec: ts + 3000, toleranceSec: 3600 }));
    assert.throws(() => verifyWebhook(body, headers([secret], { 'X-Tulip-Hmac-256': hexOf(other, body) }), secret), /x-tulip-hmac-256 does not match/);
    assert.throws(() => verifyWebhook(body, { 'webhook-id': id }, secret), /missing/);
    assert.throws(() => verifyWebhook(body, headers([secret], { 'webhook-timestamp': 'soon' }), secret), /invalid webhook-timestamp/);
    const notJson = 'not json';
    const sig = { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': new Webhook(secret).sign(id, now, notJson), 'x-tulip-hmac-256': hexOf(secret, notJson) };
    assert.throws(() => verifyWebhook(notJson, sig, secret), /not JSON/);
    const err = (() => {
      try {
        verifyWebhook(body, headers([secret]), other);
      } catch (e) {
        return e as Error;
      }
    })();
    assert.equal(err?.name, 'WebhookVerificationError');
  });

  it('a secret not shaped whsec_<base64> is a TypeError (a setup mistake, not a forged request)', () => {
    assert.throws(() => verifyWebhook(body, headers([secret]), secret.slice(6)), TypeError);
    assert.throws(() => verifyWebhook(body, headers([secret]), 'whsec_!!!'), TypeError);
    assert.throws(() => verifyWebhook(body, headers([secret]), []), TypeError);
    // an empty key, and a secret pasted with whitespace (atob would skip it, the hex header would not)
    assert.throws(() => verifyWebhook(body, headers([secret]), 'whsec_'), TypeError);
    assert.throws(() => verifyWebhook(body, headers([secret]), `${secret}\n`), TypeError);
    assert.throws(() => verifyWebhook(body, headers([secret]), `${secret.slice(0, 10)} ${secret.slice(10)}`), TypeError);
    // a setup mistake whatever the request: not reported as a forged one when the headers are missing
    assert.throws(() => verifyWebhook(body, {}, 'whsec_a'), TypeError);
  });

  it('a tolerance or "now" that is not a finite number ≥ 0 is a TypeError, never a check that passes', () => {
    const stale = { ...headers([secret]), 'webhook-timestamp': String(ts - 10 * 365 * 86400) };
    assert.throws(() => verifyWebhook(body, stale, secret), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, stale, secret, { toleranceSec: Number(undefined) }), TypeError);
    assert.throws(() => verifyWebhook(body, stale, secret, { toleranceSec: -1 }), TypeError);
    assert.throws(() => verifyWebhook(body, headers([secret]), secret, { nowSec: NaN }), TypeError);
    assert.throws(() => verifyWebhook(body, headers([secret]), secret, { toleranceSec: Infinity }), TypeError);
  });
});
