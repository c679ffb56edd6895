// Migrations that build indexes on large tables (`-- bulb:outside-transaction`, src/db/migrate.ts): the API and the
// workers go on writing to those tables while the indexes are built, a build interrupted halfway is redone on the
// next start, and the schema they leave is the one a fresh database gets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { backends, emptyDb, freshDb, untilWaitingForLock, type Backend, type TestDb } from '../helpers/db.ts';
import { migrate, migrationFiles } from '../../src/db/migrate.ts';
import type { Queryable } from '../../src/db/db.ts';

/** The last migration before the first one run outside a transaction. */
const BEFORE = Math.min(...migrationFiles().filter((m) => m.outsideTransaction).map((m) => m.version)) - 1;

async function indexes(q: Queryable): Promise<{ name: string; def: string; valid: boolean }[]> {
  return (
    await q.query<{ name: string; def: string; valid: boolean }>(
      `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def, i.indisvalid AS valid
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE c.relnamespace = current_schema()::regnamespace ORDER BY 1`,
    )
  ).rows;
}

/** A subscription, an event and two deliveries of it (rows in the tables whose indexes the migrations build). */
async function seed(q: Queryable): Promise<{ sub: string; event: string }> {
  const sub = (await q.query<{ id: string }>(
    `INSERT INTO webhook_subscriptions (url, event_types, signing_secret) VALUES ('https://example.com/h', ARRAY['customerCreate'], 'whsec_x') RETURNING id`,
  )).rows[0].id;
  const event = (await q.query<{ id: string }>(
    `INSERT INTO events (event_type, resource_type, resource_uuid, source) VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'TULIP_API') RETURNING id`,
  )).rows[0].id;
  await q.query(`INSERT INTO webhook_deliveries (event_id, subscription_id) VALUES ($1, $2), ($1, $2)`, [event, sub]);
  return { sub, event };
}

for (const backend of await backends()) {
  describe(`migrations outside a transaction (${backend})`, () => {
    let reference: TestDb;
    let expected: { name: string; def: string; valid: boolean }[];
    before(async () => {
      reference = await freshDb(backend);
      expected = await indexes(reference.db);
    });
    after(() => reference.close());

    it(`a database at migration ${BEFORE} with rows migrates to the schema of a fresh one`, async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, BEFORE);
        await seed(t.db);
        const applied = await migrate(t.db);
        assert.deepEqual(applied, migrationFiles().filter((m) => m.version > BEFORE).map((m) => m.name));
        assert.deepEqual(await indexes(t.db), expected);
        assert.deepEqual(await migrate(t.db), [], 'nothing left to apply');
      } finally {
        await t.close();
      }
    });

    it('an index left invalid by an interrupted concurrent build is built again, not kept', async () => {
      const t = await emptyDb(backend);
      try {
        await migrate(t.db, BEFORE);
        await seed(t.db);
        // What a build killed halfway leaves: the index in the catalog, marked invalid (here: a unique build
        // that failed on the two deliveries of one subscription), under the name the migration builds.
        await assert.rejects(t.db.query('CREATE UNIQUE INDEX CONCURRENTLY webhook_deliveries_sub ON webhook_deliveries (subscription_id)'));
        assert.deepEqual((await indexes(t.db)).filter((i) => i.name === 'webhook_deliveries_sub').map((i) => i.valid), [false]);
        await migrate(t.db);
        assert.deepEqual(await indexes(t.db), expected);
      } finally {
        await t.close();
      }
    });
  });
}

const pgOnly: Backend[] = (await backends()).filter((b) => b === 'pg');
for (const backend of pgOnly) {
  describe('migrations outside a transaction, with writers (pg)', () => {
    it('while a migration waits to build an index, the tables it built or builds indexes on take writes', async () => {
      const t = await emptyDb(backend);
      const holder = new pg.Client({ connectionString: t.url });
      const writer = new pg.Client({ connectionString: t.url });
      const watcher = new pg.Client({ connectionString: t.url });
      await Promise.all([holder.connect(), writer.connect(), watcher.connect()]);
      try {
        await migrate(t.db, BEFORE);
        const { sub, event } = await seed(t.db);
        // An administrative act under way: its transaction writes to audit_log and has not committed.
        await holder.query('BEGIN');
        await holder.query(`INSERT INTO audit_log (actor_type, action, target_type) VALUES ('system', 'test.holding', 'Test')`);
        const migrating = migrate(t.db);
        // Wait until the migration waits for that transaction, at its audit_log index (migration 022).
        await untilWaitingForLock(watcher, 'the migration never waited at the audit_log index', { and: `query ILIKE '%audit_log_actor_name%'`, tries: 600, everyMs: 50 });
        // Meanwhile the API goes on: a delivery written (webhook_deliveries got its indexes from migration 021), an
        // act logged. A plain CREATE INDEX in the migration's transaction would hold both tables' writes until it
        // commits, after the holder: these would wait out the lock timeout and fail.
        await writer.query(`SET lock_timeout = '5s'`);
        await writer.query(`INSERT INTO webhook_deliveries (event_id, subscription_id) VALUES ($1, $2)`, [event, sub]);
        await writer.query(`INSERT INTO audit_log (actor_type, action, target_type) VALUES ('system', 'test.during', 'Test')`);
        await holder.query('COMMIT');
        await migrating;
        assert.equal((await t.db.query(`SELECT count(*)::int AS n FROM webhook_deliveries`)).rows[0].n, 3);
        assert.equal((await t.db.query(`SELECT count(*)::int AS n FROM audit_log WHERE action LIKE 'test.%'`)).rows[0].n, 2);
        assert.ok((await indexes(t.db)).every((i) => i.valid), 'every index valid');
        assert.deepEqual(await migrate(t.db), []);
      } finally {
        await holder.query('ROLLBACK').catch(() => {});
        await Promise.all([holder.end(), writer.end(), watcher.end()]);
        await t.close();
      }
    });
  });

  describe('a statement of a migration outside a transaction that deadlocks with a running process (pg)', () => {
    it('is run again; the start does not fail (054 under writers of the version before)', async () => {
      // 054's first statement drops webhook_deliveries' foreign key to events: it holds webhook_deliveries and waits for
      // events, which an old writer holds while it goes on to insert the event's delivery. 3 upgrades of 3 failed the
      // start under such writers (found by a probe); the statement, rolled back alone, is safe to run again.
      const t = await emptyDb(backend);
      const writer = new pg.Client({ connectionString: t.url });
      const watcher = new pg.Client({ connectionString: t.url });
      await Promise.all([writer.connect(), watcher.connect()]);
      try {
        await migrate(t.db, 53);
        const { sub } = await seed(t.db);
        // The writer waits longer than the migration before looking for a deadlock: the migration is the one ended.
        await writer.query('BEGIN');
        await writer.query(`SET LOCAL deadlock_timeout = '10s'`);
        const event = (await writer.query(
          `INSERT INTO events (event_type, resource_type, resource_uuid, source) VALUES ('customerCreate', 'Customer', gen_random_uuid(), 'TULIP_API') RETURNING id`,
        )).rows[0].id;
        const migrating = migrate(t.db, 54);
        await untilWaitingForLock(watcher, 'the migration never waited for events', { and: `query ILIKE '%DROP CONSTRAINT%'`, tries: 600, everyMs: 50 });
        await writer.query(`INSERT INTO webhook_deliveries (event_id, subscription_id) VALUES ($1, $2)`, [event, sub]);
        await writer.query('COMMIT');
        assert.deepEqual(await migrating, ['054_partition_events_deliveries.sql']);
        assert.equal((await t.db.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = $1`, [event])).rows[0].n, 1, 'the writer\'s delivery kept');
      } finally {
        await writer.query('ROLLBACK').catch(() => {});
        await Promise.all([writer.end(), watcher.end()]);
        await t.close();
      }
    });
  });

  describe('a migration in a transaction that deadlocks with a running process (pg)', () => {
    it('is rolled back and run again; the start does not fail', async () => {
      const t = await emptyDb(backend);
      const worker = new pg.Client({ connectionString: t.url });
      const watcher = new pg.Client({ connectionString: t.url });
      await Promise.all([worker.connect(), watcher.connect()]);
      try {
        await migrate(t.db, 34);
        const sub = (await t.db.query<{ id: string }>(
          `INSERT INTO webhook_subscriptions (url, event_types, auth_method, bearer_token, signing_secret)
           VALUES ('https://example.com/h', '{webhookTest}', 'BEARER', 'clear:x', 'whsec_x') RETURNING id`,
        )).rows[0].id;
        // A worker of the version before (a rolling upgrade) in a transaction that writes attempts. It waits longer
        // than the migration before looking for a deadlock, so the migration is the one PostgreSQL ends.
        await worker.query('BEGIN');
        await worker.query(`SET LOCAL deadlock_timeout = '10s'`);
        await worker.query('LOCK TABLE webhook_attempts IN ROW EXCLUSIVE MODE');
        // Migration 035 marks that subscription's token (a row lock), then alters webhook_attempts: it waits.
        const migrating = migrate(t.db, 35);
        for (let i = 0; ; i++) {
          const r = await watcher.query(
            `SELECT 1 FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock' AND relation = 'webhook_attempts'::regclass`,
          );
          if (r.rows.length > 0) break;
          assert.ok(i < 600, 'the migration never waited for webhook_attempts');
          await new Promise((r) => setTimeout(r, 50));
        }
        // The worker now wants the row the migration holds: each waits for the other.
        await worker.query(`UPDATE webhook_subscriptions SET consecutive_failures = consecutive_failures + 1 WHERE id = $1`, [sub]);
        await worker.query('COMMIT');
        assert.deepEqual(await migrating, ['035_secrets_clear_form.sql']);
        assert.equal((await t.db.query(`SELECT bearer_token FROM webhook_subscriptions WHERE id = $1`, [sub])).rows[0].bearer_token, 'clear:clear:x');
      } finally {
        await worker.query('ROLLBACK').catch(() => {});
        await Promise.all([worker.end(), watcher.end()]);
        await t.close();
      }
    });
  });
}
