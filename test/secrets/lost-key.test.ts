// A key lost for good (SPEC §15, docs/security.md "A lost key"): a start that finds values sealed under a key it does
// not have refuses, and says how to start without it (BULB_SECRET_KEYS_LOST). Declared lost, the start deactivates the
// subscriptions holding such values (their deliveries wait; an audit row each), leaves the values as they are (a key
// found again still opens them), and the API heals each subscription: a credential given anew, the signing secret
// rotated, then re-activated. Until 2026-11-30 the only way out was SQL by hand.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { AesGcmBox, keyId, sealedKeyId } from '../../src/secrets/box.ts';
import { prepareSecrets, reencryptAll } from '../../src/secrets/startup.ts';
import { keyIdsInUse } from '../../src/secrets/store.ts';
import { backends, freshDb } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

const ALLOW = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' };
const SUBS = '/integrations/webhooks/subscriptions';
/** A subscription made through a server's API (a loopback receiver unless `body` says otherwise). */
const maker = (srv: { api: { post(path: string, body: object): Promise<{ body: any }> } }) => async (body: object) =>
  (await srv.api.post(SUBS, { url: 'http://127.0.0.1:9/x', eventType: 'customerCreate', ...body })).body;
/** Seals `v` under `key` into a subscription's column, as a process holding that key wrote it. */
const sealInto = (db: { query(sql: string, params: unknown[]): Promise<unknown> }, uuid: string, column: string, key: Buffer, v: string) =>
  db.query(`UPDATE webhook_subscriptions SET ${column} = $2 WHERE uuid = $1`, [uuid, new AesGcmBox(key).seal(v)]);

for (const backend of await backends()) {
  describe(`a secret key lost for good [${backend}]`, () => {
    it('refused with the way out named; declared lost, its holders are deactivated and healed through the API', async () => {
      const K = crypto.randomBytes(32).toString('base64');
      const lostKey = crypto.randomBytes(32);
      const L = keyId(lostKey);
      const tdb = await freshDb(backend);
      try {
        let srv = await startServer(tdb.db, { ...ALLOW, BULB_SECRET_KEY: K });
        const make = maker(srv);
        const bearer = await make({ authMethod: 'BEARER', bearerToken: 'tok' });
        const signing = await make({});
        const healthy = await make({});
        const idle = await make({ authMethod: 'BEARER', bearerToken: 'tok2', isActive: false });
        const broker = (await srv.api.post(SUBS, { url: 'amqp://user:pw@127.0.0.1:5672/vh?exchange=bulb&routingKey=k', eventType: 'customerCreate' })).body;
        const gone = await make({});
        assert.equal((await srv.api.delete(`${SUBS}/${gone.uuid}`)).status, 204);
        await srv.close();
        // What a process with the lost key sealed: the bearer tokens of two, the signing secret of one.
        const underLost = (v: string) => new AesGcmBox(lostKey).seal(v);
        const set = (uuid: string, column: string, v: string) => tdb.db.query(`UPDATE webhook_subscriptions SET ${column} = $2 WHERE uuid = $1`, [uuid, v]);
        await set(bearer.uuid, 'bearer_token', underLost('tok'));
        await set(signing.uuid, 'signing_secret', underLost('whsec_lost'));
        await set(idle.uuid, 'bearer_token', underLost('tok2'));
        await set(broker.uuid, 'destination_password', underLost('pw'));
        // Under the lost key too, but never used again: a deleted subscription's value, an expired rotated-out secret
        // (they kept the key "in use" for ever: a probe), and a live rotated-out secret of `signing`.
        await set(gone.uuid, 'signing_secret', underLost('whsec_gone'));
        const retire = (uuid: string, v: string, expires: string) => tdb.db.query(
          `INSERT INTO webhook_retired_secrets (subscription_id, secret, expires_at) SELECT id, $2, now() + $3::interval FROM webhook_subscriptions WHERE uuid = $1`, [uuid, v, expires]);
        await retire(healthy.uuid, underLost('whsec_old'), '-1 hour');
        await retire(signing.uuid, underLost('whsec_older'), '1 day');

        // 1. Refused, naming the key id and the setting that starts without it; nothing changed.
        await assert.rejects(prepareSecrets(tdb.db, loadConfig({ BULB_SECRET_KEY: K })),
          (e: Error) => e instanceof ConfigError && e.message.includes(`BULB_SECRET_KEYS_LOST=${L}`));
        assert.throws(() => loadConfig({ BULB_SECRET_KEY: K, BULB_SECRET_KEYS_LOST: 'not-a-key-id' }), ConfigError);
        const active = async () => Object.fromEntries((await tdb.db.query<{ uuid: string; is_active: boolean }>(
          `SELECT uuid, is_active FROM webhook_subscriptions WHERE deleted_at IS NULL`)).rows.map((r) => [r.uuid, r.is_active]));
        assert.deepEqual(await active(), { [bearer.uuid]: true, [signing.uuid]: true, [healthy.uuid]: true, [idle.uuid]: false, [broker.uuid]: true });

        // 2. Declared lost: the start goes on; the active holders are deactivated, with a reason and an audit row each.
        const lostEnv = { BULB_SECRET_KEY: K, BULB_SECRET_KEYS_LOST: L.toUpperCase() };
        const first = await prepareSecrets(tdb.db, loadConfig(lostEnv));
        assert.equal(first.warning, true);
        assert.match(first.notice, new RegExp(`3 subscription\\(s\\) deactivated: they hold values sealed under key id ${L}`));
        assert.deepEqual(await active(), { [bearer.uuid]: false, [signing.uuid]: false, [healthy.uuid]: true, [idle.uuid]: false, [broker.uuid]: false });
        const audit = (await tdb.db.query<{ target_id: string; actor_type: string; details: { reason: string } }>(
          `SELECT target_id, actor_type, details FROM audit_log WHERE action = 'subscription.disabled' ORDER BY target_id`)).rows;
        assert.deepEqual(audit.map((a) => a.target_id).sort(), [bearer.uuid, signing.uuid, broker.uuid].sort());
        for (const a of audit) {
          assert.equal(a.actor_type, 'system');
          assert.match(a.details.reason, new RegExp(`sealed under key id ${L}, declared lost`));
        }
        // The reason names the fields (the API leaves them out of its answer); announced as Bulb's own disables are.
        assert.match(audit.find((a) => a.target_id === bearer.uuid)!.details.reason, /^bearerToken of this subscription/);
        assert.match(audit.find((a) => a.target_id === signing.uuid)!.details.reason, /^signingSecret of this subscription/);
        const announced = (await tdb.db.query<{ resource_uuid: string }>(`SELECT resource_uuid FROM events WHERE event_type = 'webhookSubscriptionDisabled'`)).rows;
        assert.deepEqual(announced.map((e) => e.resource_uuid).sort(), [bearer.uuid, signing.uuid, broker.uuid].sort());
        // The values stay as they were (the key, if found, still opens them); another start deactivates nothing more.
        assert.equal(sealedKeyId((await tdb.db.query<{ bearer_token: string }>(`SELECT bearer_token FROM webhook_subscriptions WHERE uuid = $1`, [bearer.uuid])).rows[0].bearer_token), L);
        const second = await prepareSecrets(tdb.db, loadConfig(lostEnv));
        assert.equal(second.warning, false);
        assert.equal((await tdb.db.query(`SELECT 1 FROM audit_log WHERE action = 'subscription.disabled'`)).rows.length, 3);
        // reencrypt leaves them too (it re-seals what it can open): it does not stop at them.
        assert.equal(await reencryptAll(tdb.db, second.box), 0);

        // 3. Healed through the API: a credential given anew, the signing secret rotated; each re-activation that would
        //    fail every delivery is a 409 naming what to give.
        srv = await startServer(tdb.db, { ...ALLOW, ...lostEnv });
        const health = (await srv.api.get(`${SUBS}/${bearer.uuid}`)).body.health;
        assert.match(JSON.stringify(health), /declared lost/);
        const noToken = await srv.api.patch(`${SUBS}/${bearer.uuid}`, { isActive: true });
        assert.deepEqual([noToken.status, noToken.body.errors[0].moreInfo], [409, 'bearerToken']);
        assert.equal((await srv.api.patch(`${SUBS}/${bearer.uuid}`, { isActive: true, bearerToken: 'tok-new' })).status, 200);
        const noSecret = await srv.api.patch(`${SUBS}/${signing.uuid}`, { isActive: true });
        assert.deepEqual([noSecret.status, noSecret.body.errors[0].moreInfo], [409, 'signingSecret'], noSecret.text);
        const rotated = await srv.api.post(`${SUBS}/${signing.uuid}/rotateSecret`);
        assert.equal(rotated.status, 200);
        // Its rotated-out secret under the lost key goes with the rotation: nothing signs with it, none is promised.
        assert.equal(rotated.body.previousSecretExpiresAt, null);
        assert.equal((await srv.api.patch(`${SUBS}/${signing.uuid}`, { isActive: true })).status, 200);
        // A broker URL's password: re-activating with it kept is a 409 too (every publish would fail); given again, 200.
        const noPassword = await srv.api.patch(`${SUBS}/${broker.uuid}`, { isActive: true });
        assert.deepEqual([noPassword.status, noPassword.body.errors[0].moreInfo], [409, "url's password"], noPassword.text);
        assert.equal((await srv.api.patch(`${SUBS}/${broker.uuid}`, { isActive: true, url: 'amqp://user:pw2@127.0.0.1:5672/vh?exchange=bulb&routingKey=k' })).status, 200);
        assert.deepEqual(await active(), { [bearer.uuid]: true, [signing.uuid]: true, [healthy.uuid]: true, [idle.uuid]: false, [broker.uuid]: true });
        // Only the inactive one still holds a value under the lost key (not the deleted one, nor the expired secret).
        assert.deepEqual((await keyIdsInUse(tdb.db)).sort(), [keyId(Buffer.from(K, 'base64')), L].sort());
        assert.equal((await srv.api.delete(`${SUBS}/${idle.uuid}`)).status, 204);
        await srv.close();
        assert.deepEqual(await keyIdsInUse(tdb.db), [keyId(Buffer.from(K, 'base64'))]);
        const clean = await prepareSecrets(tdb.db, loadConfig({ BULB_SECRET_KEY: K }));
        assert.equal(clean.warning, false, 'the setting can go');
      } finally {
        await tdb.close();
      }
    });

    it('the notice names the lost keys the deactivated subscriptions\' values are sealed under, not every id declared', async () => {
      const K = crypto.randomBytes(32).toString('base64');
      const lost = Array.from({ length: 5 }, () => crypto.randomBytes(32));
      // L1, L2: sealing values of active subscriptions; idleKey: only an inactive one's; retiredKey: only a live
      // rotated-out secret; unused: declared, sealing nothing.
      const [L1, L2, idleKey, retiredKey, unused] = lost.map(keyId);
      const tdb = await freshDb(backend);
      try {
        const srv = await startServer(tdb.db, { ...ALLOW, BULB_SECRET_KEY: K });
        const make = maker(srv);
        const one = await make({ authMethod: 'BEARER', bearerToken: 'tok' });
        const two = await make({});
        const idle = await make({ authMethod: 'BEARER', bearerToken: 'tok2', isActive: false });
        const other = await make({});
        await srv.close();
        const set = (uuid: string, column: string, key: Buffer, v: string) => sealInto(tdb.db, uuid, column, key, v);
        await set(one.uuid, 'bearer_token', lost[0], 'tok');
        await set(two.uuid, 'signing_secret', lost[1], 'whsec_two');
        await set(idle.uuid, 'bearer_token', lost[2], 'tok2');
        await tdb.db.query(`INSERT INTO webhook_retired_secrets (subscription_id, secret, expires_at) SELECT id, $2, now() + interval '1 day' FROM webhook_subscriptions WHERE uuid = $1`,
          [other.uuid, new AesGcmBox(lost[3]).seal('whsec_old')]);
        const declared = [L1, L2, idleKey, retiredKey, unused];
        const started = await prepareSecrets(tdb.db, loadConfig({ BULB_SECRET_KEY: K, BULB_SECRET_KEYS_LOST: declared.join(',') }));
        assert.equal(started.warning, true);
        const named = started.notice.match(/2 subscription\(s\) deactivated: they hold values sealed under key id (.*), declared lost/);
        assert.ok(named, started.notice);
        assert.deepEqual(named[1].split(', ').sort(), [L1, L2].sort());
      } finally {
        await tdb.close();
      }
    });

    it('each deactivated subscription\'s reason names its own lost key ids and fields, not every lost key in use', async () => {
      const K = crypto.randomBytes(32).toString('base64');
      const lost = [crypto.randomBytes(32), crypto.randomBytes(32)];
      const [L1, L2] = lost.map(keyId);
      const tdb = await freshDb(backend);
      try {
        const srv = await startServer(tdb.db, { ...ALLOW, BULB_SECRET_KEY: K });
        const make = maker(srv);
        const one = await make({ authMethod: 'BEARER', bearerToken: 'tok' });
        const two = await make({});
        const both = await make({ authMethod: 'BEARER', bearerToken: 'tok3' });
        await srv.close();
        const set = (uuid: string, column: string, key: Buffer, v: string) => sealInto(tdb.db, uuid, column, key, v);
        await set(one.uuid, 'bearer_token', lost[0], 'tok');
        await set(two.uuid, 'signing_secret', lost[1], 'whsec_two');
        await set(both.uuid, 'signing_secret', lost[0], 'whsec_both');
        await set(both.uuid, 'bearer_token', lost[1], 'tok3');
        const started = await prepareSecrets(tdb.db, loadConfig({ BULB_SECRET_KEY: K, BULB_SECRET_KEYS_LOST: `${L1},${L2}` }));
        assert.match(started.notice, /3 subscription\(s\) deactivated/);
        const reasons = Object.fromEntries((await tdb.db.query<{ uuid: string; disabled_reason: string }>(
          `SELECT uuid, disabled_reason FROM webhook_subscriptions`)).rows.map((r) => [r.uuid, r.disabled_reason]));
        const audited = Object.fromEntries((await tdb.db.query<{ target_id: string; details: { reason: string } }>(
          `SELECT target_id, details FROM audit_log WHERE action = 'subscription.disabled'`)).rows.map((r) => [r.target_id, r.details.reason]));
        // What each says before the way out: its fields, and the key ids its own values are sealed under.
        const named = (uuid: string) => reasons[uuid].split(', declared lost')[0];
        assert.equal(named(one.uuid), `bearerToken of this subscription: sealed under key id ${L1}`);
        assert.equal(named(two.uuid), `signingSecret of this subscription: sealed under key id ${L2}`);
        const mixed = named(both.uuid).match(/^signingSecret, bearerToken of this subscription: sealed under key id (.*)$/);
        assert.ok(mixed, reasons[both.uuid]);
        assert.deepEqual(mixed[1].split(', ').sort(), [L1, L2].sort());
        for (const s of [one, two, both]) assert.equal(audited[s.uuid], reasons[s.uuid], 'the audit row says the same');
      } finally {
        await tdb.close();
      }
    });
  });
}
