// verifyWebhook (the receiver helper exported as 'bulb/verify'): accepts what Bulb and the standardwebhooks
// library sign, refuses tampering, stale timestamps, wrong secrets and a wrong hex HMAC.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../../src/index.ts';

const secret = 'whsec_' + crypto.randomBytes(32).toString('base64');
const other = 'whsec_' + crypto.randomBytes(32).toString('base64');
const body = JSON.stringify({ uuid: crypto.randomUUID(), subscription: crypto.randomUUID(), createdAt: new Date().toISOString(), eventType: 'customerCreate', resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: 'x' }, source: 'TULIP_API' });
const id = 'msg_1';
const now = new Date();
const ts = Math.floor(now.getTime() / 1000);
const hex = (s: string, b: string) => crypto.createHmac('sha256', Buffer.from(s.slice(6), 'base64')).update(b).digest('hex');
const headers = (sigSecrets: string[], extra: Record<string, string> = {}) => ({
  'webhook-id': id,
  'webhook-timestamp': String(ts),
  'webhook-signature': sigSecrets.map((s) => new Webhook(s).sign(id, now, body)).join(' '),
  'X-Tulip-Hmac-256': hex(sigSecrets[0], body),
  ...extra,
});

describe('verifyWebhook', () => {
  it('accepts a request signed by the standardwebhooks library, from a Buffer or a string, with a Headers object too', () => {
    assert.equal(verifyWebhook(Buffer.from(body), headers([secret]), secret).eventType, 'customerCreate');
    assert.equal(verifyWebhook(body, new Headers(headers([secret])), secret).resource.externalId, 'x');
  });
  it('during a rotation, either secret verifies', () => {
    const h = { ...headers([other, secret]), 'X-Tulip-Hmac-256': hex(other, body) };
    assert.ok(verifyWebhook(body, h, [other]));
    assert.ok(verifyWebhook(body, { ...h, 'X-Tulip-Hmac-256': hex(secret, body) }, secret));
  });
  it('refuses a tampered body, a wrong secret, a stale timestamp, a wrong hex HMAC, missing headers', () => {
    assert.throws(() => verifyWebhook(body.replace('customerCreate', 'customerUpdate'), headers([secret]), secret), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, headers([secret]), other), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, headers([secret]), secret, { nowSec: ts + 301 }), /tolerance/);
    assert.ok(verifyWebhook(body, headers([secret]), secret, { nowSec: ts + 3000, toleranceSec: 3600 }));
    assert.throws(() => verifyWebhook(body, headers([secret], { 'X-Tulip-Hmac-256': hex(other, body) }), secret), /Hmac/);
    assert.throws(() => verifyWebhook(body, { 'webhook-id': id }, secret), /missing/);
  });
});
