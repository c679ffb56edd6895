// A broker connection through BULB_WEBHOOK_PROXY (docs/destinations.md): the broker clients (amqplib, nats) dial a host
// and port themselves and take no socket, so the publisher gives them a loopback listener whose one connection is
// tunnelled through the proxy (CONNECT to the address the guard checked: proxy.ts's connector, as HTTP deliveries use)
// and piped both ways. The tunnel's failure (the proxy refused CONNECT, closed, or did not answer) is kept for the
// publisher to report: the client itself only sees its connection closed.
import net from 'node:net';
import type { buildConnector } from 'undici';
import { urlHost } from '../address.ts';
import { proxyConnector } from '../proxy.ts';

export interface Tunnel {
  /** The loopback port the broker client dials. */
  port: number;
  /** Why the tunnel could not be made, once it failed. */
  failure: (Error & { code?: string }) | undefined;
  /** While the proxy has not yet answered CONNECT (or not been reached): the target asked for, "<ip>:<port>". */
  waiting: string | undefined;
  close(): void;
}

export async function openTunnel(proxy: URL, address: string, port: number, opts: { allowPrivate: boolean; timeoutMs: number }): Promise<Tunnel> {
  // Closing the tunnel ends its CONNECT still under way: the socket to a proxy that never answers was otherwise kept
  // until the connector's own deadline, a whole BULB_WEBHOOK_TIMEOUT_MS after a worker's stop (found 2026-11-30).
  const closed = new AbortController();
  const connector = proxyConnector(proxy, { allowPrivate: opts.allowPrivate, timeoutMs: opts.timeoutMs, signal: closed.signal });
  const sockets = new Set<net.Socket>();
  const server = net.createServer((local) => {
    server.close(); // one connection: the publisher's
    sockets.add(local);
    local.on('error', () => {});
    local.pause();
    const target = { hostname: urlHost(address), host: address, port: String(port), protocol: 'http:' } as buildConnector.Options;
    t.waiting = `${urlHost(address)}:${port}`;
    connector(target, (err, remote) => {
      t.waiting = undefined;
      if (err || !remote) {
        if (!closed.signal.aborted) t.failure = err ?? new Error('no tunnel through the proxy');
        local.destroy();
        return;
      }
      const r = remote as net.Socket;
      sockets.add(r);
      r.on('error', () => {});
      r.on('close', () => local.destroy());
      local.on('close', () => r.destroy());
      local.pipe(r).pipe(local);
      local.resume();
    });
  });
  const t: Tunnel = {
    port: 0,
    failure: undefined,
    waiting: undefined,
    close: () => {
      closed.abort();
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
  t.port = (server.address() as net.AddressInfo).port;
  return t;
}
