// Migration 073: a broker URL written with an upper-case scheme before 2026-11-29 was stored as typed, its password in
// clear in webhook_subscriptions.url (shown by the API) and in the sending config the workers recorded. Upgraded, it
// is stored as every broker URL is: the scheme lower-cased, the password sealed apart and *** in its place, and the
// publisher still connects with the same credential.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends, emptyDb } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openSecret } from '../../src/secrets/active.ts';
import { shownUrl, userAndPassword, withPassword } from '../../src/webhooks/destinations/url.ts';
import { shapeAttempt } from '../../src/webhooks/service.ts';

const Q = '?exchange=bulb&routingKey=customer.events';
const ROWS = {
  clear: `AMQP://guest:p%40ss:w@rd@127.0.0.1:5672/vh${Q}`, // a password with "@" and ":" in it
  noCredential: 'NATS://127.0.0.1:4222?subject=bulb.events',
  userOnly: `AMQPS://guest@broker.example${Q}`,
  alreadyStored: `amqp://guest:***@127.0.0.1:5672${Q}`,
  http: 'https://Example.com/Hook?a=1',
  typed: 'AMQP://u:pw@[0:0::1]:5672/v h?exchange=bulb', // kept as typed but for the scheme and the password
};

for (const backend of await backends()) {
  describe(`migration of broker URLs stored with their password in clear (${backend})`, () => {
    it('moves the password out of the URL (sealed at start), lower-cases the scheme, keeps every other row as it was', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, 72);
        const ids: Record<string, string> = {};
        for (const [name, url] of Object.entries(ROWS)) {
          ids[name] = (await t.db.query<{ uuid: string }>(
            `INSERT INTO webhook_subscriptions (url, signing_secret, event_types, destination_password) VALUES ($1, 'whsec_dGVzdA==', '{customerCreate}', $2) RETURNING uuid`,
            [url, name === 'alreadyStored' ? 'sealed-elsewhere' : null],
          )).rows[0].uuid;
        }
        await t.db.query(
          `INSERT INTO webhook_subscription_versions (subscription_id, digest, url, webhook_version, hmac_header, headers)
           SELECT id, 'd', url, '2022-08', 'X-Bulb-Signature', '{}' FROM webhook_subscriptions WHERE uuid = $1`,
          [ids.clear],
        );
        await migrate(t.db);

        const row = async (name: string) => (await t.db.query<{ url: string; destination_password: string | null }>(
          'SELECT url, destination_password FROM webhook_subscriptions WHERE uuid = $1', [ids[name]])).rows[0];
        assert.deepEqual(await row('clear'), { url: `amqp://guest:***@127.0.0.1:5672/vh${Q}`, destination_password: 'p%40ss:w@rd' });
        assert.deepEqual(await row('noCredential'), { url: 'nats://127.0.0.1:4222?subject=bulb.events', destination_password: null });
        assert.deepEqual(await row('userOnly'), { url: `amqps://guest@broker.example${Q}`, destination_password: null });
        assert.deepEqual(await row('alreadyStored'), { url: ROWS.alreadyStored, destination_password: 'sealed-elsewhere' });
        assert.deepEqual(await row('http'), { url: ROWS.http, destination_password: null });
        const version = (await t.db.query<{ url: string }>('SELECT url FROM webhook_subscription_versions')).rows[0];
        assert.equal(version.url, `AMQP://guest:***@127.0.0.1:5672/vh${Q}`, 'the recorded sending config keeps its history, the password aside');

        assert.deepEqual(await row('typed'), { url: 'amqp://u:***@[0:0::1]:5672/v h?exchange=bulb', destination_password: 'pw' });
        await t.db.query('DELETE FROM webhook_subscriptions WHERE uuid = $1', [ids.alreadyStored]); // not sealed under the test's key
        const srv = await startServer(t.db, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
        try {
          const shown = await srv.api.get(`/integrations/webhooks/subscriptions/${ids.clear}`);
          assert.equal(shown.status, 200, shown.text);
          assert.equal(shown.body.url, `amqp://guest:***@127.0.0.1:5672/vh${Q}`);
          const stored = await row('clear');
          assert.match(stored.destination_password!, /^v1:/, 'sealed at start, as clear text an older Bulb left');
          const sent = withPassword(stored.url, openSecret(stored.destination_password!));
          assert.deepEqual(userAndPassword(sent), ['guest', 'p@ss:w@rd'], 'the publisher connects with the credential as written');
          assert.equal(sent.host + sent.pathname + sent.search, `127.0.0.1:5672/vh${Q}`);
          // Its URL sent back as shown keeps the password: the same URL, as the parser writes it.
          const typed = await srv.api.get(`/integrations/webhooks/subscriptions/${ids.typed}`);
          assert.equal(typed.body.url, 'amqp://u:***@[::1]:5672/v%20h?exchange=bulb', 'shown as the parser writes it');
          const back = await srv.api.patch(`/integrations/webhooks/subscriptions/${ids.typed}`, { url: typed.body.url });
          assert.equal(back.status, 200, back.text);
          assert.equal(openSecret((await row('typed')).destination_password!), 'pw');
        } finally {
          await srv.close();
        }
      } finally {
        await t.close();
      }
    });
  });
}

it('the logs show an attempt stored whole with such a URL without its password (migration 073 leaves those rows as they are)', () => {
  const attempt = (url: string) => shapeAttempt({ url, started_at: '2026-11-01T00:00:00Z', next_attempt_at: null } as any).url;
  assert.equal(attempt(ROWS.clear), `amqp://guest:***@127.0.0.1:5672/vh${Q}`);
  assert.equal(attempt('nats://bulb:s3cret@127.0.0.1:4222?subject=a.b'), 'nats://bulb:***@127.0.0.1:4222?subject=a.b');
  for (const kept of [ROWS.alreadyStored, ROWS.noCredential, ROWS.userOnly, ROWS.http, 'https://hooks.example/p?next=a@b']) assert.equal(shownUrl(kept), kept);
});
