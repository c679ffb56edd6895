// Shared parts of the benchmark scripts: the Row type every script returns, child processes (Bulb servers,
// baseline server, webhook receiver) that are always killed, autocannon runs, RSS sampling, machine facts.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import autocannon from 'autocannon';

/** One line of BENCHMARKS.md. bench/merge.ts and bench/webhooks.ts return these too. */
export interface Row {
  what: string;
  value: number | string;
  unit: string;
  /** The same figure for the baseline measured in the same run (null: none). */
  baseline: number | string | null;
  /** value / baseline (null: not meaningful). */
  ratio: number | null;
  /** The goal and whether it is met, e.g. "≥ 0.5 × baseline: met" (free text). */
  goal: string;
  /** How to reproduce the figure. */
  command: string;
  /** Optional remark printed under the table (why a goal is missed, what was measured). */
  note?: string;
}

export const ROOT = path.resolve(import.meta.dirname, '..');
export const ADMIN_KEY = 'bench-admin-key-0123456789abcdef0123';
export const V = '2025-04';

// ---------------------------------------------------------------- arguments

export interface BenchArgs {
  quick: boolean;
  seconds?: number;
  only?: string[];
}

export function parseArgs(argv = process.argv.slice(2)): BenchArgs {
  const out: BenchArgs = { quick: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') out.quick = true;
    else if (a === '--seconds') out.seconds = Number(argv[++i]);
    else if (a.startsWith('--seconds=')) out.seconds = Number(a.slice(10));
    else if (a === '--merge-full' || a === '--write') continue; // read by bench/run.ts
    else if (a === '--only') out.only = argv[++i].split(',');
    else if (a.startsWith('--only=')) out.only = a.slice(7).split(',');
    else throw new Error(`unknown argument ${a} (use --quick, --seconds N, --only a,b)`);
  }
  if (out.seconds !== undefined && !(out.seconds > 0 && out.seconds <= 3600)) throw new Error('--seconds must be in 1..3600');
  return out;
}

// ---------------------------------------------------------------- child processes

const children = new Set<ChildProcess>();

function killAll() {
  for (const c of children) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** The port it printed (servers), or 0. */
  port: number;
  url: string;
  output(): string;
  /** SIGTERM, then SIGKILL after graceMs; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
  kill(): Promise<void>;
  exited: Promise<number | null>;
}

/**
 * Starts `node [nodeArgs] --import tsx script args` and waits until its output matches `ready`
 * (the first capture group, if any, is the port).
 */
export async function spawnNode(script: string, args: string[], env: Record<string, string>, ready: RegExp, opts: { nodeArgs?: string[]; timeoutMs?: number } = {}): Promise<Child> {
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', script, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => {
    children.delete(proc);
    resolve(code);
  }));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${script} did not become ready in time:\n${out.slice(-2000)}`));
    }, opts.timeoutMs ?? 180_000);
    const onData = (d: Buffer) => {
      out = (out + d.toString()).slice(-20_000);
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] ? Number(m[1]) : 0);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before it was ready:\n${out.slice(-2000)}`));
    });
  });
  const stop = async (graceMs = 10_000) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(t);
  };
  return {
    proc,
    pid: proc.pid!,
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => out,
    stop,
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
    exited,
  };
}

export interface BulbOptions {
  databaseUrl?: string;
  role?: 'api' | 'worker' | 'all';
  port?: number;
  env?: Record<string, string>;
  /** Write a CPU profile (node --cpu-prof) into this folder when the process exits normally. */
  cpuProfDir?: string;
}

/** The secret key of every bench process on one database (SPEC §15: they share one). */
export const BENCH_SECRET_KEY = Buffer.alloc(32, 'bulb-bench-secret-key').toString('base64');

/** A Bulb server (`src/main.ts serve`) in its own process. Without databaseUrl: embedded PGlite in memory. */
export function startBulb(o: BulbOptions = {}): Promise<Child> {
  const role = o.role ?? 'all';
  const env: Record<string, string> = {
    PORT: String(o.port ?? 0),
    HOST: '127.0.0.1',
    BULB_ROLE: role,
    BULB_ADMIN_KEY: ADMIN_KEY,
    BULB_LOG_LEVEL: 'warn',
    BULB_RATE_LIMIT_PER_SEC: '10000000',
    BULB_RATE_LIMIT_BURST: '10000000',
    BULB_WEBHOOK_ALLOW_PRIVATE: 'true',
    // Every process on one database shares one secret key (SPEC §15).
    ...(o.databaseUrl ? { DATABASE_URL: o.databaseUrl, BULB_SECRET_KEY: BENCH_SECRET_KEY } : { DATABASE_URL: '', BULB_DATA_DIR: 'memory://' }),
    ...o.env,
  };
  const nodeArgs = o.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', o.cpuProfDir] : [];
  const ready = role === 'worker' ? /worker running()/ : /listening on http:\/\/[^:]+:(\d+)/;
  return spawnNode('src/main.ts', ['serve'], env, ready, { nodeArgs });
}

/** The Fastify hello-world baseline (bench/hello.ts) in its own process. */
export function startHello(): Promise<Child> {
  return spawnNode('bench/hello.ts', [], {}, /hello listening on (\d+)/);
}

/** A webhook receiver answering 200 to everything (bench/receiver.ts) in its own process. */
export function startReceiver(): Promise<Child> {
  return spawnNode('bench/receiver.ts', [], {}, /receiver listening on (\d+)/);
}

/** A free loopback port (to restart a server on the same port). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}

// ---------------------------------------------------------------- HTTP helpers

export async function api<T = any>(base: string, method: string, p: string, body?: unknown, token = ADMIN_KEY): Promise<{ status: number; body: T }> {
  const url = p.startsWith('/') && !p.startsWith('/api/') ? `${base}/api/${V}${p}` : base + p;
  const r = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await r.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: r.status, body: parsed };
}

/** Seeds `n` customers through the bulk endpoint; returns their uuids and externalIds. */
export async function seedCustomers(base: string, n: number, prefix: string): Promise<{ uuid: string; externalId: string }[]> {
  const out: { uuid: string; externalId: string }[] = [];
  for (let i = 0; i < n; i += 50) {
    const items = Array.from({ length: Math.min(50, n - i) }, (_, j) => customerBody(`${prefix}-${i + j}`));
    const r = await api(base, 'POST', '/crm/customers/bulk', items);
    if (r.status !== 200) throw new Error(`seeding failed: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    for (const x of r.body.results) {
      if (x.customer) out.push({ uuid: x.customer.uuid, externalId: x.customer.externalId });
    }
  }
  return out;
}

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'John', 'Margaret', 'Dennis', 'Radia', 'Ken', 'Hedy', 'Tim', 'Sophie', 'Niklaus'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Backus', 'Hamilton', 'Ritchie', 'Perlman', 'Thompson', 'Lamarr', 'Berners', 'Wilson', 'Wirth'];

/**
 * A realistic customer body (two emails, a phone, an address). Names, phone and postal code vary with the
 * externalId, as in a real base: identical ones would make every customer a possible duplicate of every other.
 */
export function customerBody(externalId: string) {
  let h = 2166136261;
  for (let i = 0; i < externalId.length; i++) h = Math.imul(h ^ externalId.charCodeAt(i), 16777619) >>> 0;
  return {
    externalId,
    firstName: FIRST[h % 16],
    lastName: LAST[(h >>> 4) % 16],
    emails: [
      { email: `${externalId}@example.com`, type: 'home', isPrimary: true },
      { email: `${externalId}@work.example.com`, type: 'work', isPrimary: false },
    ],
    phones: [{ number: `+1555${String(h % 10_000_000).padStart(7, '0')}`, type: 'mobile', isPrimary: true }],
    addresses: [{ address1: `${h % 997} Main St`, address2: null, city: `Springfield ${(h >>> 8) % 97}`, zoneCode: 'US-IL', postCode: String(10000 + (h % 89999)), countryCode: 'US', type: 'home', isPrimary: true }],
    loyaltyTier: 'gold',
  };
}

/**
 * Creates subscriptions for the event types at a receiver URL; returns their uuids, or undefined when the
 * subscriptions API is not there (yet).
 */
export async function subscribe(base: string, url: string, eventTypes: string[]): Promise<string[] | undefined> {
  const uuids: string[] = [];
  for (const eventType of eventTypes) {
    const r = await api(base, 'POST', '/integrations/webhooks/subscriptions', { url, eventType });
    if (r.status === 404 && uuids.length === 0) return undefined;
    if (r.status !== 201) throw new Error(`subscription failed: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    uuids.push(r.body.uuid);
  }
  return uuids;
}

// ---------------------------------------------------------------- load

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  total: number;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH';
  path?: string;
  /** Builds each request (path and body) from a counter. */
  make?: (n: number) => { path: string; body?: string; method?: string };
  body?: string;
  seconds: number;
  connections?: number;
  token?: string;
}

/** One autocannon run in this process (the server under test runs in its own process). */
let counter = 0; // shared by every run, so that a warm-up never reuses a run's externalIds

export async function load(o: LoadOptions): Promise<LoadResult> {
  const headers: Record<string, string> = { authorization: `Bearer ${o.token ?? ADMIN_KEY}` };
  if (o.body !== undefined || o.make) headers['content-type'] = 'application/json';
  const requests = o.make
    ? [{
        method: o.method ?? 'GET',
        setupRequest: (req: any) => {
          const r = o.make!(counter++);
          return { ...req, path: r.path, method: r.method ?? req.method, body: r.body };
        },
      }]
    : undefined;
  const res = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(
      {
        url: o.url + (o.path ?? ''),
        method: o.method ?? 'GET',
        headers,
        body: o.body,
        requests: requests as any,
        connections: o.connections ?? 10,
        duration: o.seconds,
        timeout: 10,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
  return {
    rps: res.requests.average,
    p50: res.latency.p50,
    p99: res.latency.p99,
    non2xx: res.non2xx,
    errors: res.errors,
    timeouts: res.timeouts,
    total: res.requests.total,
  };
}

// ---------------------------------------------------------------- memory

/** VmRSS of a process in MiB, from /proc/<pid>/status (undefined when it is gone). */
export function rssMiB(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- output

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The middle one of xs by key (the upper middle of an even count). */
export function medianBy<T>(xs: T[], key: (x: T) => number): T {
  return [...xs].sort((a, b) => key(a) - key(b))[Math.floor(xs.length / 2)];
}

export const median = (xs: number[]): number => medianBy(xs, (x) => x);

export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function ratioGoal(ratio: number, min: number): string {
  return ratio >= min ? `≥ ${min} × baseline: met` : `≥ ${min} × baseline: missed (${round(ratio / min * 100, 0)}% of goal)`;
}

export function log(...a: unknown[]) {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...a);
}

export async function machine(pgUrl?: string): Promise<string[]> {
  const cpus = os.cpus();
  const lines = [
    `CPU: ${cpus.length} × ${cpus[0]?.model ?? 'unknown'} (shared with other work while measured: ratios against a same-run baseline are what count)`,
    `Memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `OS: ${os.type()} ${os.release()}`,
    `Node.js: ${process.version}`,
  ];
  if (pgUrl) {
    try {
      const pg = (await import('pg')).default;
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      const r = await c.query('SHOW server_version');
      await c.end();
      lines.push(`PostgreSQL: ${r.rows[0].server_version} (127.0.0.1, default settings)`);
    } catch (err) {
      lines.push(`PostgreSQL: unreachable (${(err as Error).message})`);
    }
  }
  try {
    const v = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version;
    lines.push(`PGlite: ${v} (in-process, in memory)`);
  } catch {
    /* not installed */
  }
  for (const dep of ['fastify', 'pg', 'autocannon']) {
    try {
      const v = JSON.parse(fs.readFileSync(path.join(ROOT, `node_modules/${dep}/package.json`), 'utf8')).version;
      lines.push(`${dep}: ${v}`);
    } catch {
      /* not installed */
    }
  }
  return lines;
}

// ---------------------------------------------------------------- databases

export const PG_ADMIN_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** The admin URL (PG_ADMIN_URL) naming another database. */
export function pgDatabaseUrl(name: string): string {
  const u = new URL(PG_ADMIN_URL);
  u.pathname = '/' + name;
  return u.toString();
}

/** Runs fn on a connection of PG_ADMIN_URL's own (CREATE or DROP DATABASE, catalog checks), closed after. */
export const withPgAdmin = <T>(fn: (c: import('pg').Client) => Promise<T>): Promise<T> => withPg(PG_ADMIN_URL, fn);

/** Runs fn on a connection of its own to `url`, closed after. */
export async function withPg<T>(url: string, fn: (c: import('pg').Client) => Promise<T>): Promise<T> {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * An empty PostgreSQL database of its own (the server migrates it on start); drop() removes it. BENCH_PG_TABLESPACE
 * puts it in that tablespace (another filesystem: docs/partitioning.md measures the retention's drop on one).
 */
export async function createPgDatabase(tag: string): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `bulb_bench_${tag}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const space = process.env.BENCH_PG_TABLESPACE;
  if (space && !/^[a-z_][a-z0-9_]*$/.test(space)) throw new Error(`BENCH_PG_TABLESPACE: not a plain identifier: ${space}`);
  await withPgAdmin((c) => c.query(`CREATE DATABASE ${name}${space ? ` TABLESPACE ${space}` : ''}`));
  return {
    url: pgDatabaseUrl(name),
    name,
    async drop() {
      await withPgAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

export async function pgAvailable(): Promise<boolean> {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- BENCHMARKS.md rendering

const fmtNum = (v: number | string | null) => (v === null ? '—' : typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 2 }) : v);
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The markdown table of some rows, then their notes as a list. */
export function rowsTable(rows: Row[], baselineHeader = 'baseline (same run)'): string[] {
  const lines = [`| what | value | ${baselineHeader} | ratio | goal | command |`, '|---|---|---|---|---|---|'];
  for (const r of rows) {
    lines.push(`| ${cell(r.what)} | ${cell(`${fmtNum(r.value)} ${r.unit}`.trim())} | ${cell(r.baseline === null ? '—' : `${fmtNum(r.baseline)} ${r.unit}`.trim())} | ${r.ratio === null ? '—' : fmtNum(r.ratio)} | ${cell(r.goal)} | \`${cell(r.command)}\` |`);
  }
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.note}`);
  if (notes.length) lines.push('', ...notes);
  return lines;
}

/** Replaces (or appends) the "## title" section of BENCHMARKS.md (for scripts run on their own). */
export function replaceSection(title: string, body: string[]): void {
  const file = path.join(ROOT, 'BENCHMARKS.md');
  const section = [`## ${title}`, '', ...body, ''].join('\n');
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Bulb benchmarks\n\n';
  const escaped = title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`^## ${escaped}\\n[\\s\\S]*?(?=^## |(?![\\s\\S]))`, 'm');
  const next = re.test(old) ? old.replace(re, section + '\n') : old.trimEnd() + '\n\n' + section;
  fs.writeFileSync(file, next.trimEnd() + '\n');
}

/** Streams an NDJSON file as the body of a POST to `url` (…/crm/imports?format=ndjson…; Content-Length known); resolves with the answer. */
export function uploadNdjson(url: string, file: string, contentType = 'application/x-ndjson'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': contentType, 'content-length': fs.statSync(file).size },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    fs.createReadStream(file, { highWaterMark: 1 << 16 }).pipe(req);
  });
}

/** A loopback TCP server that accepts connections and never answers (deliveries stay pending). */
export async function hangingReceiver(): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    s.resume();
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  return {
    port: (srv.address() as net.AddressInfo).port,
    close() {
      for (const s of sockets) s.destroy();
      srv.close();
    },
  };
}
