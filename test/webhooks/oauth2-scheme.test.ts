// The OAuth2 token URL's https rule holds when the token is fetched, not only when the URL is written: a plain http
// token URL stored while BULB_WEBHOOK_ALLOW_PRIVATE=true was used after the setting was turned off, sending the client
// secret in clear (found by a probe, 2026-11-29). With private addresses allowed (development) it is used.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { Sender } from '../../src/webhooks/sender.ts';
import { TokenSource } from '../../src/webhooks/oauth2.ts';
import type { Claimed } from '../../src/webhooks/claimed.ts';

let server: http.Server;
let tokenUrl = '';
let requests = 0;
before(async () => {
  server = http.createServer((req, res) => {
    requests++;
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"tok-1","token_type":"Bearer","expires_in":60}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

const claimed = (url: string) => ({
  subscription_id: '1', url: 'https://93.184.215.14/hook', oauth2_token_url: url, oauth2_client_id: 'id', oauth2_client_secret: 'secret-1',
  oauth2_scope: null, oauth2_audience: null,
}) as unknown as Claimed;

it('a plain http token URL is refused at fetch time unless private addresses are allowed; nothing is sent', async () => {
  const strict = new Sender({ timeoutMs: 2000, allowPrivate: false });
  const r = await new TokenSource(strict, 2000).get(claimed('http://93.184.215.14/token'));
  assert.equal(r.ok, false);
  assert.match(!r.ok ? r.reason : '', /token endpoint http:\/\/93\.184\.215\.14\/token: must use https/);
  assert.equal(strict.tokenRefusal('https://93.184.215.14/token'), null, 'https is used');

  const dev = new Sender({ timeoutMs: 2000, allowPrivate: true });
  try {
    const ok = await new TokenSource(dev, 2000).get(claimed(tokenUrl));
    assert.deepEqual(ok, { ok: true, token: 'tok-1' });
    assert.equal(requests, 1);
  } finally {
    await dev.close();
    await strict.close();
  }
});
