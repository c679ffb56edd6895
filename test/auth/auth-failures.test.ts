// Failed authentications are limited per client address (BULB_AUTH_FAILURES_PER_SEC / _BURST): each unknown, revoked or
// expired token, and each bad OAuth2 client secret, costs a database lookup, so an address past its failures is answered
// 429 before any lookup. A token the cache holds is admitted without one and never waits for this. The client address
// comes from X-Forwarded-For only through the proxies BULB_TRUST_PROXY names. Until 2026-11-28 nothing limited them: ~300
// bad-token requests a second raised a normal client's median from ~11 to ~100 ms on a loaded machine.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY, errorCodes, startServer, type Res } from '../helpers/server.ts';
import { waitFor } from '../webhooks/receiver.ts';

const LIMITS = { BULB_AUTH_FAILURES_PER_SEC: '1', BULB_AUTH_FAILURES_BURST: '3' };
const BAD = 'bulb_key_0000000000000000000000000000000000000000';

await describeEachDb('failed authentications per client address', (ctx) => {
  /** Sequential requests with an unknown token until the first 429 (at most 10). */
  async function failUntilLimited(get: (i: number) => Promise<Res>): Promise<Res[]> {
    const out: Res[] = [];
    for (let i = 0; i < 10 && !out.some((r) => r.status === 429); i++) out.push(await get(i));
    return out;
  }

  it('an address past its failures is answered 429 with Retry-After; a cached token from it is still served', async () => {
    const srv = await startServer(ctx.tdb.db, LIMITS);
    try {
      // The admin key, used until the cache holds it (the cache is used once its LISTEN is in place).
      await waitFor(async () => (await srv.api.get('/crm/customers')).status === 200 && srv.services.auth.cached(ADMIN_KEY) !== undefined, 'the admin key cached');
      const seen = await failUntilLimited(() => srv.api.withToken(BAD).get('/crm/customers'));
      const statuses = seen.map((r) => r.status);
      assert.deepEqual(statuses.slice(0, 3), [401, 401, 401], 'the burst of failures is answered as usual');
      const limited = seen.at(-1)!;
      assert.equal(limited.status, 429, `never limited: ${statuses}`);
      assert.deepEqual(statuses.filter((x) => x !== 401 && x !== 429), []);
      assert.deepEqual(errorCodes(limited), ['RateLimited']);
      assert.match(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
      // Signed-in clients are not held up: the cached admin key is served at once.
      assert.equal((await srv.api.get('/crm/customers')).status, 200);
    } finally {
      await srv.close();
    }
  });

  it('a concurrent burst of bad tokens is limited too: a lookup in flight counts until it settles', async () => {
    const srv = await startServer(ctx.tdb.db, LIMITS);
    try {
      // 30 at once: before, each checked the limit before any had failed, so every one was looked up and answered 401.
      const started = performance.now();
      const seen = await Promise.all(Array.from({ length: 30 }, () => srv.api.withToken(BAD).get('/crm/customers')));
      const refilled = Math.ceil((performance.now() - started) / 1000); // at most one token a second comes back
      const statuses = seen.map((r) => r.status);
      assert.deepEqual(statuses.filter((x) => x !== 401 && x !== 429), []);
      const lookedUp = statuses.filter((x) => x === 401).length;
      assert.ok(lookedUp >= 1 && lookedUp <= 3 + refilled, `${lookedUp} of 30 looked up (burst 3, ${refilled} s): ${statuses}`);
    } finally {
      await srv.close();
    }
  });

  it('without BULB_TRUST_PROXY, X-Forwarded-For is not the client: a new value does not escape the limit', async () => {
    const srv = await startServer(ctx.tdb.db, LIMITS);
    try {
      const seen = await failUntilLimited((i) => srv.api.withToken(BAD).get('/crm/customers', { 'x-forwarded-for': `198.51.100.${i + 1}` }));
      assert.equal(seen.at(-1)!.status, 429, `never limited: ${seen.map((r) => r.status)}`);
    } finally {
      await srv.close();
    }
  });

  it('behind a trusted proxy each client address has its own failures', async () => {
    const srv = await startServer(ctx.tdb.db, { ...LIMITS, BULB_TRUST_PROXY: '127.0.0.1' });
    try {
      const from = (ip: string) => ({ 'x-forwarded-for': ip });
      const seen = await failUntilLimited(() => srv.api.withToken(BAD).get('/crm/customers', from('203.0.113.7')));
      assert.equal(seen.at(-1)!.status, 429, `never limited: ${seen.map((r) => r.status)}`);
      const other = await srv.api.withToken(BAD).get('/crm/customers', from('203.0.113.8'));
      assert.equal(other.status, 401, 'another client behind the same proxy is answered as usual');
      assert.equal((await srv.api.withToken(BAD).get('/crm/customers', from('203.0.113.7'))).status, 429);
    } finally {
      await srv.close();
    }
  });

  it('the token endpoint: bad client secrets count as failures, then 429 temporarily_unavailable', async () => {
    const srv = await startServer(ctx.tdb.db, LIMITS);
    try {
      const client = (await srv.api.post('/integrations/authClients', { name: 'c', scopes: ['read'] })).body;
      const token = (secret: string) => fetch(`${srv.url}/auth/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: secret }),
      });
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 10 && last?.status !== 429; i++) statuses.push((last = await token('wrong-secret')).status);
      assert.deepEqual(statuses.slice(0, 3), [401, 401, 401]);
      assert.equal(last!.status, 429, `never limited: ${statuses}`);
      assert.match(last!.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
      const body = await last!.json();
      assert.equal(body.error, 'temporarily_unavailable');
      assert.deepEqual(body.errors.map((e: any) => e.errorCode), ['RateLimited']);
    } finally {
      await srv.close();
    }
  });
});
