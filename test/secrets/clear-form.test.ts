// A stored secret is unambiguous, and one that cannot be opened fails only its own subscription (issue 24 item 4):
// - plaintext mode (BULB_ALLOW_PLAINTEXT_SECRETS=true, no key): a credential shaped like a sealed value is created
//   (201, not 500), stored behind "clear:", sent as given, and the next start does not refuse; the same shape left
//   in clear by an older Bulb is marked by migration 035;
// - with a key: a subscription whose stored credential cannot be opened (sealed under another key, as a worker with
//   a different BULB_SECRET_KEY would write it) gets failed attempts with errorCode SECRET_UNREADABLE, and every
//   other subscription is delivered as before (the claim of all lanes used to throw).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { AesGcmBox, isSealed, sealedKeyId } from '../../src/secrets/box.ts';
import { prepareSecrets } from '../../src/secrets/startup.ts';
import { waitFor, type Receiver } from '../webhooks/receiver.ts';

const SUBS = '/integrations/webhooks/subscriptions';
/** A value of the sealed shape: what a receiver's own tooling may well issue as a token. */
const sealedLooking = () => new AesGcmBox(crypto.randomBytes(32)).seal('anything');
const PLAINTEXT = {
  BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_SECRET_KEY: '', BULB_ALLOW_PLAINTEXT_SECRETS: 'true',
  // Only chooses plaintext mode here (a DATABASE_URL without a key); the tests' database is the suite's own.
  DATABASE_URL: 'postgres://unused@127.0.0.1:1/plaintext-mode',
};

await describeEachDb('plaintext mode: a credential shaped like a sealed value', (ctx) => {
  let rx: Receiver;
  useWorkerAndReceiver(ctx, PLAINTEXT, (_w, r) => (rx = r));
  const raw = async (uuid: string) => (await ctx.tdb.db.query(`SELECT bearer_token, basic_password, signing_secret FROM webhook_subscriptions WHERE uuid = $1`, [uuid])).rows[0];

  it('is created (201), stored behind "clear:", sent as given, and the next start does not refuse', async () => {
    const token = sealedLooking();
    const password = sealedLooking();
    assert.ok(isSealed(token));
    const a = await ctx.srv.api.post(SUBS, { url: rx.url, eventType: 'webhookTest', bearerToken: token });
    assert.equal(a.status, 201, a.text);
    const b = await ctx.srv.api.post(SUBS, { url: rx.url, eventType: 'webhookTest', basicUsername: 'u', basicPassword: password });
    assert.equal(b.status, 201, b.text);
    const stored = await raw(a.body.uuid);
    assert.equal(stored.bearer_token, `clear:${token}`);
    assert.equal((await raw(b.body.uuid)).basic_password, `clear:${password}`);
    assert.equal(stored.signing_secret, `clear:${a.body.signingSecret}`);
    assert.equal((await ctx.srv.api.get(`${SUBS}/${a.body.uuid}/secret`)).body.signingSecret, a.body.signingSecret);
    for (const s of [a.body, b.body]) assert.equal((await ctx.srv.api.post(`${SUBS}/${s.uuid}/test`)).status, 202);
    await waitFor(() => rx.received.length >= 2, 'both deliveries');
    assert.deepEqual(rx.received.map((r) => r.headers.authorization).sort(), [`Basic ${Buffer.from(`u:${password}`).toString('base64')}`, `Bearer ${token}`].sort());
    const again = await prepareSecrets(ctx.tdb.db, loadConfig(PLAINTEXT));
    assert.equal(again.box.plaintext, true, 'the next start (plaintext) goes on');
  });

  it('the same shape left in clear by an older Bulb is marked by migration 035, then read and sent as clear text', async () => {
    const token = sealedLooking();
    const legacy = 'clear:legacy-token';
    await ctx.tdb.db.query(
      `INSERT INTO webhook_subscriptions (url, event_types, auth_method, bearer_token, signing_secret)
       VALUES ($1, '{webhookTest}', 'BEARER', $2, 'whsec_b2xkLWN1cnJlbnQ='), ($1, '{webhookTest}', 'BEARER', $3, 'whsec_b2xkLWN1cnJlbnQ=')`,
      [rx.url, token, legacy],
    );
    await ctx.tdb.db.query('DELETE FROM schema_migrations WHERE version = 35');
    assert.deepEqual(await migrate(ctx.tdb.db), ['035_secrets_clear_form.sql']);
    const rows = (await ctx.tdb.db.query(`SELECT uuid, bearer_token, signing_secret FROM webhook_subscriptions WHERE signing_secret = 'whsec_b2xkLWN1cnJlbnQ=' ORDER BY id`)).rows;
    assert.deepEqual(rows.map((r) => r.bearer_token), [`clear:${token}`, `clear:${legacy}`], 'the ambiguous clear values are marked, whatever they look like');
    await prepareSecrets(ctx.tdb.db, loadConfig(PLAINTEXT)); // does not refuse
    const before = rx.received.length;
    for (const r of rows) assert.equal((await ctx.srv.api.post(`${SUBS}/${r.uuid}/test`)).status, 202);
    await waitFor(() => rx.received.length >= before + 2, 'both legacy deliveries');
    assert.deepEqual(rx.received.slice(before).map((r) => r.headers.authorization).sort(), [`Bearer ${token}`, `Bearer ${legacy}`].sort());
  });
}, PLAINTEXT);

const KEYED = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.1' };

await describeEachDb('a stored secret that cannot be opened', (ctx) => {
  let rx: Receiver;
  useWorkerAndReceiver(ctx, KEYED, (_w, r) => (rx = r));

  it('fails its own subscription\'s attempts with SECRET_UNREADABLE; every other subscription is delivered', async () => {
    const api = ctx.srv.api;
    const bad = await api.post(SUBS, { url: rx.url, eventType: 'customerCreate', bearerToken: 'tok-good' });
    const good = await api.post(SUBS, { url: rx.url, eventType: 'customerCreate' });
    assert.equal(bad.status, 201, bad.text);
    // Sealed under a key this process does not have (a worker started with another BULB_SECRET_KEY wrote it).
    const other = new AesGcmBox(crypto.randomBytes(32)).seal('tok-other');
    await ctx.tdb.db.query(`UPDATE webhook_subscriptions SET bearer_token = $2 WHERE uuid = $1`, [bad.body.uuid, other]);
    assert.equal((await api.post('/crm/customers', { externalId: 'unreadable-1' })).status, 201);
    await waitFor(() => rx.received.some((r) => r.body?.subscription === good.body.uuid), 'the other subscription\'s delivery');
    const logs = await waitFor(async () => {
      const d = (await api.get(`/integrations/webhooks/logs?subscription=${bad.body.uuid}`)).body.data as any[];
      return d.length >= 2 ? d : null;
    }, 'the failed attempts (first and retry)');
    for (const a of logs) {
      assert.equal(a.outcome, 'failure');
      assert.equal(a.errorCode, 'SECRET_UNREADABLE');
      assert.equal(a.statusCode, null);
      assert.match(a.responseBody, new RegExp(`bearerToken cannot be opened .*key id ${sealedKeyId(other)}`));
      assert.deepEqual(a.requestHeaders, {}, 'nothing sent');
    }
    await waitFor(async () => (await api.get(`/integrations/webhooks/deliveries?subscription=${bad.body.uuid}`)).body.data[0]?.status === 'failed', 'failed after its schedule');
    assert.ok(!rx.received.some((r) => r.body?.subscription === bad.body.uuid), 'nothing was sent for it');

    // The API reads it without a 5xx; what needs the value says so (409) and changes nothing; giving it again heals it.
    const stored = async () => (await ctx.tdb.db.query(`SELECT bearer_token FROM webhook_subscriptions WHERE uuid = $1`, [bad.body.uuid])).rows[0].bearer_token;
    assert.equal((await api.get(`${SUBS}/${bad.body.uuid}`)).status, 200);
    const list = await api.get(`${SUBS}?limit=250`);
    assert.equal(list.status, 200, list.text);
    assert.ok(list.body.data.some((s: any) => s.uuid === bad.body.uuid));
    const keep = await api.patch(`${SUBS}/${bad.body.uuid}`, { isActive: false });
    assert.equal(keep.status, 409, keep.text);
    assert.equal(keep.body.errors[0].moreInfo, 'bearerToken');
    assert.match(keep.body.errors[0].message, /bearerToken of this subscription cannot be opened .*give "bearerToken" again/);
    assert.equal(await stored(), other, 'nothing changed');
    assert.equal((await api.get(`${SUBS}/${bad.body.uuid}`)).body.isActive, true);
    const healed = await api.patch(`${SUBS}/${bad.body.uuid}`, { bearerToken: 'tok-new' });
    assert.equal(healed.status, 200, healed.text);
    assert.equal((await api.post(`${SUBS}/${bad.body.uuid}/test`)).status, 202);
    const [r] = await waitFor(() => { const x = rx.received.filter((q) => q.body?.subscription === bad.body.uuid); return x.length ? x : null; }, 'delivered once healed');
    assert.equal(r.headers.authorization, 'Bearer tok-new');

    // An unreadable signing secret: revealing it is a 409, rotating makes a new one.
    const sec = await api.post(SUBS, { url: rx.url, eventType: 'webhookTest' });
    await ctx.tdb.db.query(`UPDATE webhook_subscriptions SET signing_secret = $2 WHERE uuid = $1`, [sec.body.uuid, new AesGcmBox(crypto.randomBytes(32)).seal('whsec_x')]);
    const reveal = await api.get(`${SUBS}/${sec.body.uuid}/secret`);
    assert.equal(reveal.status, 409, reveal.text);
    assert.match(reveal.body.errors[0].message, /signingSecret of this subscription cannot be opened .*rotate it/);
    const rot = await api.post(`${SUBS}/${sec.body.uuid}/rotateSecret`);
    assert.equal(rot.status, 200, rot.text);
    assert.match(rot.body.signingSecret, /^whsec_/);
    // The unreadable one is not kept signing beside it (nobody can sign with it): until 2026-11-30 it was retired for
    // 24 h, and every delivery of those 24 h failed SECRET_UNREADABLE, though the 409 above says rotating heals it.
    assert.equal(rot.body.previousSecretExpiresAt, null);
    assert.equal((await api.post(`${SUBS}/${sec.body.uuid}/test`)).status, 202);
    const [signed] = await waitFor(() => { const x = rx.received.filter((q) => q.body?.subscription === sec.body.uuid); return x.length ? x : null; }, 'delivered once rotated');
    const sig = crypto.createHmac('sha256', rot.body.signingSecret).update(signed.raw).digest('hex');
    assert.equal(signed.headers['x-tulip-hmac-256'], sig, 'signed with the new secret');
    // One rotated out before that fix (or sealed under a key declared lost) leaves only its own signature out.
    await ctx.tdb.db.query(
      `INSERT INTO webhook_retired_secrets (subscription_id, secret, expires_at) SELECT id, $2, now() + interval '1 day' FROM webhook_subscriptions WHERE uuid = $1`,
      [sec.body.uuid, new AesGcmBox(crypto.randomBytes(32)).seal('whsec_y')],
    );
    const before = rx.received.length;
    assert.equal((await api.post(`${SUBS}/${sec.body.uuid}/test`)).status, 202);
    const again = await waitFor(() => rx.received.slice(before).find((q) => q.body?.subscription === sec.body.uuid), 'delivered beside an unreadable rotated-out secret');
    assert.equal(again.headers['x-tulip-hmac-256'], crypto.createHmac('sha256', rot.body.signingSecret).update(again.raw).digest('hex'));
  });
}, KEYED);
