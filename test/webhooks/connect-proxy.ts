// An HTTP CONNECT proxy on loopback for the egress tests (BULB_WEBHOOK_PROXY): records each CONNECT target and pipes
// the tunnel, or, while `refuse` is set, answers 403.
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';

export async function startProxy(): Promise<{ url: string; targets: string[]; refuse: boolean; close(): Promise<void> }> {
  const targets: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((_req, res) => res.writeHead(405).end());
  const proxy = {
    url: '', targets, refuse: false,
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
  server.on('connect', (req: http.IncomingMessage, duplex: import('node:stream').Duplex, head: Buffer) => {
    const client = duplex as Socket;
    targets.push(req.url!);
    if (proxy.refuse) {
      client.end('HTTP/1.1 403 Forbidden by the test proxy\r\n\r\n');
      return;
    }
    const [host, port] = [req.url!.slice(0, req.url!.lastIndexOf(':')).replace(/^\[|\]$/g, ''), Number(req.url!.slice(req.url!.lastIndexOf(':') + 1))];
    const upstream = net.connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
