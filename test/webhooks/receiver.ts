// Test receivers: real node:http servers on loopback that record every request (raw bytes, headers,
// arrival time) and answer as told; plus a polling helper (no timing assertions, only generous waits).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  body: any;
  at: number; // performance.now() on arrival of the full body
}

export type Behaviour = (req: http.IncomingMessage, res: http.ServerResponse, r: Received) => void;

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Responds to the next requests with this behaviour (default: 200 {"ok":true}). */
  behave(b: Behaviour): void;
  close(): Promise<void>;
}

export const ok: Behaviour = (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
export const status = (code: number, body = ''): Behaviour => (_q, res) => res.writeHead(code).end(body);

export async function startReceiver(behaviour: Behaviour = ok, path = '/hook'): Promise<Receiver> {
  let b = behaviour;
  const received: Received[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: any;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = undefined;
      }
      const r: Received = { method: req.method!, url: req.url!, headers: req.headers, raw, body, at: performance.now() };
      received.push(r);
      b(req, res, r);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    received,
    behave: (nb) => (b = nb),
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** Polls fn until it returns a truthy value; fails after timeoutMs with the last value in the message. */
export async function waitFor<T>(fn: () => Promise<T> | T, what: string, timeoutMs = 20_000, everyMs = 25): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await fn();
    if (last) return last as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
