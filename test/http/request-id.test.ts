// Every answer carries X-Request-Id, the id its log lines carry (reqId): the caller's X-Request-Id when it is a short
// token, else a new UUID. Until 2026-11-28 no answer carried one and the log's ids were req-1, req-2… in each process
// (found by probing): a client reporting an error could not point at its log lines.
import assert from 'node:assert/strict';
import net from 'node:net';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { startServer } from '../helpers/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

await describeEachDb('request ids', (ctx) => {
  it('answered in X-Request-Id and logged as reqId: the caller\'s when it is a short token, else a new UUID', async () => {
    const log: string[] = [];
    const srv = await startServer(ctx.tdb.db, { BULB_LOG_LEVEL: 'info' }, { log });
    try {
      const a = await srv.api.get('/crm/customers');
      const b = await srv.api.get('/crm/customers/nobody-here');
      const [ida, idb] = [a.headers.get('x-request-id'), b.headers.get('x-request-id')];
      assert.match(ida ?? '', UUID);
      assert.match(idb ?? '', UUID);
      assert.notEqual(ida, idb);
      assert.equal(b.status, 404, 'errors carry it too');
      const given = await srv.api.get('/crm/customers', { 'x-request-id': 'lb-7f3a:42.1_x' });
      assert.equal(given.headers.get('x-request-id'), 'lb-7f3a:42.1_x');
      for (const bad of ['two words', 'x'.repeat(129), 'semi;colon']) {
        const r = await srv.api.get('/crm/customers', { 'x-request-id': bad });
        assert.match(r.headers.get('x-request-id') ?? '', UUID, `${bad.slice(0, 20)}: replaced`);
      }
      const lines = log.map((l) => JSON.parse(l));
      for (const id of [ida, idb, 'lb-7f3a:42.1_x']) {
        assert.ok(lines.some((l) => l.reqId === id && l.res?.statusCode), `the answer to ${id} is logged with its id`);
      }
    } finally {
      await srv.close();
    }
  });

  it('answers refused before routing carry it too, and are logged and counted: bad percent-encoding, an unknown Expect, no Host', async () => {
    const log: string[] = [];
    const srv = await startServer(ctx.tdb.db, { BULB_LOG_LEVEL: 'info' }, { log });
    /** One request over a raw socket (fetch would mend or refuse these), its status line and headers. */
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const sock = net.connect(Number(new URL(srv.url).port), '127.0.0.1', () => sock.write(request));
        let got = '';
        sock.on('data', (d) => (got += d));
        sock.on('end', () => resolve(got));
        sock.on('error', reject);
        setTimeout(() => sock.end(), 1500);
      });
    /** The requests answered 400 so far, whatever their route (the metric is the process's). */
    const count400 = async () =>
      ((await (await fetch(`${srv.url}/metrics`)).text()).match(/^bulb_http_request_duration_seconds_count\{[^}]*status="400"[^}]*\} \d+$/gm) ?? [])
        .reduce((a, l) => a + Number(l.split(' ').pop()), 0);
    try {
      const before400 = await count400();
      const cases = [
        ['bad-url-1', 'GET /api/2026-11/crm/%ZZ HTTP/1.1\r\nHost: x\r\nX-Request-Id: bad-url-1\r\nConnection: close\r\n\r\n'],
        ['expect-1', 'POST /api/2026-11/crm/customers HTTP/1.1\r\nHost: x\r\nX-Request-Id: expect-1\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}'],
        ['no-host-1', 'GET /api/2026-11/crm/customers HTTP/1.1\r\nX-Request-Id: no-host-1\r\nConnection: close\r\n\r\n'],
      ];
      for (const [id, request] of cases) {
        const answer = await raw(request);
        assert.match(answer, /^HTTP\/1\.1 400 /, `${id}: ${answer.slice(0, 200)}`);
        assert.match(answer, new RegExp(`\r\nx-request-id: ${id}\r\n`, 'i'), `${id}: ${answer.slice(0, 400)}`);
        assert.match(answer, /"errorCode":"InvalidParameterError"/);
      }
      await new Promise((r) => setTimeout(r, 50));
      const lines = log.map((l) => JSON.parse(l));
      for (const [id] of cases) {
        assert.equal(lines.filter((l) => l.reqId === id && l.msg === 'request completed' && l.res?.statusCode === 400).length, 1, `${id}: one completion line`);
        const incoming = lines.filter((l) => l.reqId === id && l.msg === 'incoming request');
        assert.equal(incoming.length, 1, `${id}: one incoming line`);
        assert.equal(incoming[0].req?.remoteAddress, '127.0.0.1', `${id}: the client address: ${JSON.stringify(incoming[0])}`);
      }
      const after400 = await count400();
      assert.equal(after400 - before400, cases.length, 'each counted once in bulb_http_request_duration_seconds');
    } finally {
      await srv.close();
    }
  });
});
