// Test receivers: real node:http servers on loopback that record every request (raw bytes, headers,
// arrival time) and answer as told; plus a polling helper (no timing assertions, only generous waits).
//
// Every received body that carries an `eventType` is checked against the event catalog's schema of that
// type (test/helpers/event-check.ts). A body that does not match is a violation, and violations fail
// loudly: `close()` throws listing them (every test file closes its receivers in `after`), and, for a
// receiver a file never closes, the test process exits with code 1 printing them (node --test then
// reports the file as failed). A test that sends a wrong body on purpose takes it back with takeViolations().
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventBodyProblems } from '../helpers/event-check.ts';

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
  /** Received bodies that do not match their event type's schema (see the header comment). */
  violations: Violation[];
  /** Returns this receiver's violations and forgets them (for a test that sends a wrong body on purpose). */
  takeViolations(): Violation[];
  /** Responds to the next requests with this behaviour (default: 200 {"ok":true}). */
  behave(b: Behaviour): void;
  close(): Promise<void>;
}

export interface Violation {
  url: string;
  problems: string[];
  body: string;
}

/** Violations of every receiver of this process not yet taken back; checked once more at exit. */
const unreported = new Set<Violation>();
process.on('exit', () => {
  if (unreported.size === 0) return;
  process.stderr.write(`\nwebhook bodies that do not match the event catalog (test/webhooks/receiver.ts):\n${[...unreported].map(describe).join('\n')}\n`);
  process.exitCode = 1;
});

function describe(v: Violation): string {
  return `  ${v.url}: ${v.problems.join('; ')}\n    body: ${v.body.slice(0, 500)}`;
}

export const ok: Behaviour = (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
export const status = (code: number, body = ''): Behaviour => (_q, res) => res.writeHead(code).end(body);

export async function startReceiver(behaviour: Behaviour = ok, path = '/hook'): Promise<Receiver> {
  let b = behaviour;
  const received: Received[] = [];
  const violations: Violation[] = [];
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
      if (body && typeof body === 'object' && 'eventType' in body) {
        const problems = eventBodyProblems(body);
        if (problems.length) {
          const v = { url: req.url!, problems, body: raw.toString('utf8') };
          violations.push(v);
          unreported.add(v);
        }
      }
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
    violations,
    takeViolations: () => {
      const taken = violations.splice(0);
      for (const v of taken) unreported.delete(v);
      return taken;
    },
    behave: (nb) => (b = nb),
    close: async () => {
      await new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      });
      if (violations.length) {
        for (const v of violations) unreported.delete(v);
        throw new Error(`webhook bodies that do not match the event catalog:\n${violations.map(describe).join('\n')}`);
      }
    },
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
