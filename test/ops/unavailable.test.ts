// Which errors mean "the database cannot serve right now" (answered 503 with Retry-After) rather than a fault (500):
// each case is an error as the real socket or server makes it, not one written by hand (src/db/unavailable.ts).
import assert from 'node:assert/strict';
import net from 'node:net';
import { it } from 'node:test';
import { databaseUnavailable } from '../../src/db/unavailable.ts';
import { toApiError } from '../../src/http/errors.ts';

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
