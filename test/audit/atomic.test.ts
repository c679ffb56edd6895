// An act and its audit row commit together or not at all (issue 24, item 12; SPEC §15). The audit log is made to
// refuse one action at a time (a trigger on audit_log in the test database): the request then fails as a whole,
// 500 InternalError in the error shape, and nothing of the act is left; once the log accepts again, the same request
// (with the same Idempotency-Key, for a merge) does the act once, with its row. Every audited route is covered.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes, type Res } from '../helpers/server.ts';
import { makeCustomer } from '../crm/fixtures.ts';

await describeEachDb('audit row in the act\'s transaction', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const db = () => ctx.tdb.db;
  const count = async (sql: string, params: unknown[] = []) => Number((await db().query(sql, params)).rows[0].n);
  // The acts of requests (the admin key the server's start made is the system's row, not counted here).
  const audited = (action: string) => count(`SELECT count(*) AS n FROM audit_log WHERE action = $1 AND actor_type <> 'system'`, [action]);
  /** The audit log refuses this action from now on (null: refuses none). */
  const refuse = async (action: string | null, errcode = 'P0001') => {
    await db().query('DELETE FROM test_refused_audit');
    if (action) await db().query('INSERT INTO test_refused_audit (action, errcode) VALUES ($1, $2)', [action, errcode]);
  };
  /** The request failed whole: 500 InternalError (what it left is checked after). */
  const failedWhole = (r: Res) => {
    assert.equal(r.status, 500, r.text);
    assert.deepEqual(errorCodes(r), ['InternalError']);
  };

  before(async () => {
    await db().exec(`
      CREATE TABLE test_refused_audit (action text PRIMARY KEY, errcode text NOT NULL);
      CREATE FUNCTION test_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE code text;
      BEGIN
        SELECT errcode INTO code FROM test_refused_audit WHERE action = NEW.action;
        IF code IS NOT NULL THEN
          RAISE EXCEPTION USING ERRCODE = code, MESSAGE = format('the audit log refuses %s', NEW.action);
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION test_refuse_audit();`);
  });

  it('API keys and auth clients: a failed audit row leaves no key (a retry makes one), and a revoked one usable', async () => {
    const keys = () => count('SELECT count(*) AS n FROM api_keys');
    const n = await keys();
    await refuse('apiKey.created');
    const failed = await api().post('/integrations/apiKeys', { name: 'pos', scopes: ['read'] });
    failedWhole(failed);
    assert.equal(await keys(), n, 'no key was made');
    assert.match(failed.body.errors[0].message, /audit log.*not done.*retrying is safe/, 'the answer says nothing was done');
    await refuse(null);
    const key = await api().post('/integrations/apiKeys', { name: 'pos', scopes: ['read'] });
    assert.equal(key.status, 201, key.text);
    assert.equal(await keys(), n + 1, 'the retry made one key');
    assert.equal(await audited('apiKey.created'), 1);

    await refuse('apiKey.revoked');
    failedWhole(await api().delete(`/integrations/apiKeys/${key.body.uuid}`));
    assert.equal((await api().withToken(key.body.key).get('/crm/customers')).status, 200, 'the key still works');
    await refuse(null);
    assert.equal((await api().delete(`/integrations/apiKeys/${key.body.uuid}`)).status, 204);
    assert.equal((await api().withToken(key.body.key).get('/crm/customers')).status, 401);
    assert.equal(await audited('apiKey.revoked'), 1);

    const clients = () => count('SELECT count(*) AS n FROM auth_clients');
    await refuse('authClient.created');
    failedWhole(await api().post('/integrations/authClients', { name: 'erp', scopes: ['read'] }));
    assert.equal(await clients(), 0);
    await refuse('authClient.revoked');
    const client = await api().post('/integrations/authClients', { name: 'erp', scopes: ['read'] });
    assert.equal(client.status, 201, client.text);
    failedWhole(await api().delete(`/integrations/authClients/${client.body.uuid}`));
    assert.equal(await count('SELECT count(*) AS n FROM auth_clients WHERE revoked_at IS NULL'), 1, 'not revoked');
    await refuse(null);
    assert.equal((await api().delete(`/integrations/authClients/${client.body.uuid}`)).status, 204);
    assert.deepEqual([await audited('authClient.created'), await audited('authClient.revoked')], [1, 1]);
  });

  it('webhook subscriptions: not created, changed, disabled, shown, rotated or deleted without their audit row', async () => {
    const subs = '/integrations/webhooks/subscriptions';
    const body = { url: 'http://127.0.0.1:9/hook', eventTypes: ['customerCreate'] };
    await refuse('subscription.created');
    failedWhole(await api().post(subs, body));
    assert.equal(await count('SELECT count(*) AS n FROM webhook_subscriptions'), 0);
    await refuse(null);
    const sub = await api().post(subs, body);
    assert.equal(sub.status, 201, sub.text);
    const at = `${subs}/${sub.body.uuid}`;

    await refuse('subscription.changed');
    failedWhole(await api().patch(at, { url: 'http://127.0.0.1:9/other' }));
    await refuse('subscription.disabled');
    failedWhole(await api().patch(at, { isActive: false }));
    const now = (await api().get(at)).body;
    assert.deepEqual([now.url, now.isActive], [body.url, true], 'neither change happened');

    await refuse('subscription.secretRevealed');
    const shown = await api().get(`${at}/secret`);
    failedWhole(shown);
    assert.ok(!shown.text.includes(sub.body.signingSecret), 'the secret is not shown');
    await refuse('subscription.secretRotated');
    failedWhole(await api().post(`${at}/rotateSecret`));
    await refuse('subscription.deleted');
    failedWhole(await api().delete(at));
    await refuse(null);
    const secret = await api().get(`${at}/secret`);
    assert.deepEqual(secret.body, { signingSecret: sub.body.signingSecret, previousSecretExpiresAt: null }, 'not rotated');
    assert.equal((await api().get(at)).status, 200, 'not deleted');
    assert.equal(await audited('subscription.secretRevealed'), 1);
    assert.equal((await api().post(`${at}/rotateSecret`)).status, 200);
    assert.equal((await api().delete(at)).status, 204);
    assert.deepEqual(
      await Promise.all(['subscription.created', 'subscription.changed', 'subscription.disabled', 'subscription.secretRotated', 'subscription.deleted'].map(audited)),
      [1, 0, 0, 1, 1],
    );
  });

  it('merges and undos: nothing merged or restored, and the Idempotency-Key is not spent', async () => {
    for (const x of ['p', 's', 'lp', 'ls']) await makeCustomer(db(), `atomic-${x}`);
    const merge = () => api().post('/crm/customers/atomic-p/merge', { mergeWithCustomerIds: ['atomic-s'] }, { 'idempotency-key': 'atomic-merge' });
    const status = async (id: string) => (await api().get(`/crm/customers/${id}`)).body.status;
    await refuse('merge.created');
    failedWhole(await merge());
    failedWhole(await api().withVersion('2022-08').put('/crm/customers/atomic-lp/merge_by_external_id', { ids: ['atomic-ls'] }));
    assert.deepEqual([await status('atomic-s'), await status('atomic-ls')], ['active', 'active'], 'nothing merged');
    assert.equal(await count('SELECT count(*) AS n FROM merges'), 0);
    await refuse(null);
    const merged = await merge();
    assert.equal(merged.status, 200, merged.text);
    assert.equal(merged.headers.get('idempotent-replayed'), null, 'the key was not spent by the failed request: this is the act');
    assert.equal(await status('atomic-s'), 'disabled');

    await refuse('merge.undone');
    failedWhole(await api().post(`/crm/merges/${merged.body.mergeUuid}/undo`));
    assert.equal(await status('atomic-s'), 'disabled', 'not undone');
    await refuse(null);
    assert.equal((await api().post(`/crm/merges/${merged.body.mergeUuid}/undo`)).status, 200);
    assert.equal(await status('atomic-s'), 'active');
    assert.deepEqual([await audited('merge.created'), await audited('merge.undone')], [1, 1]);
  });

  it('imports: a failed audit row leaves no import behind; a cancel that cannot be recorded does not cancel', async () => {
    const ndjson = { 'content-type': 'application/x-ndjson' };
    const file = JSON.stringify({ externalId: 'imported' }) + '\n';
    await refuse('import.started');
    failedWhole(await api().post('/crm/imports', file, ndjson));
    assert.deepEqual([await count('SELECT count(*) AS n FROM imports'), await count('SELECT count(*) AS n FROM import_rows')], [0, 0]);
    await refuse(null);
    const imp = await api().post('/crm/imports', file, ndjson);
    assert.equal(imp.status, 202, imp.text);
    assert.equal(imp.body.status, 'queued'); // no import worker runs here: it stays queued

    await refuse('import.cancelled');
    failedWhole(await api().post(`/crm/imports/${imp.body.uuid}/cancel`));
    assert.equal((await api().get(`/crm/imports/${imp.body.uuid}`)).body.status, 'queued', 'not cancelled');
    assert.equal(await count('SELECT count(*) AS n FROM import_rows'), 1, 'its staged row is kept');
    await refuse(null);
    assert.equal((await api().post(`/crm/imports/${imp.body.uuid}/cancel`)).status, 200);
    assert.deepEqual([await audited('import.started'), await audited('import.cancelled')], [1, 1]);
  });

  it('a database going away while the audit row is written is 503 with Retry-After (a failover), not a 500', async () => {
    // 57P01 admin_shutdown is what a backend says when its server stops under it (a failover's immediate stop).
    await refuse('merge.created', '57P01');
    for (const x of ['gone-p', 'gone-s']) await makeCustomer(db(), x);
    const r = await api().post('/crm/customers/gone-p/merge', { mergeWithCustomerIds: ['gone-s'] });
    assert.equal(r.status, 503, r.text);
    assert.deepEqual(errorCodes(r), ['ServiceUnavailable']);
    assert.equal(r.headers.get('retry-after'), '1');
    await refuse(null);
    assert.equal((await db().query("SELECT status FROM customers WHERE external_id = 'gone-s'")).rows[0].status, 'active', 'not merged');
    assert.equal((await api().post('/crm/customers/gone-p/merge', { mergeWithCustomerIds: ['gone-s'] })).status, 200);
  });
  // On PostgreSQL the server gets the database URL, so an upload takes the COPY path (its own connection and transaction).
}, (tdb) => ({ BULB_WEBHOOK_ALLOW_PRIVATE: 'true', ...(tdb.url ? { DATABASE_URL: tdb.url } : {}) }));
