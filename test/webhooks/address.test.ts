// The address guard: the classifier matrix, the connect-time lookup, 400 at subscription time, and
// BLOCKED_ADDRESS at delivery time for a subscription whose host (later) points at a private address.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BlockedAddressError, blockedReason, checkHost, guardedLookup, parseLegacyIPv4 } from '../../src/webhooks/address.ts';
import { guardedAddress } from '../../src/webhooks/destinations/publisher.ts';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { insertSubscription } from '../../src/webhooks/store.ts';
import { newSigningSecret } from '../../src/webhooks/signing.ts';
import { waitFor, type Receiver } from './receiver.ts';

describe('address classifier', () => {
  const refused: [string, RegExp][] = [
    ['127.0.0.1', /loopback/], ['127.255.0.9', /loopback/], ['2130706433', /loopback/], ['0177.0.0.1', /loopback/],
    ['0x7f.0.0.1', /loopback/], ['0x7f000001', /loopback/], ['127.1', /loopback/], ['10.0.0.1', /private/],
    ['172.16.5.4', /private/], ['192.168.0.1', /private/], ['100.64.0.1', /CGNAT/], ['100.127.255.255', /CGNAT/],
    ['169.254.169.254', /metadata/], ['168.63.129.16', /Azure wireserver/], ['169.254.1.1', /link-local/], ['0.0.0.0', /unspecified/], ['0', /unspecified/],
    ['224.0.0.251', /multicast/], ['239.1.1.1', /multicast/], ['255.255.255.255', /reserved/], ['192.88.99.1', /6to4 relay/],
    ['::1', /loopback/], ['[::1]', /loopback/], ['::', /unspecified/], ['fc00::1', /unique local/], ['fd00:ec2::254', /unique local/],
    ['fe80::1', /link-local/], ['fe80::1%eth0', /link-local/], ['ff02::1', /multicast/],
    ['3fff::1', /documentation/], ['3fff:fff:ffff::1', /documentation/], ['2001:2::1', /benchmarking/], ['5f00::1', /segment routing/],
    ['::ffff:127.0.0.1', /IPv4-mapped loopback/], ['::ffff:7f00:1', /IPv4-mapped loopback/], ['[::ffff:a00:1]', /IPv4-mapped private/],
    ['::ffff:169.254.169.254', /IPv4-mapped cloud metadata/], ['::127.0.0.1', /IPv4-compatible loopback/], ['64:ff9b::a9fe:a9fe', /NAT64 cloud metadata/],
  ];
  for (const [ip, re] of refused) {
    it(`refuses ${ip}`, () => assert.match(blockedReason(ip) ?? 'ALLOWED', re));
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.1', '172.32.0.1', '192.88.100.1', '192.88.98.255', '168.63.129.15', '168.63.129.17', '11.0.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2001:3::1', 'example.com']) {
    it(`allows ${ip}`, () => assert.equal(blockedReason(ip), undefined));
  }
  it('parses inet_aton forms', () => {
    assert.equal(parseLegacyIPv4('2130706433'), '127.0.0.1');
    assert.equal(parseLegacyIPv4('0300.0250.1.1'), '192.168.1.1');
    assert.equal(parseLegacyIPv4('0xa.1'), '10.0.0.1');
    assert.equal(parseLegacyIPv4('256.1.1.1'), undefined);
    assert.equal(parseLegacyIPv4('1.2.3.4.5'), undefined);
  });
  it('a broker host written in a legacy form is dialled as the address checked, dotted; a refused name\'s address is not said', async () => {
    // Given to the client as written, "1.0x" (checked as 1.0.0.0) went to the system resolver, which reads it as a
    // name: whatever DNS answered was dialled, past the guard (a probe, 2026-11-29).
    assert.equal(await guardedAddress('1.0x', false), '1.0.0.0');
    assert.equal(await guardedAddress('0x7f.1', true), '127.0.0.1');
    assert.equal(await guardedAddress('[2606:4700:4700::1111]', false), '2606:4700:4700::1111');
    const refused = await guardedAddress('localhost', false).then(() => null, (e: Error) => e);
    assert.equal((refused as any)?.code, 'EBLOCKEDADDRESS');
    assert.match(refused!.message, /^localhost resolves to a loopback address: refused$/);
    const checked = await checkHost('localhost');
    assert.match(checked.blocked ?? '', /^localhost resolves to a loopback address$/);
    assert.match((await checkHost('127.1')).blocked ?? '', /^127\.1 is a loopback address$/, 'a literal is said as given');
    // a name resolving to an IPv6 address that embeds a private IPv4 one (DNS64): the embedded address is not said
    const err = new BlockedAddressError('db.internal.example', '64:ff9b::a00:17', blockedReason('64:ff9b::a00:17')!);
    assert.equal(err.message, 'db.internal.example resolves to a NAT64 private address: refused');
  });

  it('the connect-time lookup refuses a name resolving to loopback, and passes it when allowed', async () => {
    const look = (allow: boolean) =>
      new Promise<{ err: any; addr: any }>((r) => guardedLookup(allow)('localhost', { all: true } as any, (err, addr) => r({ err, addr })));
    const refused = await look(false);
    assert.equal(refused.err?.code, 'EBLOCKEDADDRESS');
    const allowed = await look(true);
    assert.equal(allowed.err, null);
    assert.ok(Array.isArray(allowed.addr) && allowed.addr.length > 0);
  });
});

const ENV = { BULB_WEBHOOK_RETRY_SCHEDULE: '0.05', BULB_WEBHOOK_TIMEOUT_MS: '2000' };

await describeEachDb('webhook address guard', (ctx) => {
  let rx: Receiver;
  useWorkerAndReceiver(ctx, ENV, (_w, r) => (rx = r));

  it('refuses private targets at create and patch with 400 naming the reason', async () => {
    const cases: [string, RegExp][] = [
      [rx.url, /loopback/], [`http://localhost:${rx.port}/`, /resolves to .*loopback/], ['http://2130706433/', /loopback/],
      ['http://[::1]:8080/', /loopback/], ['http://[::ffff:127.0.0.1]/', /IPv4-mapped loopback/], ['http://169.254.169.254/latest/meta-data', /metadata/],
      ['http://10.1.2.3/', /private/], ['https://100.64.1.1/', /CGNAT/], ['http://0.0.0.0:80/', /unspecified/], ['http://[fe80::1]/', /link-local/],
      ['http://0x7f.1/', /loopback/],
    ];
    for (const [url, re] of cases) {
      const r = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url, eventType: 'customerCreate' });
      assert.equal(r.status, 400, url);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
      assert.match(r.body.errors[0].message, re, url);
      // Issue 24 item 6: the refusal names the setting that allows it, and that it is for development only.
      assert.match(r.body.errors[0].message, /BULB_WEBHOOK_ALLOW_PRIVATE=true.*development only/, url);
      assert.equal(r.body.errors[0].moreInfo, 'url');
    }
    const okSub = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url: 'https://8.8.8.8/hook', eventType: 'customerCreate', isActive: false });
    assert.equal(okSub.status, 201);
    const p = await ctx.srv.api.patch(`/integrations/webhooks/subscriptions/${okSub.body.uuid}`, { url: 'http://192.168.1.1/' });
    assert.equal(p.status, 400);
    assert.match(p.body.errors[0].message, /private/);
    assert.match(p.body.errors[0].message, /BULB_WEBHOOK_ALLOW_PRIVATE/);
    await ctx.srv.api.delete(`/integrations/webhooks/subscriptions/${okSub.body.uuid}`);
  });

  it('refuses at connect time with BLOCKED_ADDRESS (names resolving to loopback, and literals), sending nothing', async () => {
    // As if DNS changed after the subscription was created: rows written past the API's validation.
    for (const url of [`http://localhost:${rx.port}/hook`, `http://127.0.0.1:${rx.port}/hook`, `http://[::ffff:127.0.0.1]:${rx.port}/hook`]) {
      await insertSubscription(ctx.tdb.db, {
        url, eventTypes: ['customerCreate'], isActive: true, authMethod: 'NONE', bearerToken: null, basicUsername: null, basicPassword: null, webhookVersion: '2022-08',
      }, newSigningSecret());
    }
    await ctx.srv.api.post('/crm/customers', { externalId: 'blocked-1' });
    const logs = await waitFor(async () => {
      const r = await ctx.srv.api.get('/integrations/webhooks/logs?limit=100');
      return r.body.data.length === 6 ? r.body.data : null; // 3 subscriptions × (1 + 1 retry)
    }, 'six blocked attempts');
    assert.ok(logs.every((a: any) => a.errorCode === 'BLOCKED_ADDRESS' && a.outcome === 'failure' && a.statusCode === null), JSON.stringify(logs.map((a: any) => a.errorCode)));
    assert.ok(logs.every((a: any) => /loopback/.test(a.responseBody)));
    const failed = await ctx.srv.api.get('/integrations/webhooks/deliveries?status=failed');
    assert.equal(failed.body.data.length, 3);
    assert.equal(rx.received.length, 0, 'nothing reached the receiver');
  });
}, ENV);
