// Migration 080: until 2026-11-30 a broker URL's query was form-decoded, so a "+" in an AMQP exchange or routing key
// was published as a space. Since then the query is percent-decoded only (a "+" is a plus); an AMQP URL stored before
// is rewritten with %20 in place of each "+" of its query, so it still publishes where it did. Nothing else changes.
// Migration 083: an older process writing a "+" after them (a rolling upgrade) has it written %20 too.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends, emptyDb } from '../helpers/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { queryParam, splitCredential } from '../../src/webhooks/destinations/url.ts';

const ROWS = {
  plus: 'amqp://guest:***@127.0.0.1:5672/v+h?exchange=a+x&routingKey=customer+events', // the vhost is a path: "+" kept
  encoded: 'amqps://broker.example?exchange=x&routingKey=a%2Bb',
  nats: 'nats://127.0.0.1:4222?subject=bulb.events',
  http: 'https://example.com/hook?a=1+2',
};

for (const backend of await backends()) {
  describe(`migration of broker URLs whose query has a "+" (${backend})`, () => {
    it('writes each "+" of an AMQP URL\'s query as %20 (the space it meant), and leaves every other row as it was', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, 79);
        const ids: Record<string, string> = {};
        for (const [name, url] of Object.entries(ROWS)) {
          ids[name] = (await t.db.query<{ uuid: string }>(
            `INSERT INTO webhook_subscriptions (url, signing_secret, event_types) VALUES ($1, 'whsec_dGVzdA==', '{customerCreate}') RETURNING uuid`,
            [url],
          )).rows[0].uuid;
        }
        await migrate(t.db);
        const url = async (name: string) => (await t.db.query<{ url: string }>('SELECT url FROM webhook_subscriptions WHERE uuid = $1', [ids[name]])).rows[0].url;
        const plus = await url('plus');
        assert.equal(plus, 'amqp://guest:***@127.0.0.1:5672/v+h?exchange=a%20x&routingKey=customer%20events');
        assert.equal(queryParam(new URL(plus), 'exchange'), 'a x', 'the exchange it was published to');
        assert.equal(queryParam(new URL(plus), 'routingKey'), 'customer events');
        for (const name of ['encoded', 'nats', 'http'] as const) assert.equal(await url(name), ROWS[name], name);
        // After the migrations, a process of the release before them (during a rolling upgrade) still writes a "+" it
        // means as a space: migration 083's trigger writes it %20, whether it makes the row or changes its URL; this
        // release writes a plus as %2B (splitCredential), which both read as a plus, and the trigger leaves alone.
        const old = (await t.db.query<{ uuid: string }>(
          `INSERT INTO webhook_subscriptions (url, signing_secret, event_types) VALUES ($1, 'whsec_dGVzdA==', '{customerCreate}') RETURNING uuid`,
          ['amqp://127.0.0.1?exchange=x&routingKey=a+b'],
        )).rows[0].uuid;
        ids.old = old;
        assert.equal(await url('old'), 'amqp://127.0.0.1?exchange=x&routingKey=a%20b');
        await t.db.query('UPDATE webhook_subscriptions SET url = $2 WHERE uuid = $1', [ids.encoded, 'amqps://broker.example?exchange=x&routingKey=c+d']);
        assert.equal(await url('encoded'), 'amqps://broker.example?exchange=x&routingKey=c%20d');
        await t.db.query('UPDATE webhook_subscriptions SET url = $2 WHERE uuid = $1', [ids.encoded, 'amqps://broker.example?exchange=x&routingKey=c%2Bd']);
        assert.equal(await url('encoded'), 'amqps://broker.example?exchange=x&routingKey=c%2Bd');
        assert.equal(splitCredential('amqp://u:p@127.0.0.1/v+h?exchange=a+x&routingKey=c+d').url, 'amqp://u:***@127.0.0.1/v+h?exchange=a%2Bx&routingKey=c%2Bd');
        assert.equal(new URLSearchParams(new URL(splitCredential('amqp://h?exchange=a+x').url).search).get('exchange'), 'a+x', 'as the release before reads it');
      } finally {
        await t.close();
      }
    });
  });
}
