// Defects from the security review (issue 14): IPv4-embedding IPv6 forms of blocked addresses are refused at
// subscription time, and every bad client credential at the token endpoint is RFC 6749 invalid_client.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockedReason } from '../../src/webhooks/address.ts';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes, startServer } from '../helpers/server.ts';
import { redactUrl } from '../../src/http/log-redact.ts';

describe('IPv4-embedding IPv6 forms', () => {
  const refused: [string, RegExp][] = [
    ['::ffff:0:7f00:1', /IPv4-translated loopback \(embeds 127\.0\.0\.1\)/],
    ['::ffff:0:10.1.2.3', /IPv4-translated private/],
    ['2002:7f00:1::', /6to4 loopback \(embeds 127\.0\.0\.1\)/],
    ['2002:a9fe:a9fe::1', /6to4 cloud metadata/],
    ['2002:c0a8:101:1::', /6to4 private/],
    ['64:ff9b::127.0.0.1', /NAT64 loopback/],
    ['64:ff9b::a00:1', /NAT64 private/],
    ['64:ff9b:1::a00:1', /NAT64 local|private/],
    // Teredo: server 65.54.227.120 (public), client 127.0.0.1 stored inverted (80ff:fffe).
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', /Teredo client loopback \(embeds 127\.0\.0\.1\)/],
    ['2001:0:a00:1::1', /Teredo server private/],
    ['::7f00:1', /IPv4-compatible loopback/],
    ['fe80::5efe:127.0.0.1', /link-local|ISATAP/],
    ['2606:4700::200:5efe:a00:1', /ISATAP private/],
    ['[2002:7f00:1::]', /6to4 loopback/],
  ];
  for (const [ip, re] of refused) it(`refuses ${ip}`, () => assert.match(blockedReason(ip) ?? 'ALLOWED', re));
  // The same forms embedding a public address are allowed (they route, and the embedded address may be reached).
  for (const ip of ['::ffff:0:808:808', '2002:808:808::1', '64:ff9b::8.8.8.8', '2001:0:4136:e378:8000:63bf:f7f7:f7f7', '2606:4700::200:5efe:808:808']) {
    it(`allows ${ip}`, () => assert.equal(blockedReason(ip), undefined));
  }
});

await describeEachDb('security defects', (ctx) => {
  it('subscriptions to [::ffff:0:7f00:1] and [2002:7f00:1::] are refused with the reason', async () => {
    for (const [host, re] of [['[::ffff:0:7f00:1]', /IPv4-translated loopback/], ['[2002:7f00:1::]', /6to4 loopback/], ['[64:ff9b::a9fe:a9fe]', /NAT64 cloud metadata/]] as const) {
      const r = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url: `https://${host}/hook`, eventType: 'customerCreate' });
      assert.equal(r.status, 400, `${host}: ${r.text}`);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
      assert.match(r.body.errors[0].message, re);
    }
    assert.equal((await ctx.srv.api.get('/integrations/webhooks/subscriptions')).body.data.length, 0, 'nothing was created');
  });

  it('every bad client credential at the token endpoint answers 401 invalid_client (NUL id and secret included)', async () => {
    const client = (await ctx.srv.api.post('/integrations/authClients', { name: 'c', scopes: ['read'] })).body;
    const basic = (raw: string) => `Basic ${Buffer.from(raw, 'latin1').toString('base64')}`;
    const cases: [string, Record<string, string>, string][] = [
      ['Basic ADoA (NUL:NUL)', { authorization: 'Basic ADoA' }, 'grant_type=client_credentials'],
      ['NUL in the secret', { authorization: basic(`${client.clientId}:\u0000`) }, 'grant_type=client_credentials'],
      ['control character in the id', { authorization: basic(`\u0001${client.clientId}:${client.clientSecret}`) }, 'grant_type=client_credentials'],
      ['NUL in form fields', {}, `grant_type=client_credentials&client_id=%00&client_secret=%00`],
      ['empty id and secret', { authorization: basic(':') }, 'grant_type=client_credentials'],
      ['no colon', { authorization: basic('justone') }, 'grant_type=client_credentials'],
      ['not base64', { authorization: 'Basic ***' }, 'grant_type=client_credentials'],
      ['invalid UTF-8', { authorization: `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0xc3]).toString('base64')}` }, 'grant_type=client_credentials'],
      ['wrong secret', { authorization: basic(`${client.clientId}:wrong`) }, 'grant_type=client_credentials'],
      ['over-long id', { authorization: basic(`${'x'.repeat(300)}:y`) }, 'grant_type=client_credentials'],
    ];
    for (const [what, headers, body] of cases) {
      const r = await fetch(`${ctx.srv.url}/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });
      const text = await r.text();
      assert.equal(r.status, 401, `${what}: ${text}`);
      assert.equal(JSON.parse(text).error, 'invalid_client', `${what}: ${text}`);
      assert.match(r.headers.get('www-authenticate') ?? '', /^Basic/, what);
    }
    // The real credentials still work.
    const ok = await fetch(`${ctx.srv.url}/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(`${client.clientId}:${client.clientSecret}`) },
      body: 'grant_type=client_credentials',
    });
    assert.equal(ok.status, 200);
  });
});

describe('credentials in a URL are not logged', () => {
  it('redactUrl: credential parameters and Bulb secrets anywhere in the URL', () => {
    assert.equal(redactUrl('/auth/oauth2/token?grant_type=client_credentials&client_id=c1&client_secret=s3cret'),
      '/auth/oauth2/token?grant_type=client_credentials&client_id=c1&client_secret=[redacted]');
    assert.equal(redactUrl('/api/2026-11/crm/customers?limit=5&access_token=abc&Api_Key=x&%74oken=y'),
      '/api/2026-11/crm/customers?limit=5&access_token=[redacted]&Api_Key=[redacted]&%74oken=[redacted]');
    assert.equal(redactUrl('/api/2026-11/crm/customers/bulb_key_AbC-12_x?externalId=bulb_at_zz9'), '/api/2026-11/crm/customers/[redacted]?externalId=[redacted]');
    assert.equal(redactUrl('/api/2026-11/crm/customers?externalId=c-1&email=a%40b.c'), '/api/2026-11/crm/customers?externalId=c-1&email=a%40b.c');
    assert.equal(redactUrl('/x?%E0%A4%A=1&token'), '/x?%E0%A4%A=1&token', 'malformed or valueless parameters pass as sent');
    // Percent-encoded secrets (logged in full, or cut at a %2D, before 2026-11-28).
    assert.equal(redactUrl('/api/2026-11/crm/customers/bulb%5Fkey%5FAbC12x?email=bulb%5Fat%5Fzz9%40x.io&q=%62ulb_cs_abc'),
      '/api/2026-11/crm/customers/[redacted]?email=[redacted]&q=[redacted]');
    assert.equal(redactUrl('/api/2026-11/crm/customers?externalId=bulb_key_abc%2Ddef'), '/api/2026-11/crm/customers?externalId=[redacted]');
    assert.equal(redactUrl('/api/2026-11/crm/customers/c%2D1?email=a%40b.c'), '/api/2026-11/crm/customers/c%2D1?email=a%40b.c', 'encoded values without a secret pass as sent');
    // Any spelling of a credential's name (a BULB_ADMIN_KEY key has no bulb_ prefix to be caught by), and the userinfo
    // of an absolute-form target: logged in full until 2026-11-29.
    // And (2026-11-29, a probe) private_key, jwt, hmac, pass, pw, a signing secret's names, and a whsec_ value under any name.
    for (const name of ['api-key', 'x-api-key', 'X-Api-Key', 'accessToken', 'clientSecret', 'authorization', 'bearer', 'auth_token', 'apiKey', 'PASSWORD', 'pwd', 'session_id',
      'private_key', 'jwt', 'hmac', 'pass', 'pw', 'signing', 'signingSecret', 'whsec'])
      assert.equal(redactUrl(`/api/2026-11/crm/customers?limit=5&${name}=probe_admin_key_0123456789`), `/api/2026-11/crm/customers?limit=5&${name}=[redacted]`, name);
    assert.equal(redactUrl('http://admin:probe_admin_key_0123@localhost:8080/api/2026-11/integrations/apiKeys?limit=1'),
      'http://[redacted]@localhost:8080/api/2026-11/integrations/apiKeys?limit=1');
    assert.equal(redactUrl('http://admin:p@ss@host/api/x'), 'http://[redacted]@host/api/x', 'a password holding an @');
    assert.equal(redactUrl('/api/2026-11/crm/customers?q=whsec_LEAK7x%2Bab%3D&externalId=c-1'), '/api/2026-11/crm/customers?q=[redacted]&externalId=c-1');
    assert.equal(redactUrl('/api/2026-11/crm/customers/whsec_AbC+1=?limit=1'), '/api/2026-11/crm/customers/[redacted]?limit=1');
    assert.equal(redactUrl('/api/2026-11/crm/customers?externalId=c-1&eventType=customerCreate&status=all&updatedSince=2026-01-01'),
      '/api/2026-11/crm/customers?externalId=c-1&eventType=customerCreate&status=all&updatedSince=2026-01-01', 'Bulb\'s own parameters pass');
  });
});

await describeEachDb('the request log', (ctx) => {
  it('never holds a token or client secret sent in a query string (refused requests included)', async () => {
    const lines: string[] = [];
    const srv = await startServer(ctx.tdb.db, { BULB_LOG_LEVEL: 'info' }, { log: lines });
    try {
      const key = (await srv.api.post('/integrations/apiKeys', { name: 'logged?', scopes: ['read'] })).body.key as string;
      const client = (await srv.api.post('/integrations/authClients', { name: 'logged?', scopes: ['read'] })).body;
      const refused = await fetch(`${srv.url}/api/2026-11/crm/customers?limit=1&access_token=${key}`);
      assert.equal(refused.status, 401);
      const token = await fetch(`${srv.url}/auth/oauth2/token?grant_type=client_credentials&client_id=${client.clientId}&client_secret=${client.clientSecret}`, { method: 'POST' });
      assert.equal(token.status, 400);
      const pathKey = await fetch(`${srv.url}/api/2026-11/crm/customers/${key}`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(pathKey.status, 404);
      const legacy = await fetch(`${srv.url}/tulip_api/v2/crm/customers?limit=1&token=${key}`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(legacy.status, 400, "an unknown parameter (logged all the same)");
      const text = lines.join('');
      assert.match(text, /incoming request/, 'the log was written');
      // The legacy path is logged as sent, redacted as any other.
      const legacyLine = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'incoming request' && /limit=1&token=/.test(l.req?.url));
      assert.equal(legacyLine?.req.url, '/tulip_api/v2/crm/customers?limit=1&token=[redacted]');
      assert.match(text, /client_secret=\[redacted\]/);
      for (const secret of [key, client.clientSecret]) assert.ok(!text.includes(secret), `${secret.slice(0, 12)}… in the log`);
    } finally {
      await srv.close();
    }
  });
});
