// Receiver helper: verifies a Bulb webhook (Standard Webhooks signature with timestamp tolerance, and the
// X-{Service}-Hmac-256 hex HMAC when present) over the raw body bytes, then returns the parsed event.
// Standalone on purpose (node:crypto only) so that integrators can import 'bulb/verify'.
import crypto from 'node:crypto';
export class WebhookVerificationError extends Error {
}
function header(h, name) {
    if (typeof h.get === 'function')
        return h.get(name) ?? undefined;
    for (const [k, v] of Object.entries(h))
        if (k.toLowerCase() === name)
            return Array.isArray(v) ? v[0] : v;
    return undefined;
}
function headerNames(h) {
    return typeof h.keys === 'function' && typeof h.get === 'function'
        ? [...h.keys()]
        : Object.keys(h);
}
function keyOf(secret) {
    return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}
function same(a, b) {
    const x = Buffer.from(a);
    const y = Buffer.from(b);
    return x.length === y.length && crypto.timingSafeEqual(x, y);
}
/**
 * Throws WebhookVerificationError unless the request was signed with `secret` (or one of `secret` when
 * given a list, e.g. during a rotation) within the tolerance. `rawBody` must be the bytes as received.
 */
export function verifyWebhook(rawBody, headers, secret, opts = {}) {
    const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
    const id = header(headers, 'webhook-id');
    const ts = header(headers, 'webhook-timestamp');
    const sigs = header(headers, 'webhook-signature');
    if (!id || !ts || !sigs)
        throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
    if (!/^\d{1,12}$/.test(ts))
        throw new WebhookVerificationError('invalid webhook-timestamp');
    const now = opts.nowSec ?? Math.floor(Date.now() / 1000);
    if (Math.abs(now - Number(ts)) > (opts.toleranceSec ?? 300))
        throw new WebhookVerificationError('webhook-timestamp outside the tolerance');
    const keys = (Array.isArray(secret) ? secret : [secret]).map(keyOf);
    const offered = sigs.split(' ').filter((s) => s.startsWith('v1,')).map((s) => s.slice(3));
    const signed = Buffer.concat([Buffer.from(`${id}.${ts}.`), body]);
    const stdOk = keys.some((k) => {
        const mine = crypto.createHmac('sha256', k).update(signed).digest('base64');
        return offered.some((o) => same(o, mine));
    });
    if (!stdOk)
        throw new WebhookVerificationError('no matching webhook-signature');
    const hexName = headerNames(headers).find((n) => /^x-[a-z0-9]+-hmac-256$/i.test(n));
    if (hexName) {
        const hex = header(headers, hexName.toLowerCase()) ?? '';
        const hexOk = keys.some((k) => same(hex, crypto.createHmac('sha256', k).update(body).digest('hex')));
        if (!hexOk)
            throw new WebhookVerificationError(`${hexName} does not match`);
    }
    try {
        return JSON.parse(body.toString('utf8'));
    }
    catch {
        throw new WebhookVerificationError('body is not JSON');
    }
}
