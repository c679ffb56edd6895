// SPEC §1 configuration: defaults, derived wire names, and clear refusals of bad values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, parseRetrySchedule, wireNames } from '../../src/config.ts';

describe('config', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.dataDir, './data');
    assert.equal(c.adminKey, undefined);
    assert.equal(c.serviceName, 'tulip');
    assert.equal(c.role, 'all');
    assert.deepEqual(c.webhookRetrySchedule, [5, 20, 125]);
    assert.equal(c.webhookTimeoutMs, 20000);
    assert.equal(c.webhookAllowPrivate, false);
    assert.equal(c.rateLimitPerSec, 100);
    assert.equal(c.rateLimitBurst, 200);
    assert.equal(c.authCacheMs, 60000);
    assert.equal(c.bodyLimitBytes, 1024 * 1024);
  });

  it('BULB_PUBLIC_URL: unset is null; a URL loses its trailing slash; anything but an http(s) URL without query or credentials is refused', () => {
    assert.equal(loadConfig({}).publicUrl, null);
    assert.equal(loadConfig({ BULB_PUBLIC_URL: 'https://api.example.com/' }).publicUrl, 'https://api.example.com');
    assert.equal(loadConfig({ BULB_PUBLIC_URL: 'http://10.0.0.5:8080/bulb//' }).publicUrl, 'http://10.0.0.5:8080/bulb');
    for (const bad of ['api.example.com', 'ftp://x.example', 'https://x.example/?a=1', 'https://u:p@x.example', 'https://x.example/#f']) {
      assert.throws(() => loadConfig({ BULB_PUBLIC_URL: bad }), (e: unknown) => e instanceof ConfigError && /BULB_PUBLIC_URL/.test((e as Error).message), bad);
    }
    // The value is never repeated (a password in it was, until 2026-11-29): the message says what is wrong with it.
    for (const [bad, says] of [['https://user:S3cretPw@api.example.com', /credentials/], ['ftp://user:S3cretPw@x.example/', /credentials/], ['not a url S3cretPw', /does not parse/], ['ftp://x.example', /scheme ftp:/]] as const) {
      assert.throws(() => loadConfig({ BULB_PUBLIC_URL: bad }), (e: unknown) => e instanceof ConfigError && says.test((e as Error).message) && !(e as Error).message.includes('S3cretPw'), bad);
    }
  });

  it('derives the legacy prefix, signature header and event sources from BULB_SERVICE_NAME', () => {
    assert.deepEqual(wireNames(loadConfig({}).serviceName), {
      legacyPrefix: '/tulip_api/v2', hmacHeader: 'X-Tulip-Hmac-256', sourceApi: 'TULIP_API', sourceApp: 'TULIP_APP',
    });
    assert.deepEqual(wireNames(loadConfig({ BULB_SERVICE_NAME: 'Acme' }).serviceName), {
      legacyPrefix: '/acme_api/v2', hmacHeader: 'X-Acme-Hmac-256', sourceApi: 'ACME_API', sourceApp: 'ACME_APP',
    });
  });

  it('accepts decimals in the retry schedule and refuses bad values with a ConfigError naming the variable', () => {
    assert.deepEqual(parseRetrySchedule('0.5, 1,2.25'), [0.5, 1, 2.25]);
    for (const [name, value] of [
      ['PORT', 'abc'], ['PORT', '70000'], ['BULB_ROLE', 'boss'], ['BULB_SERVICE_NAME', 'a-b'], ['BULB_SERVICE_NAME', '1x'],
      ['BULB_WEBHOOK_RETRY_SCHEDULE', '5,x'], ['BULB_WEBHOOK_RETRY_SCHEDULE', '-1'], ['BULB_WEBHOOK_RETRY_SCHEDULE', '0x10,1e2'], ['BULB_WEBHOOK_RETRY_SCHEDULE', '5,.5'], ['BULB_WEBHOOK_ALLOW_PRIVATE', 'maybe'],
      ['BULB_WEBHOOK_TIMEOUT_MS', '0'], ['BULB_RATE_LIMIT_PER_SEC', '1.5'],
      ['BULB_WEBHOOK_PROXY', 'garbage'], ['BULB_WEBHOOK_PROXY', 'https://proxy.example:8443'], ['BULB_WEBHOOK_PROXY', 'socks5://proxy.example:1080'],
      ['BULB_WEBHOOK_PROXY', 'http://proxy.example:3128/path'], ['BULB_WEBHOOK_PROXY', 'http://proxy.example:0'],
      // Bad percent-encoding in its password: accepted before 2026-11-29, then every tunnel threw (an HTTP attempt crashed).
      ['BULB_WEBHOOK_PROXY', 'http://u:p%ZZ@proxy.example:3128'],
      // A guessable admin key (found again from its stored SHA-256), one with a space, one shaped like an access token
      // or a client secret (never signs in): accepted before 2026-11-28.
      ['BULB_ADMIN_KEY', 'admin'], ['BULB_ADMIN_KEY', 'correct horse battery staple!'], ['BULB_ADMIN_KEY', 'bulb_at_0123456789abcdef0123456789'],
      ['BULB_ADMIN_KEY', 'bulb_cs_0123456789abcdef0123456789'],
      ['BULB_TRUST_PROXY', 'maybe'], ['BULB_TRUST_PROXY', '10.0.0.0/33'], ['BULB_TRUST_PROXY', '100'],
      ['BULB_TRUST_PROXY', 'fd00::/129'], ['BULB_AUTH_FAILURES_PER_SEC', '0'],
      // Retried for a minute as "database not reachable" before 2026-11-28.
      ['DATABASE_URL', 'mysql://x@y/z'], ['DATABASE_URL', 'garbage'], ['BULB_DATABASE_DIRECT_URL', 'http://db.example/x'], ['BULB_LOG_LEVEL', 'verbose'],
      // Read by Number() until 2026-11-29 (PORT=0x4707 listened on 18183); a region with no numbering plan.
      ['PORT', '0x4707'], ['PORT', '1e3'], ['BULB_WEBHOOK_TIMEOUT_MS', ' 5000'], ['BULB_DEFAULT_PHONE_REGION', 'ZZ'],
    ]) {
      assert.throws(() => loadConfig({ [name]: value }), (err: Error) => err instanceof ConfigError && err.message.includes(name), `${name}=${value}`);
    }
    assert.equal(loadConfig({ BULB_WEBHOOK_ALLOW_PRIVATE: 'yes' }).webhookAllowPrivate, true);
    assert.equal(loadConfig({ BULB_ROLE: 'worker' }).role, 'worker');
    assert.equal(loadConfig({ BULB_ADMIN_KEY: 'bulb_key_0123456789abcdef0123' }).adminKey, 'bulb_key_0123456789abcdef0123');
    assert.equal(loadConfig({ BULB_WEBHOOK_PROXY: 'http://user:pw@proxy.example:3128' }).webhookProxy?.host, 'proxy.example:3128');
    assert.equal(loadConfig({}).trustProxy, false);
    for (const url of ['postgres://u:p@db.example:5432/bulb', 'postgresql:///bulb?host=/var/run/postgresql']) assert.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url);
    // A value that may hold a password is never repeated in the message.
    for (const [name, value] of [['DATABASE_URL', 'mysql://u:s3cretpw@db/x'], ['BULB_WEBHOOK_PROXY', 'http://u:s3cretpw@proxy:99999'],
      ['BULB_WEBHOOK_PROXY', 'http://u:pa/s3cretpw@proxy.example:3128'], ['BULB_WEBHOOK_PROXY', 'http://u:s3cretpw%ZZ@proxy.example:3128'],
      // Without "//" (the URL parser takes "http:u:p@h" too) or with a line break before the "@": the mask missed them.
      ['BULB_WEBHOOK_PROXY', 'http:u:s3cretpw@proxy:99999'], ['BULB_WEBHOOK_PROXY', 'http:\\\\u:s3cretpw@proxy:99999'], ['BULB_WEBHOOK_PROXY', 'http://u:s3cretpw\n@proxy:99999']]) {
      assert.throws(() => loadConfig({ [name]: value }), (err: Error) => err instanceof ConfigError && !err.message.includes('s3cretpw'), name);
    }
    assert.equal(loadConfig({ BULB_TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadConfig({ BULB_TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ BULB_TRUST_PROXY: ' 10.0.0.0/8, 192.168.1.7 ,fd00::/8' }).trustProxy, ['10.0.0.0/8', '192.168.1.7', 'fd00::/8']);
  });
});
