// The CONNECT proxy's answer as an attempt records it (BULB_WEBHOOK_PROXY, src/webhooks/proxy.ts): its status line goes
// into the attempt's error text, which admins read in the logs API, so the proxy's own credentials are redacted from it
// (found by probing, 2026-11-29: a proxy naming the credentials it refused showed them in the logs).
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { it } from 'node:test';
import { parseProxyUrl, proxyConnector } from '../../src/webhooks/proxy.ts';
import { classify } from '../../src/webhooks/sender.ts';

it('a proxy that refuses CONNECT is a failed tunnel whose message keeps its status line but not the proxy\'s credentials', async () => {
  // A proxy answering 407 with the Proxy-Authorization it received, and that header decoded, in its reason phrase.
  const server = net.createServer((s) => {
    let head = '';
    s.on('data', (b) => {
      head += b.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      const auth = /proxy-authorization: ([^\r\n]*)/i.exec(head)?.[1] ?? '';
      const decoded = Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString('utf8');
      s.end(`HTTP/1.1 407 denied for ${auth} (${decoded})\r\n\r\n`);
    });
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const proxy = parseProxyUrl(`http://puser:PROXYPASS_s%40cret@127.0.0.1:${(server.address() as AddressInfo).port}`);
    const connect = proxyConnector(proxy, { allowPrivate: false, timeoutMs: 5000 });
    const err = await new Promise<Error>((resolve) =>
      connect({ hostname: '1.1.1.2', protocol: 'https:', port: '443' } as any, ((e: Error | null) => resolve(e as Error)) as any));
    assert.match(err.message, /^the proxy refused CONNECT 1\.1\.1\.2:443: 407 denied for /);
    assert.ok(!/PROXYPASS|cHVzZXI6UFJPWFlQQVNT/i.test(err.message), err.message);
    assert.match(err.message, /\[redacted\]/);
  } finally {
    server.close();
  }
});

it('a proxy that cannot be reached is named as the proxy in the failure, its socket code kept (the errorCode is CONNECTION)', async () => {
  // A port nothing listens on: the error said only "connect ECONNREFUSED 127.0.0.1:<port>" (a probe, 2026-11-29).
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const connect = proxyConnector(parseProxyUrl(`http://127.0.0.1:${port}`), { allowPrivate: false, timeoutMs: 5000 });
  const err = await new Promise<Error>((resolve) =>
    connect({ hostname: '1.1.1.2', protocol: 'https:', port: '443' } as any, ((e: Error | null) => resolve(e as Error)) as any));
  assert.match(err.message, new RegExp(`^could not reach the proxy \\(BULB_WEBHOOK_PROXY\\): connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`));
  assert.equal((err as NodeJS.ErrnoException).code, 'ECONNREFUSED');
  assert.equal(classify(err, false), 'CONNECTION');
});
