// GET /crm/customers/export (SPEC §12): NDJSON of the Customer shape, filters, gzip, one snapshot while
// writes go on, the transaction released when the client goes away, and "export" as an id before 2026-11.
import assert from 'node:assert/strict';
import http from 'node:http';
import zlib from 'node:zlib';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY, errorCodes } from '../helpers/server.ts';
import { exportsInProgress, MAX_EMBEDDED_EXPORTS, MAX_EXPORTS } from '../../src/crm/customers/export-stream.ts';

/** A raw GET that gives the response as a stream (fetch would decode gzip itself). */
function open(url: string, headers: Record<string, string> = {}): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${ADMIN_KEY}`, ...headers } }, (res) => resolve({ req, res }));
    req.on('error', reject);
  });
}

async function readAll(res: http.IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of res) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

const lines = (buf: Buffer) => buf.toString('utf8').split('\n').filter((l, i, a) => l !== '' || i < a.length - 1).map((l) => JSON.parse(l));

async function waitUntil(cond: () => boolean | Promise<boolean>, what: string) {
  for (let i = 0; i < 600; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const PAD = 'x'.repeat(400);
/** n customers named big-<i>, written by SQL (fast), with a long firstName so that the export is several MB. */
async function bulkInsert(db: { query: (s: string, p?: unknown[]) => Promise<unknown> }, prefix: string, n: number) {
  await db.query(
    `INSERT INTO customers (external_id, first_name, emails, phones, addresses, social_profiles, email_keys)
     SELECT $1 || g, $2, '[{"email":"a@b.co","type":"home","isPrimary":true}]', '[]', '[]', '[]', ARRAY['a@b.co']
       FROM generate_series(1, $3::int) g`,
    [prefix, PAD, n],
  );
}

await describeEachDb('customers export', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const url = (q = '') => `${ctx.srv.url}/api/2026-11/crm/customers/export${q}`;
  let big = false;
  /** 30,000 customers (~17 MB of NDJSON): more than socket buffers hold, so a paused client holds the export. */
  const ensureBig = async () => {
    if (!big) await bulkInsert(ctx.tdb.db, 'big-', 30_000);
    big = true;
  };

  it('streams every matching customer as NDJSON, each line the Customer shape of GET', async () => {
    const a = await api().post('/crm/customers', { externalId: 'x-1', firstName: 'Ann\nLine', emails: [{ email: 'ann@example.com', type: 'home', isPrimary: true }], phones: [{ number: '+331', type: 'mobile', isPrimary: true }], addresses: [{ address1: '1 rue "Q"', city: 'Paris', countryCode: 'FR', isPrimary: true }], socialProfiles: [{ network: 'ig', handle: 'ann' }], loyaltyTier: 'gold' });
    const b = await api().post('/crm/customers', { externalId: 'x-2', lastName: 'Bé\\' });
    await api().post('/crm/customers/x-1/merge', { mergeWithCustomerIds: ['x-2'] });
    const r = await open(url());
    assert.equal(r.res.statusCode, 200);
    assert.match(String(r.res.headers['content-type']), /^application\/x-ndjson/);
    assert.equal(r.res.headers['content-encoding'], undefined);
    const body = await readAll(r.res);
    assert.ok(body.toString().endsWith('\n'));
    const got = lines(body);
    assert.deepEqual(got.map((c) => c.externalId), ['x-1'], 'default: active customers');
    assert.deepEqual(got[0], (await api().get(`/crm/customers/${a.body.uuid}`)).body);
    assert.deepEqual(Object.keys(got[0]), Object.keys((await api().get(`/crm/customers/${a.body.uuid}`)).body), 'keys in the order of GET');
    const all = lines(await readAll((await open(url('?status=all'))).res));
    assert.deepEqual(all.map((c) => c.externalId), ['x-1', 'x-2']);
    assert.deepEqual(all[1], (await api().get(`/crm/customers/${b.body.uuid}`)).body, 'a merged-away customer with status and mergedInto');
    assert.equal(all[1].mergedInto.externalId, 'x-1');
    const disabled = lines(await readAll((await open(url('?status=disabled'))).res));
    assert.deepEqual(disabled.map((c) => c.externalId), ['x-2']);
    const future = await readAll((await open(url(`?updatedSince=${encodeURIComponent('2999-01-01T00:00:00Z')}`))).res);
    assert.equal(future.length, 0, 'nothing matches: an empty body');
    const since = lines(await readAll((await open(url(`?status=all&updatedSince=${encodeURIComponent(all[0].updatedAt)}`))).res));
    assert.deepEqual(since.map((c) => c.externalId), all.filter((c) => c.updatedAt >= all[0].updatedAt).map((c) => c.externalId));
  });

  // docs/tulip-customers.md "Key order": the keys inside the lists come in jsonb's order (shorter first, then bytewise)
  // on GET, list and export alike (the docs said the schemas' order; rebuilding them in the export's SQL cost 3.5×).
  it('keys inside emails, phones, addresses, social profiles and attributes come in one order on GET, list and export: jsonb\'s', async () => {
    assert.equal((await api().post('/crm/customerAttributes', { externalId: 'ko-attr' })).status, 201);
    const made = await api().post('/crm/customers', {
      externalId: 'ko-1', emails: [{ email: 'ko@example.com', type: 'home', isPrimary: true }], phones: [{ number: '+33123456789', type: 'mobile', isPrimary: false }],
      addresses: [{ address1: '1 Main St', city: 'Paris', countryCode: 'FR', type: 'home', isPrimary: true }], socialProfiles: [{ network: 'ig', handle: 'ko' }],
      attributes: [{ attributeExternalId: 'ko-attr', value: 'v', languageExternalId: 'fr' }],
    });
    assert.equal(made.status, 201, made.text);
    const jsonbOrder = (keys: string[]) => [...keys].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
    const orders = (c: any) => Object.fromEntries(['emails', 'phones', 'addresses', 'socialProfiles', 'attributes'].map((k) => [k, Object.keys(c[k][0])]));
    const get = orders((await api().get('/crm/customers/ko-1')).body);
    const list = orders((await api().get('/crm/customers?externalId=ko-1')).body.data[0]);
    const exported = orders(lines(await readAll((await open(url())).res)).find((c) => c.externalId === 'ko-1'));
    assert.deepEqual(list, get, 'list as GET');
    assert.deepEqual(exported, get, 'export as GET');
    for (const [k, keys] of Object.entries(get)) assert.deepEqual(keys, jsonbOrder(keys), k);
    assert.deepEqual(get.addresses.slice(0, 5), ['city', 'type', 'uuid', 'phone', 'address1'], 'as the docs spell it');
    assert.deepEqual([get.emails, get.attributes], [['type', 'email', 'isPrimary'], ['value', 'languageExternalId', 'attributeExternalId']]);
  });

  it('gzips when Accept-Encoding allows it, and only then', async () => {
    await bulkInsert(ctx.tdb.db, 'gz-', 500);
    const plain = await readAll((await open(url('?status=all'))).res);
    const r = await open(url('?status=all'), { 'accept-encoding': 'br;q=1, gzip;q=0.5' });
    assert.equal(r.res.headers['content-encoding'], 'gzip');
    assert.match(String(r.res.headers.vary), /accept-encoding/i);
    const zipped = await readAll(r.res);
    assert.ok(zipped.length < plain.length / 4, 'compressed');
    assert.deepEqual(zlib.gunzipSync(zipped), plain);
    const head = await fetch(url('?status=all'), { method: 'HEAD', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    assert.equal(head.status, 200);
    assert.match(String(head.headers.get('content-type')), /^application\/x-ndjson/);
    await waitUntil(() => exportsInProgress() === 0, 'HEAD to end its export at once');
    for (const ae of ['identity', 'gzip;q=0', 'br', '*;q=0']) {
      const n = await open(url('?status=all'), { 'accept-encoding': ae });
      assert.equal(n.res.headers['content-encoding'], undefined, ae);
      assert.equal((await readAll(n.res)).length, plain.length, ae);
    }
  });

  it('reads one snapshot: a transaction committed during the export does not show, not even half', async () => {
    await ensureBig();
    const ids = (await ctx.tdb.db.query<{ first: string; last: string; n: string }>(
      `SELECT min(external_id) FILTER (WHERE id = (SELECT min(id) FROM customers)) AS first, (SELECT external_id FROM customers ORDER BY id DESC LIMIT 1) AS last, count(*) AS n FROM customers`,
    )).rows[0];
    const r = await open(url('?status=all'));
    r.res.pause();
    assert.equal(exportsInProgress(), 1, 'the export is under way (paused by back-pressure)');
    // One transaction changing the first and the last customer and adding one; on PGlite it waits for the export.
    const write = ctx.tdb.db.transaction(async (tx) => {
      await tx.query(`UPDATE customers SET first_name = 'CHANGED', updated_at = clock_timestamp() WHERE external_id = ANY($1::text[])`, [[ids.first, ids.last]]);
      await tx.query(`INSERT INTO customers (external_id, emails, phones, addresses, social_profiles) VALUES ('snap-new', '[]', '[]', '[]', '[]')`);
    });
    if (ctx.backend === 'pg') await write;
    const got = lines(await readAll(r.res));
    await write;
    assert.equal(got.length, Number(ids.n));
    assert.ok(!got.some((c) => c.firstName === 'CHANGED' || c.externalId === 'snap-new'), 'nothing of the concurrent transaction');
    assert.equal(new Set(got.map((c) => c.uuid)).size, got.length);
    const after = lines(await readAll((await open(url('?status=all'))).res));
    assert.equal(after.filter((c) => c.firstName === 'CHANGED').length, 2, 'the next export sees both changes');
    assert.ok(after.some((c) => c.externalId === 'snap-new'));
  });

  it('a client that goes away mid-stream ends the transaction and gives the connection back', async () => {
    await ensureBig();
    for (const gzip of [false, true]) {
      const r = await open(url('?status=all'), gzip ? { 'accept-encoding': 'gzip' } : {});
      await new Promise((resolve) => r.res.once('data', resolve).once('end', resolve));
      r.res.pause();
      assert.equal(exportsInProgress(), 1, 'under way');
      if (ctx.backend === 'pg') {
        const open = await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'bulb-export'`);
        assert.equal((open.rows[0] as any).n, 1, 'the export has its connection');
      }
      r.req.destroy();
      await waitUntil(() => exportsInProgress() === 0, 'the export to end');
      if (ctx.backend === 'pg') {
        await waitUntil(async () => ((await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND (state LIKE 'idle in transaction%' OR application_name = 'bulb-export')`)).rows[0] as any).n === 0, 'no transaction left open');
      }
      // The database answers (on PGlite, a transaction left open would block this forever).
      const c = await api().post('/crm/customers', { externalId: `after-disconnect-${gzip}` });
      assert.equal(c.status, 201);
    }
  });

  if (ctx.backend === 'pg') {
    it(`runs at most ${MAX_EXPORTS} exports at once per process (429 RateLimited with Retry-After beyond), PostgreSQL`, async () => {
      await ensureBig();
      const held = [];
      for (let i = 0; i < MAX_EXPORTS; i++) {
        const r = await open(url('?status=all'));
        assert.equal(r.res.statusCode, 200);
        r.res.pause();
        held.push(r);
      }
      const over = await api().get('/crm/customers/export?status=all');
      assert.equal(over.status, 429);
      assert.deepEqual(errorCodes(over), ['RateLimited']);
      assert.equal(over.headers.get('retry-after'), '10');
      for (const r of held) r.req.destroy();
      await waitUntil(() => exportsInProgress() === 0, 'the exports to end');
      const again = await open(url('?updatedSince=2999-01-01T00:00:00Z'));
      assert.equal(again.res.statusCode, 200);
      await readAll(again.res);
    });
  }

  if (ctx.backend === 'pglite') {
    it(`runs at most ${MAX_EMBEDDED_EXPORTS} export at once on the embedded database (its one session): another is 429 with Retry-After`, async () => {
      await ensureBig();
      const held = await open(url('?status=all'));
      assert.equal(held.res.statusCode, 200);
      held.res.pause();
      const over = await api().get('/crm/customers/export?status=all');
      assert.equal(over.status, 429, over.text.slice(0, 200));
      assert.deepEqual(errorCodes(over), ['RateLimited']);
      assert.equal(over.headers.get('retry-after'), '10');
      held.req.destroy();
      await waitUntil(() => exportsInProgress() === 0, 'the export to end');
      const again = await open(url('?updatedSince=2999-01-01T00:00:00Z'));
      assert.equal(again.res.statusCode, 200);
      await readAll(again.res);
    });
  }

  it('answers 400 for bad filters, needs read scope, and is not in versions before 2026-11 (there "export" is a customer id)', async () => {
    for (const bad of ['status=gone', 'updatedSince=yesterday', 'other=1']) {
      const r = await api().get(`/crm/customers/export?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
    }
    const k = await ctx.srv.api.post('/integrations/apiKeys', { name: 'reader', scopes: ['read'] });
    const asReader = await open(url('?updatedSince=2999-01-01T00:00:00Z'), { authorization: `Bearer ${k.body.key}` });
    assert.equal(asReader.res.statusCode, 200);
    assert.equal((await readAll(asReader.res)).length, 0);
    assert.equal((await api().withToken(undefined).get('/crm/customers/export')).status, 401);
    const old = ctx.srv.api.withVersion('2025-04');
    // GET …/export before 2026-11 is the 2026-11 route's path: 404 EndpointNotInVersion (until 2026-11-29 it read a
    // customer "export", test/http/versions.test.ts).
    const before = await old.get('/crm/customers/export');
    assert.deepEqual([before.status, before.body.errors[0].errorCode], [404, 'EndpointNotInVersion']);
    // "export" is refused as an externalId (a route's name: docs/tulip-customers.md); one stored before keeps it.
    const refused = await old.put('/crm/customers/export', { firstName: 'Named export' });
    assert.deepEqual([refused.status, refused.body.errors?.[0].moreInfo], [400, 'externalId'], refused.text);
    const made = await old.put('/crm/customers/named-export', { firstName: 'Named export' });
    assert.equal(made.status, 201);
    await ctx.tdb.db.query(`UPDATE customers SET external_id = 'export' WHERE uuid = $1`, [made.body.uuid]);
    assert.equal((await old.get(`/crm/customers/${made.body.uuid}`)).body.externalId, 'export', 'read by uuid');
    assert.equal((await api().patch('/crm/customers/export', { lastName: 'Y' })).status, 200, '2026-11: other methods still reach the customer');
    assert.equal((await api().get(`/crm/customers/${made.body.uuid}`)).body.lastName, 'Y');
  });
});
