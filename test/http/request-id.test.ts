// Every answer carries X-Request-Id, the id its log lines carry (reqId): the caller's X-Request-Id when it is a short
// token, else a new UUID. Until 2026-11-28 no answer carried one and the log's ids were req-1, req-2… in each process
// (found by probing): a client reporting an error could not point at its log lines.
import assert from 'node:assert/strict';
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
});
