// Which errors mean "the database cannot serve right now" (answered 503 with Retry-After) rather than a fault (500):
// each case is an error as the real socket or server makes it, not one written by hand (src/db/unavailable.ts).
import assert from 'node:assert/strict';
import net from 'node:net';
import { it } from 'node:test';
import { databaseUnavailable } from '../../src/db/unavailable.ts';
import { errorHandler, LogThrottle, toApiError } from '../../src/http/errors.ts';

/** The error of a write to a socket whose peer has closed it (a server gone mid-failover): EPIPE, no syscall. */
async function writeAfterPeerClosed(): Promise<Error> {
  const server = net.createServer((c) => c.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await new Promise<Error>((resolve, reject) => {
      const c = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
      c.on('error', () => {});
      c.on('end', () => setTimeout(() => c.write('x', (err) => (err ? resolve(err) : reject(new Error('the write succeeded')))), 10));
    });
  } finally {
    server.close();
  }
}

/** The error of connecting to a port nobody listens on: ECONNREFUSED with its syscall. */
async function refused(): Promise<Error> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return new Promise<Error>((resolve) => net.connect(port, '127.0.0.1').on('error', resolve));
}

it('a socket the server closed, written to (EPIPE without a syscall), is unavailable: 503, not 500', async () => {
  const err = await writeAfterPeerClosed();
  assert.equal((err as NodeJS.ErrnoException).code, 'EPIPE');
  assert.equal((err as NodeJS.ErrnoException).syscall, undefined);
  assert.equal(databaseUnavailable(err), true);
  const answer = toApiError(err);
  assert.equal(answer.status, 503);
  assert.equal(answer.headers['retry-after'], '1');
});

it('a refused connection is unavailable; a fault of the request or of Bulb is not', async () => {
  assert.equal(databaseUnavailable(await refused()), true);
  assert.equal(databaseUnavailable(new Error('boom')), false);
  assert.equal(databaseUnavailable(Object.assign(new Error('duplicate key value'), { code: '23505', severity: 'ERROR' })), false);
  assert.equal(databaseUnavailable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' })), true);
  assert.equal(toApiError(new Error('boom')).status, 500);
  // Too many clients: a 503 that names it, not a restart or failover (a probe, 2026-11-29).
  const full = toApiError(Object.assign(new Error('sorry, too many clients already'), { code: '53300', severity: 'FATAL' }));
  assert.equal(full.status, 503);
  assert.match(full.entries[0].message, /max_connections/);
  assert.doesNotMatch(full.entries[0].message, /restarting/);
});

it('a pool with no connection free in time (every one held by a lock wait) is a 503 that says so, not "restarting"', async () => {
  const pg = (await import('pg')).default;
  // A real pool of one whose only client is held: the next request waits, then gets node-postgres's own error.
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    if (process.env.CI) assert.fail('TEST_DATABASE_URL is required with CI=true');
    console.log('# skipped: no PostgreSQL (TEST_DATABASE_URL)');
    return;
  }
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 100 });
  const held = await pool.connect();
  try {
    const err = await pool.query('SELECT 1').then(() => undefined, (e: Error) => e);
    assert.ok(err, 'the second query waited and failed');
    assert.equal(databaseUnavailable(err), true);
    const answer = toApiError(err);
    assert.equal(answer.status, 503);
    assert.match(answer.entries[0].message, /no database connection came free in time/);
  } finally {
    held.release();
    await pool.end();
  }
});

it('503s are logged once per 5 s at warn, counting the others, without a stack; other 5xx each at error', async () => {
  // An outage under load wrote an error line with its stack for every request (~900 a second per process; found by
  // a probe): one cause, met by every request at once.
  const Fastify = (await import('fastify')).default;
  const { Writable } = await import('node:stream');
  const lines: any[] = [];
  const stream = new Writable({ write: (chunk, _e, done) => (lines.push(JSON.parse(String(chunk))), done()) });
  const app = Fastify({ logger: { level: 'info', stream } });
  const down = await refused();
  app.setErrorHandler(errorHandler);
  app.get('/down', async () => { throw down; });
  app.get('/bug', async () => { throw new Error('boom'); });
  try {
    for (let i = 0; i < 20; i++) assert.equal((await app.inject('/down')).statusCode, 503);
    assert.equal((await app.inject('/bug')).statusCode, 500);
    const warned = lines.filter((l) => l.level === 40);
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.match(warned[0].msg, /^answered 503: the database is unavailable/);
    assert.equal(warned[0].code, 'ECONNREFUSED');
    assert.equal(warned[0].alsoAnswered503, 0);
    assert.equal(JSON.stringify(warned[0]).includes('    at '), false, 'no stack');
    const errors = lines.filter((l) => l.level === 50);
    assert.deepEqual(errors.map((l) => l.err?.message), ['boom'], 'the fault is logged with its error');
  } finally {
    await app.close();
  }
});

it('LogThrottle: the first at once, then one per period counting the ones kept quiet', () => {
  let now = 1_000;
  const t = new LogThrottle(5_000, () => now);
  assert.equal(t.take(), 0);
  assert.equal(t.take(), null);
  now += 4_999;
  assert.equal(t.take(), null);
  now += 1;
  assert.equal(t.take(), 2);
  assert.equal(t.take(), null);
});
