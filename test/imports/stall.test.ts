// An upload whose client stops sending (died without closing, or stalled) is ended after BULB_IMPORT_IDLE_MS:
// the import is failed, its staged rows deleted, its database connection given back. Without it the upload, its
// connection and its COPY stayed open for good (and a backend waiting in COPY FROM STDIN holds up CREATE and DROP
// DATABASE across the cluster).
import assert from 'node:assert/strict';
import http from 'node:http';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb(
  'import uploads that stall',
  (ctx) => {
    it('an upload that sends some lines and then nothing is failed after the idle time, its staged rows deleted', { timeout: 30_000 }, async () => {
      const u = new URL(`${ctx.srv.url}/api/2026-11/crm/imports`);
      const req = http.request(u, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', authorization: `Bearer ${ctx.srv.api.token}` } });
      const ended = new Promise<string>((resolve) => {
        req.on('response', (res) => resolve(`answered ${res.statusCode}`));
        req.on('error', (e) => resolve(`closed (${(e as any).code ?? e.message})`));
      });
      for (let i = 0; i < 500; i++) req.write(JSON.stringify({ externalId: `stall-${i}` }) + '\n');
      // …and then nothing, with the connection left open.
      const how = await ended;
      assert.match(how, /closed|answered 408/);
      let last: any;
      for (let i = 0; i < 200; i++) {
        last = (await ctx.srv.api.withVersion('2026-11').get('/crm/imports?limit=1')).body.data[0];
        if (last?.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(last.status, 'failed');
      assert.match(last.error, /^upload stalled: no data for 400 ms/);
      const staged = await ctx.tdb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM import_rows WHERE import_id = (SELECT id FROM imports WHERE uuid = $1)`, [last.uuid]);
      assert.equal(staged.rows[0].n, 0);
      req.destroy();
    });

    // No request yields a 5xx (SPEC): a stall is the client's doing, answered 408 in the error shape (it was a 500).
    it('a stalled upload is answered 408 RequestTimeout naming the idle time and the failed import', { timeout: 30_000 }, async () => {
      const u = new URL(`${ctx.srv.url}/api/2026-11/crm/imports`);
      const req = http.request(u, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', 'transfer-encoding': 'chunked', authorization: `Bearer ${ctx.srv.api.token}` } });
      const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject);
      });
      req.write(JSON.stringify({ externalId: 'stalled-1' }) + '\n');
      // …and then nothing, with the connection left open.
      const r = await answer;
      req.destroy();
      assert.equal(r.status, 408, JSON.stringify(r.body));
      assert.equal(r.body.errors.length, 1);
      const [e] = r.body.errors;
      assert.equal(e.errorCode, 'RequestTimeout');
      const imp = (await ctx.srv.api.withVersion('2026-11').get('/crm/imports?limit=1')).body.data[0];
      assert.equal(imp.status, 'failed');
      assert.equal(e.message, `the upload stalled: no data for 400 ms; import ${imp.uuid} is failed (send the file again)`);
      assert.equal(e.moreInfo, `import ${imp.uuid}`);
    });

    it('an upload that keeps sending, slower than the idle time in total, is received whole', async () => {
      const u = new URL(`${ctx.srv.url}/api/2026-11/crm/imports?events=false`);
      const req = http.request(u, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', authorization: `Bearer ${ctx.srv.api.token}` } });
      const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject);
      });
      for (let i = 0; i < 10; i++) {
        req.write(JSON.stringify({ externalId: `steady-${i}` }) + '\n');
        await new Promise((r) => setTimeout(r, 100)); // 1 s in all, never 400 ms without data
      }
      req.end();
      const r = await answer;
      assert.equal(r.status, 202, JSON.stringify(r.body));
      assert.equal(r.body.rowsReceived, 10);
    });
  },
  { BULB_IMPORT_IDLE_MS: '400' },
);
