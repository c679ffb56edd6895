// Credentials a receiver echoes back, in any form, are never stored (issue 24 item 3, SPEC §15): a real receiver
// echoes the Authorization it got as the decoded "user:password", the password alone, upper- and lower-cased,
// URL-encoded, JSON-escaped, base64 (lower-cased too) and hex, and the bearer token likewise; the logs API shows
// none of them, and neither does a database dump (pg_dump on PostgreSQL, every table read on PGlite).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { it } from 'node:test';
import type http from 'node:http';
import { describeEachDb } from '../helpers/suite.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import type { Client } from '../helpers/server.ts';
import { readEveryTable } from '../helpers/db.ts';
import { startReceiver, waitFor } from './receiver.ts';
import { PARTIAL_MIN, redactCredentials, variantsOf } from '../../src/webhooks/redact.ts';
import { RESPONSE_KEEP_BYTES } from '../../src/webhooks/sender.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.1' };
// Visible ASCII, with the characters that JSON, URLs and base64 each encode differently.
const USER = 'echo-user';
const PASSWORD = 'Pw/"Echo\\+Se=cr?&t-9Q';
const TOKEN = 'Tok/En+ECHO=77"x\\yZ&q';

/** What a careless receiver answers: the credential it was sent, in every form it might print. */
function echoes(secret: string): Record<string, string> {
  const b64 = Buffer.from(secret).toString('base64');
  return {
    asIs: secret, upper: secret.toUpperCase(), lower: secret.toLowerCase(), url: encodeURIComponent(secret), urlLower: encodeURIComponent(secret).toLowerCase(),
    base64: b64, base64Lower: b64.toLowerCase(), base64Url: Buffer.from(secret).toString('base64url'), hex: Buffer.from(secret).toString('hex').toUpperCase(),
  };
}
const echoing = (req: http.IncomingMessage, res: http.ServerResponse) => {
  const auth = String(req.headers.authorization ?? '');
  const [scheme, value] = auth.split(' ');
  const body: Record<string, unknown> = { note: 'echo-ok', header: auth };
  if (scheme === 'Basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    body.decoded = echoes(decoded);
    body.password = echoes(decoded.slice(decoded.indexOf(':') + 1));
  } else body.token = echoes(value);
  res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};

/** Every form, lower-cased, that must appear nowhere (searched in lower-cased text). */
const forbidden = (secrets: string[]) => [...new Set(secrets.flatMap((s) => [...Object.values(echoes(s)), JSON.stringify(s).slice(1, -1)]).map((x) => x.toLowerCase()))];

it('form-encoded and HTML-escaped echoes of a credential are redacted', () => {
  // Characters encodeURIComponent leaves as they are (form encoding does not), a space, and HTML's specials.
  const secret = `Tk!x(y)~z*"a&b<c>d'e f`;
  const html = secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  for (const echo of [new URLSearchParams({ t: secret }).toString().slice(2), html.replace(/'/g, '&#39;'), html.replace(/'/g, '&#x27;')]) {
    assert.equal(redactCredentials(`got ${echo} here`, [secret]), 'got [redacted] here', echo);
    assert.equal(redactCredentials(`got ${echo.toUpperCase()}`, [secret]), 'got [redacted]', echo);
  }
});

it('a text ending with the start of a credential, in any form or case, has that end redacted; shorter starts and other ends are kept', () => {
  const text = 'x'.repeat(100);
  for (const form of variantsOf(TOKEN)) {
    for (let k = 1; k < form.length; k++) {
      for (const part of [form.slice(0, k), form.slice(0, k).toUpperCase()]) {
        const want = k >= PARTIAL_MIN ? `${text}[redacted]` : text + part;
        assert.equal(redactCredentials(text + part, [TOKEN]), want, `${form} cut at ${k}`);
      }
    }
  }
  assert.equal(redactCredentials(`${TOKEN} then ${TOKEN.slice(0, 6)}`, [TOKEN]), '[redacted] then [redacted]');
  assert.equal(redactCredentials('ends with Tok but on', [TOKEN]), 'ends with Tok but on', 'only the very end is a cut echo');
  assert.equal(redactCredentials('nothing like it', [TOKEN]), 'nothing like it');
  // A decoded "user:password" starts with the username, which is no secret: a body ending with it is kept; the
  // password's own start is still redacted.
  const creds = [PASSWORD, `${USER}:${PASSWORD}`];
  assert.equal(redactCredentials(`nope, ${USER}`, creds), `nope, ${USER}`);
  assert.equal(redactCredentials(`nope, ${USER}:${PASSWORD.slice(0, 5)}`, creds), `nope, ${USER}:[redacted]`);
});

/** Sends the subscription a test event and answers its first attempt as the logs API shows it. */
async function firstAttempt(api: Client, uuid: string): Promise<any> {
  assert.equal((await api.post(`/integrations/webhooks/subscriptions/${uuid}/test`)).status, 202);
  const [a] = await waitFor(async () => {
    const d = (await api.get(`/integrations/webhooks/logs?subscription=${uuid}`)).body.data as any[];
    return d.length ? d : null;
  }, 'the attempt');
  return a;
}

await describeEachDb('echoed credentials are redacted in every form', (ctx) => {
  useWorkerAndReceiver(ctx, ENV, () => {});

  it('a receiver echoing a BASIC password or a bearer token in any case or encoding gets none of it stored', async () => {
    const rx = await startReceiver(echoing);
    try {
      const api = ctx.srv.api;
      const basic = await api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'webhookTest', authMethod: 'BASIC', basicUsername: USER, basicPassword: PASSWORD });
      const bearer = await api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'webhookTest', authMethod: 'BEARER', bearerToken: TOKEN });
      assert.equal(basic.status, 201, basic.text);
      assert.equal(bearer.status, 201, bearer.text);
      for (const s of [basic.body, bearer.body]) assert.equal((await api.post(`/integrations/webhooks/subscriptions/${s.uuid}/test`)).status, 202);
      // Each subscription's first request (a loaded machine may send the first one's retry, after its 401, before the other).
      const auths = () => [...new Set(rx.received.map((r) => r.headers.authorization))].sort();
      await waitFor(() => auths().length >= 2, 'both deliveries');
      assert.deepEqual(auths(), [`Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`, `Bearer ${TOKEN}`].sort(), 'sent in clear on the wire');
      const logs = await waitFor(async () => {
        const d = (await api.get('/integrations/webhooks/logs?limit=250')).body.data as any[];
        const mine = d.filter((a) => a.subscriptionUuid === basic.body.uuid || a.subscriptionUuid === bearer.body.uuid);
        return mine.length >= 2 ? mine : null;
      }, 'the attempts in the logs');
      const secrets = [PASSWORD, `${USER}:${PASSWORD}`, TOKEN];
      const bad = forbidden(secrets);
      for (const a of logs) {
        assert.match(a.responseBody, /echo-ok/, 'the rest of the body is kept');
        assert.match(a.responseBody, /\[redacted\]/);
        const text = JSON.stringify(a).toLowerCase();
        for (const f of bad) assert.ok(!text.includes(f), `the logs API shows ${JSON.stringify(f)}: ${a.responseBody}`);
      }
      const dumps: [string, string][] = [['every table', await readEveryTable(ctx.tdb.db)]];
      if (ctx.backend === 'pg') dumps.push(['pg_dump', (await promisify(execFile)('pg_dump', ['--no-owner', ctx.tdb.url!], { maxBuffer: 256 * 1024 * 1024 })).stdout]);
      for (const [what, text] of dumps) {
        assert.ok(text.includes('echo-ok'), `${what} holds the response bodies`);
        const lower = text.toLowerCase();
        for (const f of bad) assert.ok(!lower.includes(f), `${what} holds ${JSON.stringify(f)}`);
      }
    } finally {
      await rx.close();
    }
  });

  it('an echo cut by the 4 KiB kept of a response body leaves no start of the credential (found by probing, 2026-11-28)', async () => {
    const cutAt = 20;
    const rx = await startReceiver((_req, res) => res.writeHead(500).end('x'.repeat(RESPONSE_KEEP_BYTES - cutAt) + TOKEN + ' and more'));
    try {
      const api = ctx.srv.api;
      const s = await api.post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'webhookTest', authMethod: 'BEARER', bearerToken: TOKEN });
      assert.equal(s.status, 201, s.text);
      const a = await firstAttempt(api, s.body.uuid);
      assert.ok(a.responseBody.endsWith('x[redacted]'), a.responseBody.slice(-40));
      const lower = (await readEveryTable(ctx.tdb.db)).toLowerCase();
      assert.ok(!lower.includes(TOKEN.slice(0, PARTIAL_MIN + 3).toLowerCase()), 'no table holds the start of the token');
    } finally {
      await rx.close();
    }
  });

  it('a token endpoint echoing the client credentials it got (the Basic header, decoded, form-encoded) gets none of them stored', async () => {
    // form-encoding (RFC 6749 §2.3.1) escapes ~ ! ' ( ), which URL-encoding (encodeURIComponent) leaves as they are.
    const clientId = 'echo client';
    const clientSecret = "cs~Echo!(Se)cret'9*Q/+=";
    const form = (x: string) => new URLSearchParams({ x }).toString().slice(2);
    const sent = `${form(clientId)}:${form(clientSecret)}`;
    const tokenEndpoint = await startReceiver((req, res) => {
      const auth = String(req.headers.authorization ?? '');
      const decoded = Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString('utf8');
      const [id, secret] = decoded.split(':');
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({
        error: 'invalid_client', error_description: `echo-ok refused ${auth} = ${decoded} (${secret}, ${decodeURIComponent(secret)}, client ${decodeURIComponent(id)})`,
      }));
    });
    const receiver = await startReceiver();
    try {
      const api = ctx.srv.api.withVersion('2026-11');
      const s = await api.post('/integrations/webhooks/subscriptions', {
        url: receiver.url, eventTypes: ['webhookTest'], oauth2: { tokenUrl: tokenEndpoint.url, clientId, clientSecret },
      });
      assert.equal(s.status, 201, s.text);
      const a = await firstAttempt(api, s.body.uuid);
      assert.equal(tokenEndpoint.received[0].headers.authorization, `Basic ${Buffer.from(sent).toString('base64')}`, 'sent in clear on the wire');
      assert.equal(a.errorCode, 'OAUTH_TOKEN_FAILED', JSON.stringify(a));
      assert.match(a.responseBody, /echo-ok refused Basic \[redacted\]/, 'the rest of the text is kept');
      assert.equal(receiver.received.length, 0);
      const bad = forbidden([clientSecret, form(clientSecret), sent]);
      const text = JSON.stringify(a).toLowerCase();
      for (const f of bad) assert.ok(!text.includes(f), `the logs API shows ${JSON.stringify(f)}: ${a.responseBody}`);
      const lower = (await readEveryTable(ctx.tdb.db)).toLowerCase();
      for (const f of bad) assert.ok(!lower.includes(f), `a table holds ${JSON.stringify(f)}`);
    } finally {
      await tokenEndpoint.close();
      await receiver.close();
    }
  });
}, ENV);
