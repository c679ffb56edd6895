// A real Bulb HTTP server on loopback over a test database, and a small JSON client for it. Every answer
// the client receives is checked against the served OpenAPI document (./contract.ts): a mismatch throws.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.ts';
import { makeServices, type Services } from '../../src/services.ts';
import { buildApp } from '../../src/http/app.ts';
import { bootstrapAdminKey } from '../../src/auth/service.ts';
import type { Db } from '../../src/db/db.ts';
import { prepareSecrets } from '../../src/secrets/startup.ts';
import { TEST_SECRET_KEY } from './db.ts';
import { checkContract } from './contract.ts';

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';

export interface TestServer {
  url: string;
  app: FastifyInstance;
  services: Services;
  config: Config;
  /** A client authenticated with the admin key. */
  api: Client;
  close(): Promise<void>;
}

/** `log`: the server's log lines are pushed there (with BULB_LOG_LEVEL in env); none are written otherwise. */
export async function startServer(db: Db, env: Record<string, string> = {}, opts: { log?: string[] } = {}): Promise<TestServer> {
  const config = loadConfig({ BULB_LOG_LEVEL: 'silent', BULB_ADMIN_KEY: ADMIN_KEY, BULB_RATE_LIMIT_PER_SEC: '100000', BULB_RATE_LIMIT_BURST: '100000',
    BULB_AUTH_FAILURES_PER_SEC: '100000', BULB_AUTH_FAILURES_BURST: '100000', BULB_SECRET_KEY: TEST_SECRET_KEY, ...env });
  await prepareSecrets(db, config);
  const services = makeServices(db, config);
  await bootstrapAdminKey(db, config.adminKey);
  const log = opts.log;
  const app = await buildApp(services, { logger: log ? { stream: { write: (line: string) => void log.push(line) } } : false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address() as import('node:net').AddressInfo;
  const url = `http://127.0.0.1:${addr.port}`;
  return { url, app, services, config, api: new Client(url, ADMIN_KEY), close: () => app.close() };
}

export interface Res<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class Client {
  constructor(readonly base: string, readonly token?: string, readonly version = '2025-04') {}

  withToken(token: string | undefined) {
    return new Client(this.base, token, this.version);
  }
  withVersion(version: string) {
    return new Client(this.base, this.token, version);
  }

  /** path starting with "/" is taken under /api/{version}; a full "/api/…" or "/…_api/…" path is used as is. */
  async req<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> {
    const url = /^\/(api|[a-z0-9]+_api|auth|health|ready|metrics|docs|admin)\b/.test(path) ? this.base + path : `${this.base}/api/${this.version}${path}`;
    const h: Record<string, string> = { ...headers };
    if (this.token && !('authorization' in h)) h.authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const r = await fetch(url, { method, headers: h, body: payload });
    const text = await r.text();
    await checkContract(this.base, { method, url, status: r.status, contentType: r.headers.get('content-type'), text });
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: r.status, headers: r.headers, body: parsed, text };
  }
  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.req<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.req<T>('POST', path, body, headers);
  }
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.req<T>('PUT', path, body, headers);
  }
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.req<T>('PATCH', path, body, headers);
  }
  delete<T = any>(path: string, headers?: Record<string, string>) {
    return this.req<T>('DELETE', path, undefined, headers);
  }
}

/** Creates a webhook subscription through the API and asserts it was created (201): the answer's body. */
export async function createSubscription(api: Client, body: Record<string, unknown>): Promise<any> {
  const r = await api.post('/integrations/webhooks/subscriptions', body);
  assert.equal(r.status, 201, r.text);
  return r.body;
}

/** Asserts the SPEC §3 error shape and returns the error codes. */
export function errorCodes(res: Res): string[] {
  const b = res.body;
  if (!b || !Array.isArray(b.errors) || b.errors.length === 0) throw new Error(`not an error body (${res.status}): ${res.text.slice(0, 300)}`);
  for (const e of b.errors) {
    if (typeof e.message !== 'string' || typeof e.errorCode !== 'string' || typeof e.moreInfo !== 'string') {
      throw new Error(`malformed error entry: ${JSON.stringify(e)}`);
    }
  }
  return b.errors.map((e: any) => e.errorCode);
}
