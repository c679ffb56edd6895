// A start before PostgreSQL serves (a deployment starting Bulb beside its database, or during a failover): Bulb tries
// again for BULB_DATABASE_WAIT_MS and comes up once the database answers; with 0 it exits 1 at once, as before
// (2026-11-28: every start with the database not yet up exited 1). The database is reached through a TCP door that
// drops the first connections as a server not yet listening or still starting does, then passes them on.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { TEST_SECRET_KEY, emptyDb, postgresAvailable, PG_URL, type TestDb } from '../helpers/db.ts';
import { runBulb, startBulb } from '../helpers/process.ts';
import { Client } from '../helpers/server.ts';

const KEY = 'start-wait-admin-key-0123456789abcdef';
const enabled = await postgresAvailable();
if (!enabled) console.log('# SKIP start-wait tests: no PostgreSQL (mandatory with CI=true)');

/** A door to PostgreSQL that drops the first `refuse` connections, then forwards every later one. */
async function door(refuse: number) {
  const target = new URL(PG_URL);
  let dropped = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (dropped < refuse) {
      dropped++;
      return client.destroy();
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('error', () => {}).on('close', () => (client.destroy(), upstream.destroy()));
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    dropped: () => dropped,
    async close() {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('a start while PostgreSQL does not serve yet', { skip: !enabled }, () => {
  let tdb: TestDb;
  before(async () => {
    tdb = await emptyDb('pg'); // nothing migrated: the start migrates through the door
  });
  after(async () => tdb?.close());
  const urlThrough = (port: number) => {
    const u = new URL(tdb.url!);
    u.host = `127.0.0.1:${port}`;
    return u.toString();
  };

  it('waits, logging each try, and serves once the database answers', async () => {
    const d = await door(3);
    const proc = await startBulb({ DATABASE_URL: urlThrough(d.port), BULB_ADMIN_KEY: KEY, BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_DATABASE_WAIT_MS: '120000' });
    try {
      assert.equal(d.dropped(), 3);
      assert.equal((proc.output().match(/database not reachable \(.+\); trying again in [\d.]+ s/g) ?? []).length, 3, proc.output());
      // warn lines, so that BULB_LOG_LEVEL=warn shows them
      const tries = proc.output().split('\n').filter((l) => l.startsWith('{') && l.includes('database not reachable')).map((l) => JSON.parse(l).level);
      assert.deepEqual(tries, [40, 40, 40], proc.output());
      const api = new Client(proc.url, KEY).withVersion('2026-11');
      const made = await api.post('/crm/customers', { externalId: 'after-wait', firstName: 'Late' });
      assert.equal(made.status, 201, made.text);
      assert.equal((await api.get('/crm/customers/after-wait')).body.firstName, 'Late');
    } finally {
      await proc.stop();
      await d.close();
    }
  });

  it('behind a pooler that still refuses once the direct migrations pass, the next steps wait too (they ended the start)', async () => {
    // DATABASE_URL through the door (a PgBouncer still refusing logins after a restart: its server_login_retry), the
    // direct URL straight to PostgreSQL: the migrations pass, and the secrets' and admin key's statements, pooled, are
    // refused three times. Until 2026-11-29 the first refusal there ended the start with a stack trace, exit 1 (a probe).
    const d = await door(3);
    const proc = await startBulb({ DATABASE_URL: urlThrough(d.port), BULB_DATABASE_DIRECT_URL: tdb.url!, BULB_ADMIN_KEY: KEY, BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_DATABASE_WAIT_MS: '120000' });
    try {
      assert.equal(d.dropped(), 3);
      assert.match(proc.output(), /database not reachable \(.+\); trying again in [\d.]+ s/);
      const api = new Client(proc.url, KEY).withVersion('2026-11');
      assert.equal((await api.post('/crm/customers', { externalId: 'after-pooler', firstName: 'Late' })).status, 201);
    } finally {
      await proc.stop();
      await d.close();
    }
  });

  it('BULB_DATABASE_WAIT_MS=0 exits 1 at the first refusal, naming the error', async () => {
    const d = await door(1_000);
    try {
      const { code, out } = await runBulb({ DATABASE_URL: urlThrough(d.port), BULB_SECRET_KEY: TEST_SECRET_KEY, BULB_DATABASE_WAIT_MS: '0' });
      assert.equal(code, 1, out);
      assert.equal(d.dropped(), 1);
      assert.doesNotMatch(out, /trying again/);
      // One line naming the settings to check, not a stack trace (until 2026-11-29).
      assert.match(out, /^start failed: the database is not reachable: (Connection terminated|.*ECONNRESET).*; check DATABASE_URL and that PostgreSQL is running$/m);
      assert.doesNotMatch(out, /\n\s+at /, 'no stack trace');
    } finally {
      await d.close();
    }
  });
});
