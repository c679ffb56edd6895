// SPEC §15 "a database dump alone reveals no secret": subscriptions with BEARER and BASIC credentials, a
// rotated secret and real deliveries, then the whole database dumped (pg_dump on PostgreSQL; every table
// read and the data directory archived on PGlite) and searched for every secret in every encoding sent.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { readEveryTable } from '../helpers/db.ts';
import { PgliteDb } from '../../src/db/pglite.ts';
import { waitFor, type Receiver } from '../webhooks/receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' };
const rand = (p: string) => `${p}-${crypto.randomBytes(12).toString('hex')}`;

await describeEachDb('secrets at rest: a database dump reveals none', (ctx) => {
  let rx: Receiver;
  useWorkerAndReceiver(ctx, ENV, (_w, r) => (rx = r));

  it('BEARER token, BASIC password, current and rotated-out signing secrets appear nowhere in a dump', async () => {
    const api = ctx.srv.api;
    const token = rand('bearer');
    const user = rand('user');
    const password = rand('password');
    const bearer = await api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate', authMethod: 'BEARER', bearerToken: token });
    const basic = await api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate', authMethod: 'BASIC', basicUsername: user, basicPassword: password });
    assert.equal(bearer.status, 201, bearer.text);
    assert.equal(basic.status, 201, basic.text);
    const rotated = await api.post(`/integrations/webhooks/subscriptions/${bearer.body.uuid}/rotateSecret`);
    assert.equal(rotated.status, 200, rotated.text);
    const current = rotated.body.signingSecret as string;
    assert.notEqual(current, bearer.body.signingSecret);

    // Real deliveries, so that events, deliveries and attempt logs exist too; they carry the credentials.
    for (const s of [bearer.body, basic.body]) assert.equal((await api.post(`/integrations/webhooks/subscriptions/${s.uuid}/test`)).status, 202);
    await waitFor(() => rx.received.length >= 2, 'both test deliveries');
    const auth = rx.received.map((r) => r.headers.authorization).sort();
    assert.deepEqual(auth, [`Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, `Bearer ${token}`].sort(), 'credentials were sent in clear on the wire');
    await waitFor(async () => (await api.get('/integrations/webhooks/logs')).body.data.length >= 2, 'attempt logs');

    const secrets = [token, password, Buffer.from(`${user}:${password}`).toString('base64')];
    for (const s of [bearer.body.signingSecret, current, basic.body.signingSecret]) secrets.push(s, s.slice('whsec_'.length));

    const dumps: [string, string][] = [['every table', await readEveryTable(ctx.tdb.db)]];
    if (ctx.backend === 'pg') {
      const { stdout } = await promisify(execFile)('pg_dump', ['--no-owner', ctx.tdb.url!], { maxBuffer: 256 * 1024 * 1024 });
      dumps.push(['pg_dump', stdout]);
    } else {
      const tar = Buffer.from(await (await (ctx.tdb.db as PgliteDb).dump()).arrayBuffer());
      dumps.push(['data directory archive', tar.toString('latin1')]);
    }
    for (const [what, text] of dumps) {
      assert.ok(text.includes(rx.url) && text.includes(user), `${what} holds the subscriptions (url and basic username are not secret)`);
      assert.match(text, /v1:[0-9a-f]{16}:/, `${what} holds sealed values`);
      for (const s of secrets) assert.ok(!text.includes(s), `${what} must not contain a secret (${s.slice(0, 12)}…)`);
    }
  });
}, ENV);
