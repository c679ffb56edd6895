// The isolation scenario of SPEC §11, shared by test/webhooks/isolation.test.ts and bench/webhooks.ts:
// on PostgreSQL, two worker processes deliver for 50 hanging subscriptions, 20 that answer 500 after 5 s,
// 10 hanging ones on the same host:port as a healthy one, and the healthy one. Healthy events are committed
// one per transaction while the crowd keeps failing; the figure is each healthy delivery's delay from its
// commit (when it is due) to its arrival at the receiver. `root` may name another checkout of Bulb (the
// bench measures the code before the lanes that way).
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo, Socket } from 'node:net';
import type { Db } from '../src/db/db.ts';
import type { NewEvent } from '../src/events/emit.ts';
import { newSigningSecret } from '../src/webhooks/signing.ts';

/** The checkout's own migrate, fan-out and subscription insert (its schema may predate this one's). */
export async function codeOf(root: string) {
  const { migrate } = await import(path.join(root, 'src/db/migrate.ts'));
  const { emitEvents } = await import(path.join(root, 'src/events/emit.ts'));
  const { insertSubscription } = await import(path.join(root, 'src/webhooks/store.ts'));
  return { migrate, emitEvents, insertSubscription } as {
    migrate: (db: Db) => Promise<unknown>;
    emitEvents: (tx: unknown, evs: NewEvent[]) => Promise<string[]>;
    insertSubscription: (db: Db, w: Record<string, unknown>, secret: string) => Promise<unknown>;
  };
}

export const ISOLATION_SHAPE = '50 hanging + 20 answering 500 after 5 s + 10 hanging on the healthy one\'s host:port, 2 worker processes, 20 s deadline';

interface Server {
  url: string;
  close(): void;
}

/** A loopback server answering by path; every socket is destroyed on close (hanging requests included). */
async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks)));
  });
  server.keepAliveTimeout = 30_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

export interface IsolationResult {
  /** Healthy delivery delays (ms), sorted; Infinity for one that never arrived. */
  delays: number[];
  /** The same in commit order. */
  timeline: number[];
  crowdRequests: number;
  /** How many of the 80 failing subscriptions were attempted at all. */
  crowdSeen: number;
  workerOutput: string;
}

const ev = (eventType: 'customerCreate' | 'customerUpdate'): NewEvent => ({
  eventType, resourceType: 'Customer', resource: { uuid: crypto.randomUUID(), externalId: null }, source: 'TULIP_API',
});

function spawnWorker(root: string, env: Record<string, string>): { proc: ChildProcess; ready: Promise<void>; output: () => string } {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    cwd: root, env: { ...process.env, BULB_LOG_LEVEL: 'silent', BULB_ROLE: 'worker', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`worker did not start: ${out}`)), 60_000);
    const on = (d: Buffer) => {
      out += d;
      if (/worker running/.test(out)) {
        clearTimeout(t);
        resolve();
      }
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    proc.on('exit', () => reject(new Error(`worker exited: ${out}`)));
  });
  return { proc, ready, output: () => out };
}

/**
 * Runs the scenario on an empty PostgreSQL database migrated by `root`'s code (`db`, reachable by the workers at `url`).
 * `healthyEvents` are committed one per transaction every `gapMs`.
 */
export async function runIsolation(db: Db, url: string, opts: { root?: string; healthyEvents?: number; gapMs?: number; env?: Record<string, string> } = {}): Promise<IsolationResult> {
  const root = opts.root ?? path.resolve(import.meta.dirname, '..');
  const { emitEvents, insertSubscription } = await codeOf(root);
  const n = opts.healthyEvents ?? 150;
  const gapMs = opts.gapMs ?? 40;
  let crowdRequests = 0;
  const seen = new Set<string>();
  const crowd = (where: string, req: http.IncomingMessage) => {
    crowdRequests++;
    seen.add(`${where}${req.url}`);
  };
  const arrived = new Map<string, number>();
  const pending = new Set<NodeJS.Timeout>();
  const hangers = await Promise.all(Array.from({ length: 5 }, (_, i) => serve((req) => crowd(`h${i}`, req))));
  const failer = await serve((req, res) => {
    crowd('f', req);
    const t = setTimeout(() => { pending.delete(t); res.writeHead(500).end('down'); }, 5000);
    pending.add(t);
  });
  // The healthy endpoint shares host:port (and so, in the old design, the connection pool) with 10 hanging ones.
  const shared = await serve((req, res, body) => {
    if (req.url !== '/ok') return crowd('s', req);
    arrived.set(JSON.parse(body.toString()).uuid, performance.now());
    res.writeHead(200).end();
  });
  const servers = [...hangers, failer, shared];
  const healthyUrl = `${shared.url}/ok`;
  const workers: ReturnType<typeof spawnWorker>[] = [];
  try {
    // eventType for a checkout before SPEC §10.2, eventTypes after.
    const sub = (u: string, eventType: string) => insertSubscription(db, {
      url: u, eventType, eventTypes: [eventType], isActive: true, authMethod: 'NONE', bearerToken: null, basicUsername: null, basicPassword: null, webhookVersion: '2022-08',
    }, newSigningSecret());
    for (let i = 0; i < 50; i++) await sub(`${hangers[i % 5].url}/hang/${i}`, 'customerUpdate');
    for (let i = 0; i < 20; i++) await sub(`${failer.url}/fail/${i}`, 'customerUpdate');
    for (let i = 0; i < 10; i++) await sub(`${shared.url}/hang/${i}`, 'customerUpdate');
    await sub(healthyUrl, 'customerCreate');
    const env = {
      DATABASE_URL: url, BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '20000', BULB_WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1,1,1',
      ...opts.env,
    };
    workers.push(spawnWorker(root, env), spawnWorker(root, env));
    await Promise.all(workers.map((w) => w.ready));
    // The crowd: 30 events for each of the 80 failing subscriptions, more every second while healthy events flow.
    await db.transaction((tx) => emitEvents(tx, Array.from({ length: 30 }, () => ev('customerUpdate'))));
    const until = Date.now() + 15_000;
    while (seen.size < 80 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const committed = new Map<string, number>();
    let feeding = true;
    const feed = (async () => {
      while (feeding) {
        await db.transaction((tx) => emitEvents(tx, Array.from({ length: 3 }, () => ev('customerUpdate'))));
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const wait = t0 + i * gapMs - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const [uuid] = await db.transaction((tx) => emitEvents(tx, [ev('customerCreate')]));
      committed.set(uuid, performance.now());
    }
    const end = Date.now() + 40_000;
    while ([...committed.keys()].some((u) => !arrived.has(u)) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    feeding = false;
    await feed;
    // A NOTIFY can reach a worker before the commit acknowledgement reaches us: clamp at 0.
    const delays = [...committed].map(([u, c]) => Math.max(0, (arrived.get(u) ?? Infinity) - c)).sort((a, b) => a - b);
    const timeline = [...committed].map(([u, c]) => Math.round((arrived.get(u) ?? Infinity) - c));
    return { delays, timeline, crowdRequests, crowdSeen: seen.size, workerOutput: workers.map((w) => w.output()).join('\n') };
  } finally {
    for (const t of pending) clearTimeout(t);
    for (const s of servers) s.close();
    for (const w of workers) w.proc.kill('SIGTERM');
    await Promise.all(workers.map((w) => new Promise((r) => (w.proc.exitCode !== null ? r(null) : w.proc.on('exit', r)))));
  }
}
