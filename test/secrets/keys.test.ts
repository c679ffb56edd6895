// Secret keys (SPEC §15): the sealed format, configuration refusals, the embedded default's key file,
// plaintext mode, and first-start sealing of clear text written by an older Bulb (idempotent, concurrent).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { AesGcmBox, PlaintextBox, SecretError, isSealed, keyId, sealedKeyId } from '../../src/secrets/box.ts';
import { KEY_FILE, resolveSecretBox } from '../../src/secrets/keys.ts';
import { prepareSecrets } from '../../src/secrets/startup.ts';
import { keyIdsInUse } from '../../src/secrets/store.ts';
import { backends, freshDb } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { runBulb } from '../helpers/process.ts';

const b64key = () => crypto.randomBytes(32).toString('base64');

describe('sealed values', () => {
  it('round-trips, uses a fresh nonce per value, names its key, and detects tampering', () => {
    const key = crypto.randomBytes(32);
    const box = new AesGcmBox(key);
    const a = box.seal('whsec_abc');
    const b = box.seal('whsec_abc');
    assert.notEqual(a, b, 'a random nonce per value');
    assert.ok(isSealed(a) && !a.includes('whsec_abc'));
    assert.equal(sealedKeyId(a), keyId(key));
    assert.equal(box.open(a), 'whsec_abc');
    assert.equal(box.open(box.seal('')), '');
    assert.equal(box.open('legacy clear text'), 'legacy clear text', 'clear text from an older Bulb passes through');
    const [v, kid, nonce, ct] = a.split(':');
    const flipped = ct.slice(0, 5) + (ct[5] === 'A' ? 'B' : 'A') + ct.slice(6);
    assert.throws(() => box.open([v, kid, nonce, flipped].join(':')), SecretError);
    assert.throws(() => new AesGcmBox(crypto.randomBytes(32)).open(a), /key id/);
    const rotated = new AesGcmBox(crypto.randomBytes(32), [key]);
    assert.equal(rotated.open(a), 'whsec_abc', 'the previous key still opens');
    assert.notEqual(sealedKeyId(rotated.seal('x')), keyId(key), 'new values use the new key');
    assert.throws(() => new PlaintextBox().open(a), /no BULB_SECRET_KEY/);
  });
});

describe('secret key configuration', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it('refuses keys that are not the base64 of 32 bytes, without echoing them', () => {
    for (const bad of ['short', crypto.randomBytes(16).toString('base64'), crypto.randomBytes(33).toString('base64'), '!'.repeat(44), b64key().slice(0, -2) + '%=']) {
      for (const name of ['BULB_SECRET_KEY', 'BULB_SECRET_KEY_PREVIOUS']) {
        assert.throws(() => loadConfig({ [name]: bad }), (e: Error) => e instanceof ConfigError && e.message.includes(name) && e.message.includes('32') && !e.message.includes(bad), `${name}=${bad}`);
      }
    }
    const k = b64key();
    assert.equal(loadConfig({ BULB_SECRET_KEY: k }).secretKey!.toString('base64'), k);
  });

  it('PostgreSQL without a key refuses to start unless plaintext is allowed; memory:// gets an in-memory key', () => {
    const pgUrl = 'postgres://x@127.0.0.1/none';
    assert.throws(() => resolveSecretBox(loadConfig({ DATABASE_URL: pgUrl })), (e: Error) => e instanceof ConfigError && /BULB_SECRET_KEY/.test(e.message) && /BULB_ALLOW_PLAINTEXT_SECRETS/.test(e.message));
    const plain = resolveSecretBox(loadConfig({ DATABASE_URL: pgUrl, BULB_ALLOW_PLAINTEXT_SECRETS: 'true' }));
    assert.equal(plain.box.plaintext, true);
    assert.match(plain.notice, /in clear/);
    assert.equal(plain.warning, true, 'said at warn');
    const keyed = resolveSecretBox(loadConfig({ DATABASE_URL: pgUrl, BULB_SECRET_KEY: b64key() }));
    assert.equal(keyed.box.plaintext, false);
    assert.throws(() => resolveSecretBox(loadConfig({ DATABASE_URL: pgUrl, BULB_SECRET_KEY_PREVIOUS: b64key() })), /without BULB_SECRET_KEY/);
    const mem = resolveSecretBox(loadConfig({ BULB_DATA_DIR: 'memory://' }));
    assert.equal(mem.box.plaintext, false);
    assert.match(mem.notice, /in-memory key/);
  });

  it('the embedded default creates a 0600 key file once and reuses it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-key-'));
    dirs.push(dir);
    const dataDir = path.join(dir, 'data');
    const first = resolveSecretBox(loadConfig({ BULB_DATA_DIR: dataDir }));
    const file = path.join(dataDir, KEY_FILE);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64').length, 32);
    const second = resolveSecretBox(loadConfig({ BULB_DATA_DIR: dataDir }));
    assert.equal(second.box.currentKeyId, first.box.currentKeyId, 'the same key on the next start');
    assert.equal(second.box.open(first.box.seal('s')), 's');
    assert.deepEqual(fs.readdirSync(dataDir), [KEY_FILE], 'no temporary files left');
    assert.doesNotMatch(second.notice, /WARNING/);
    assert.equal(second.warning, false);
    fs.chmodSync(file, 0o644);
    const loose = resolveSecretBox(loadConfig({ BULB_DATA_DIR: dataDir }));
    assert.match(loose.notice, /WARNING: .* is readable by other users \(mode 0644\)/);
    assert.equal(loose.warning, true, 'said at warn');
    fs.writeFileSync(file, 'garbage\n');
    assert.throws(() => resolveSecretBox(loadConfig({ BULB_DATA_DIR: dataDir })), ConfigError);
  });

  it('a key file missing from a folder whose secrets were sealed under it: the refusal says so, and the new key is not left', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-key-'));
    dirs.push(dir);
    const config = loadConfig({ BULB_DATA_DIR: path.join(dir, 'data') });
    const file = path.join(config.dataDir, KEY_FILE);
    const tdb = await freshDb('pglite');
    try {
      const first = resolveSecretBox(config);
      assert.equal(first.createdKeyFile, file, 'the first start makes it');
      await prepareSecrets(tdb.db, config, first);
      await tdb.db.query(`INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/k', '{customerCreate}', $1)`, [first.box.seal('whsec_a2V5')]);
      assert.equal(resolveSecretBox(config).createdKeyFile, undefined, 'kept: not made again');
      fs.rmSync(file); // a partial copy or restore of the folder
      const again = resolveSecretBox(config);
      await assert.rejects(prepareSecrets(tdb.db, config, again), (e: Error) => e instanceof ConfigError && new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} was missing`).test(e.message) && /restore that file from the backup/.test(e.message));
      assert.equal(fs.existsSync(file), false, 'the key made by the refused start is removed');
    } finally {
      await tdb.close();
    }
  });

  it('the process refuses to start on PostgreSQL without a key, or with a bad key, with a clear message', async () => {
    const run = runBulb;
    const noKey = await run({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/unreachable' });
    assert.equal(noKey.code, 2, noKey.out);
    assert.match(noKey.out, /configuration error: DATABASE_URL is set but BULB_SECRET_KEY is not/);
    const badKey = await run({ BULB_DATA_DIR: 'memory://', BULB_SECRET_KEY: 'not-a-key' });
    assert.equal(badKey.code, 2, badKey.out);
    assert.match(badKey.out, /configuration error: BULB_SECRET_KEY must be the base64 of 32 random bytes/);
  });
});

for (const backend of await backends()) {
  describe(`first start seals clear text left by an older Bulb [${backend}]`, () => {
    it('seals every clear value once, even with several processes starting at once, and refuses unknown keys', async () => {
      const tdb = await freshDb(backend);
      try {
        const db = tdb.db;
        // Rows as an older Bulb wrote them: secrets in clear.
        await db.query(
          `INSERT INTO webhook_subscriptions (url, event_types, auth_method, bearer_token, signing_secret)
           VALUES ('https://example.com/a', '{customerCreate}', 'BEARER', 'old-bearer', 'whsec_b2xkLWN1cnJlbnQ=')`,
        );
        await db.query(
          `INSERT INTO webhook_retired_secrets (subscription_id, secret, expires_at)
           SELECT id, 'whsec_b2xkLXByZXZpb3Vz', now() + interval '1 hour' FROM webhook_subscriptions WHERE url = 'https://example.com/a'`,
        );
        await db.query(
          `INSERT INTO webhook_subscriptions (url, event_types, auth_method, basic_username, basic_password, signing_secret)
           VALUES ('https://example.com/b', '{customerCreate}', 'BASIC', 'old-user', 'old-pass', 'whsec_b2xkLWJhc2lj')`,
        );
        const key = b64key();
        const config = loadConfig({ BULB_SECRET_KEY: key, BULB_DATA_DIR: 'memory://' });
        const runs = await Promise.all([prepareSecrets(db, config), prepareSecrets(db, config), prepareSecrets(db, config)]);
        assert.equal(runs.reduce((n, r) => n + r.sealed, 0), 5, 'five clear values, each sealed exactly once');
        assert.equal((await prepareSecrets(db, config)).sealed, 0, 'idempotent');
        const raw = (await db.query(`SELECT bearer_token, basic_username, basic_password, signing_secret FROM webhook_subscriptions ORDER BY id`)).rows;
        for (const r of raw) for (const c of ['bearer_token', 'basic_password', 'signing_secret']) if (r[c] !== null) assert.ok(isSealed(r[c]), `${c} sealed`);
        const retired = (await db.query(`SELECT secret FROM webhook_retired_secrets`)).rows;
        assert.equal(retired.length, 1);
        assert.ok(isSealed(retired[0].secret), 'a rotated-out secret is sealed too');
        assert.equal(raw[1].basic_username, 'old-user', 'a username is not a secret');
        assert.deepEqual(await keyIdsInUse(db), [keyId(Buffer.from(key, 'base64'))]);
        // The API still reveals the original secret.
        const srv = await startServer(db, { BULB_SECRET_KEY: key });
        try {
          const list = await srv.api.get('/integrations/webhooks/subscriptions');
          const a = list.body.data.find((s: any) => s.url === 'https://example.com/a');
          assert.equal((await srv.api.get(`/integrations/webhooks/subscriptions/${a.uuid}/secret`)).body.signingSecret, 'whsec_b2xkLWN1cnJlbnQ=');
        } finally {
          await srv.close();
        }
        // Another key cannot read them: refuse to start rather than fail every delivery.
        await assert.rejects(prepareSecrets(db, loadConfig({ BULB_SECRET_KEY: b64key(), BULB_DATA_DIR: 'memory://' })), (e: Error) => e instanceof ConfigError && e.message.includes(keyId(Buffer.from(key, 'base64'))));
        await assert.rejects(prepareSecrets(db, loadConfig({ DATABASE_URL: 'postgres://x@y/z', BULB_ALLOW_PLAINTEXT_SECRETS: 'true' })), /needs BULB_SECRET_KEY/);
      } finally {
        await tdb.close();
      }
    });
  });
}
