// Key rotation (SPEC §15): start with key A, rotate to key B (A as BULB_SECRET_KEY_PREVIOUS), re-encrypt
// (`npm run reencrypt` on PostgreSQL, the same function in process on PGlite), then start with B alone and
// check that deliveries are still signed with the right secrets and carry the right credentials.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { keyId } from '../../src/secrets/box.ts';
import { prepareSecrets, reencryptAll } from '../../src/secrets/startup.ts';
import { keyIdsInUse } from '../../src/secrets/store.ts';
import { backends, freshDb } from '../helpers/db.ts';
import { runBulb } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { startWorker } from '../helpers/worker.ts';
import { startReceiver, waitFor } from '../webhooks/receiver.ts';

const ALLOW = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' };

const runReencrypt = (env: Record<string, string>) => runBulb({ BULB_LOG_LEVEL: 'silent', ...env }, 'reencrypt');

for (const backend of await backends()) {
  describe(`secret key rotation and reencrypt [${backend}]`, () => {
    it('after rotating A → B and re-encrypting, B alone signs and authenticates every delivery correctly', async () => {
      const A = crypto.randomBytes(32).toString('base64');
      const B = crypto.randomBytes(32).toString('base64');
      const kid = (k: string) => keyId(Buffer.from(k, 'base64'));
      const tdb = await freshDb(backend);
      const rx = await startReceiver();
      try {
        // 1. Under key A: a BEARER and a BASIC subscription, one with a rotated signing secret.
        let srv = await startServer(tdb.db, { ...ALLOW, BULB_SECRET_KEY: A });
        const bearer = (await srv.api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate', authMethod: 'BEARER', bearerToken: 'rot-token' })).body;
        const basic = (await srv.api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate', authMethod: 'BASIC', basicUsername: 'rot-user', basicPassword: 'rot-pass' })).body;
        const rotated = (await srv.api.post(`/integrations/webhooks/subscriptions/${bearer.uuid}/rotateSecret`)).body;
        assert.ok(rotated.signingSecret && rotated.previousSecretExpiresAt, 'rotated, the old secret still valid');
        await srv.close();
        assert.deepEqual(await keyIdsInUse(tdb.db), [kid(A)]);

        // 2. B alone cannot open A's values: refuse to start, naming A's key id.
        await assert.rejects(prepareSecrets(tdb.db, loadConfig({ BULB_SECRET_KEY: B })), (e: Error) => e instanceof ConfigError && e.message.includes(kid(A)));

        // 3. B with A as previous: old values open, new ones are sealed under B.
        srv = await startServer(tdb.db, { ...ALLOW, BULB_SECRET_KEY: B, BULB_SECRET_KEY_PREVIOUS: A });
        assert.equal((await srv.api.get(`/integrations/webhooks/subscriptions/${bearer.uuid}/secret`)).body.signingSecret, rotated.signingSecret);
        const later = (await srv.api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate', authMethod: 'BEARER', bearerToken: 'later-token' })).body;
        await srv.close();
        assert.deepEqual((await keyIdsInUse(tdb.db)).sort(), [kid(A), kid(B)].sort());

        // 4. Re-encrypt: the CLI on PostgreSQL, the same function in process on (in-memory) PGlite.
        if (backend === 'pg') {
          const r = await runReencrypt({ DATABASE_URL: tdb.url!, BULB_SECRET_KEY: B, BULB_SECRET_KEY_PREVIOUS: A });
          assert.equal(r.code, 0, r.out);
          assert.match(r.out, new RegExp(`re-encrypted 5 secret value\\(s\\); every stored secret is now under key id ${kid(B)}`));
          const again = await runReencrypt({ DATABASE_URL: tdb.url!, BULB_SECRET_KEY: B });
          assert.match(again.out, /re-encrypted 0 secret value/, again.out);
          const missing = await runReencrypt({ DATABASE_URL: tdb.url! });
          assert.equal(missing.code, 2, 'reencrypt without a key refuses');
        } else {
          const { box } = await prepareSecrets(tdb.db, loadConfig({ BULB_SECRET_KEY: B, BULB_SECRET_KEY_PREVIOUS: A }));
          assert.equal(await reencryptAll(tdb.db, box), 5, 'bearer token, basic password, two signing secrets and the rotated-out one');
          assert.equal(await reencryptAll(tdb.db, box), 0, 'idempotent');
        }
        assert.deepEqual(await keyIdsInUse(tdb.db), [kid(B)]);

        // 5. B alone: every subscription delivers, signed and authenticated as before the key rotation.
        srv = await startServer(tdb.db, { ...ALLOW, BULB_SECRET_KEY: B });
        const worker = await startWorker(tdb.db, { ...ALLOW, BULB_SECRET_KEY: B });
        try {
          for (const s of [bearer, basic, later]) assert.equal((await srv.api.post(`/integrations/webhooks/subscriptions/${s.uuid}/test`)).status, 202);
          await waitFor(() => rx.received.length >= 3, 'three deliveries');
          const of = (uuid: string) => rx.received.find((r) => r.body.subscription === uuid)!;
          const hex = (secret: string, raw: Buffer) => crypto.createHmac('sha256', secret).update(raw).digest('hex');
          const check = (uuid: string, secrets: string[], auth: string) => {
            const r = of(uuid);
            assert.equal(r.headers.authorization, auth);
            // The hex header is keyed with one valid secret (which one is §7's rotation rule); webhook-signature carries one per valid secret.
            assert.ok(secrets.some((secret) => r.headers['x-tulip-hmac-256'] === hex(secret, r.raw)), 'hex signature verifies');
            const sigs = String(r.headers['webhook-signature']).split(' ');
            assert.equal(sigs.length, secrets.length);
            for (const secret of secrets) assert.doesNotThrow(() => new Webhook(secret).verify(r.raw.toString('utf8'), r.headers as Record<string, string>));
          };
          check(bearer.uuid, [rotated.signingSecret, bearer.signingSecret], 'Bearer rot-token');
          check(basic.uuid, [basic.signingSecret], `Basic ${Buffer.from('rot-user:rot-pass').toString('base64')}`);
          check(later.uuid, [later.signingSecret], 'Bearer later-token');
        } finally {
          await worker.stop();
          await srv.close();
        }
      } finally {
        await rx.close();
        await tdb.close();
      }
    });
  });
}
