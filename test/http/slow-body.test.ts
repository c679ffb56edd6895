// A request body that stops arriving ends its connection after BULB_IMPORT_IDLE_MS: Fastify sets no request deadline,
// and a client (no credential needed at the token endpoint) held sockets for ever with bodies it never finished (a
// probe, 2026-11-29: 300 sockets still open after 90 s). A body that keeps coming, slowly, is served.
import assert from 'node:assert/strict';
import net from 'node:net';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY } from '../helpers/server.ts';

/** Opens a socket, writes `head` and the start of a body, and resolves how it ended: 'closed' or the first answer. */
function stalled(url: string, head: string, waitMs: number): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = net.connect(Number(u.port), u.hostname, () => s.write(head));
    let answer = '';
    const timer = setTimeout(() => {
      resolve(`still open after ${waitMs} ms`);
      s.destroy();
    }, waitMs);
    s.on('data', (b) => (answer += b.toString('latin1')));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve(answer ? answer.split('\r\n')[0] : 'closed');
    });
  });
}

await describeEachDb('a request body that stops arriving', (ctx) => {
  it('ends its connection after the idle time, at the token endpoint and at an API route; a slow but steady body is served', async () => {
    const url = ctx.srv.url;
    const token = await stalled(url, 'POST /auth/oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=', 20_000);
    assert.equal(token, 'closed', 'the token endpoint');
    const api = await stalled(url, `POST /api/2026-11/crm/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"externalId":`, 20_000);
    assert.equal(api, 'closed', 'an API route');

    // Steady: a byte every 100 ms, well under the idle time each, for longer than it in all.
    const body = JSON.stringify({ externalId: 'slow-but-steady' });
    const answer = await new Promise<string>((resolve, reject) => {
      const u = new URL(url);
      const s = net.connect(Number(u.port), u.hostname, async () => {
        s.write(`POST /api/2026-11/crm/customers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
        for (const ch of body) {
          await new Promise((r) => setTimeout(r, 100));
          s.write(ch);
        }
      });
      let text = '';
      s.on('data', (b) => (text += b.toString('latin1')));
      s.on('close', () => resolve(text.split('\r\n')[0]));
      s.on('error', reject);
    });
    assert.equal(answer, 'HTTP/1.1 201 Created');
  });
}, { BULB_IMPORT_IDLE_MS: '1000' });
