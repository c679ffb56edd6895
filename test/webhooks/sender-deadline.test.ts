// One deadline for the whole exchange (SPEC §7), the connection included: an attempt whose connection is not up by
// its deadline (a TLS handshake the receiver never answers) ends then as TIMEOUT, and one a shutdown aborts before it
// has a socket ends then as CONNECTION. Both waited for the pool's connect timeout (found by probing, 2026-11-29:
// a stalled handshake overran a 5 s deadline by 0.5–0.8 s; here the pool's connect timeout is a minute).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Abort, Sender } from '../../src/webhooks/sender.ts';

describe('sender: the deadline covers the connection', () => {
  let server: net.Server;
  let port = 0;
  const sockets = new Set<net.Socket>();
  before(async () => {
    // Accepts TCP and never answers: a TLS ClientHello is left unanswered.
    server = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const sender = new Sender({ timeoutMs: 60_000, allowPrivate: true });

  it('a handshake unanswered at the exchange\'s deadline is a TIMEOUT then, not at the pool\'s connect timeout', { timeout: 20_000 }, async () => {
    const pool = sender.pool(1);
    try {
      const r = await sender.send(pool, `https://127.0.0.1:${port}/hook`, { 'content-type': 'application/json' }, '{}', undefined, false, 300);
      assert.equal(r.ok, false);
      assert.equal(r.errorCode, 'TIMEOUT', JSON.stringify(r));
      assert.equal(r.statusCode, null);
      assert.match(r.responseBody ?? '', /no complete response within 300 ms/);
    } finally {
      await pool.destroy();
    }
  });

  it('a shutdown before the connection is up ends the attempt then, as CONNECTION', { timeout: 20_000 }, async () => {
    const pool = sender.pool(1);
    const abort = new Abort();
    try {
      const pending = sender.send(pool, `https://127.0.0.1:${port}/hook`, {}, '{}', abort);
      setTimeout(() => abort.abort(new Error('the worker is shutting down')), 100);
      const r = await pending;
      assert.equal(r.errorCode, 'CONNECTION', JSON.stringify(r));
      assert.match(r.responseBody ?? '', /shutting down/);
    } finally {
      await pool.destroy();
    }
  });
});
