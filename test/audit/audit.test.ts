// Audit log (SPEC §15): one row per administrative or destructive act, with actor (key or client uuid and
// name, or system), action, target, IP address and time; GET /integrations/auditLog (admin, 2026-11) with
// filters and pagination; append-only (no route, and the database refuses UPDATE, DELETE, TRUNCATE).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY, errorCodes } from '../helpers/server.ts';
import { appendAudit, SYSTEM } from '../../src/audit/store.ts';
import { migrate } from '../../src/db/migrate.ts';
import { makeCustomer } from '../crm/fixtures.ts';
import { startWorker } from '../helpers/worker.ts';
import { startReceiver, status, waitFor } from '../webhooks/receiver.ts';

await describeEachDb('audit log', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const log = async (q = '') => {
    const r = await api().get(`/integrations/auditLog?limit=250${q}`);
    assert.equal(r.status, 200, r.text);
    return r.body.data as any[];
  };
  const adminUuid = async () => (await ctx.tdb.db.query(`SELECT uuid, name FROM api_keys WHERE scopes @> '{admin}' ORDER BY id LIMIT 1`)).rows[0];

  it('records every act listed in SPEC §15 once, with actor, target, IP address and time', async () => {
    const started = new Date(Date.now() - 1000).toISOString();
    const admin = await adminUuid();
    // API keys and auth clients.
    const key = (await api().post('/integrations/apiKeys', { name: 'pos', scopes: ['read'] })).body;
    assert.equal((await api().delete(`/integrations/apiKeys/${key.uuid}`)).status, 204);
    const client = (await api().post('/integrations/authClients', { name: 'erp-sync', scopes: ['admin'] })).body;
    const tok = await fetch(`${ctx.srv.url}/auth/oauth2/token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=${client.clientId}&client_secret=${client.clientSecret}`,
    });
    // Subscriptions through 2025-04 (eventType), which every later shape keeps serving.
    const asClient = api().withVersion('2025-04').withToken((await tok.json()).access_token);
    // Subscriptions, acted on by the OAuth client.
    const sub = (await asClient.post('/integrations/webhooks/subscriptions', { url: 'http://127.0.0.1:9/hook', eventType: 'customerCreate', authMethod: 'BEARER', bearerToken: 'tok-never-in-audit' }));
    assert.equal(sub.status, 201, sub.text);
    const su = sub.body.uuid;
    assert.equal((await asClient.patch(`/integrations/webhooks/subscriptions/${su}`, { url: 'http://127.0.0.1:9/hook2', bearerToken: 'tok2-never-in-audit' })).status, 200);
    assert.equal((await asClient.patch(`/integrations/webhooks/subscriptions/${su}`, { isActive: false })).status, 200);
    assert.equal((await asClient.get(`/integrations/webhooks/subscriptions/${su}/secret`)).status, 200);
    assert.equal((await asClient.req('HEAD', `/integrations/webhooks/subscriptions/${su}/secret`)).status, 200, 'a HEAD shows nothing: no act');
    assert.equal((await asClient.post(`/integrations/webhooks/subscriptions/${su}/rotateSecret`)).status, 200);
    assert.equal((await asClient.delete(`/integrations/webhooks/subscriptions/${su}`)).status, 204);
    assert.equal((await api().delete(`/integrations/authClients/${client.uuid}`)).status, 204);
    // Merges (a dry run and an Idempotency-Key replay are not new acts), the legacy door, and an undo.
    for (const x of ['p1', 's1', 'p2', 's2']) await makeCustomer(ctx.tdb.db, `audit-${x}`);
    const m = (q = '', h?: Record<string, string>) => api().post(`/crm/customers/audit-p1/merge${q}`, { mergeWithCustomerIds: ['audit-s1'] }, h);
    assert.equal((await m('?dryRun=true')).status, 200);
    const merged = await m('', { 'idempotency-key': 'audit-merge-1' });
    assert.equal(merged.status, 200, merged.text);
    assert.equal((await m('', { 'idempotency-key': 'audit-merge-1' })).headers.get('idempotent-replayed'), 'true');
    const legacy = await api().withVersion('2022-08').put('/crm/customers/audit-p2/merge_by_external_id', { ids: ['audit-s2'] });
    assert.equal(legacy.status, 200, legacy.text);
    // A merge of customers merged into the primary already does nothing (mergeUuid null): no act, on either door.
    const again = await m('');
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.mergeUuid, null);
    assert.equal((await api().withVersion('2022-08').put('/crm/customers/audit-p2/merge_by_external_id', { ids: ['audit-s2'] })).status, 200);
    assert.equal((await api().post(`/crm/merges/${merged.body.mergeUuid}/undo?dryRun=true`)).status, 200);
    assert.equal((await api().post(`/crm/merges/${merged.body.mergeUuid}/undo`)).status, 200);
    // Failed acts are not acts.
    assert.equal((await api().delete(`/integrations/apiKeys/${key.uuid}`)).status, 404);
    assert.equal((await api().withVersion('2025-04').post('/integrations/webhooks/subscriptions', { url: 'ftp://127.0.0.1/x', eventType: 'customerCreate' })).status, 400);

    // Oldest first; the admin key the server's start made is the first row, the system's (test of its own below).
    const [bootstrap, ...rows] = (await log()).reverse();
    assert.deepEqual([bootstrap.action, bootstrap.actor.type, bootstrap.target.id, bootstrap.details.source], ['apiKey.created', 'system', admin.uuid, 'BULB_ADMIN_KEY']);
    const summary = rows.map((r) => [r.action, r.actor.type, r.target.type, r.target.id]);
    const adminActor = { type: 'apiKey', uuid: admin.uuid, name: admin.name };
    const clientActor = { type: 'authClient', uuid: client.uuid, name: 'erp-sync' };
    assert.deepEqual(summary, [
      ['apiKey.created', 'apiKey', 'ApiKey', key.uuid],
      ['apiKey.revoked', 'apiKey', 'ApiKey', key.uuid],
      ['authClient.created', 'apiKey', 'AuthClient', client.uuid],
      ['subscription.created', 'authClient', 'WebhookSubscription', su],
      ['subscription.changed', 'authClient', 'WebhookSubscription', su],
      ['subscription.disabled', 'authClient', 'WebhookSubscription', su],
      ['subscription.secretRevealed', 'authClient', 'WebhookSubscription', su],
      ['subscription.secretRotated', 'authClient', 'WebhookSubscription', su],
      ['subscription.deleted', 'authClient', 'WebhookSubscription', su],
      ['authClient.revoked', 'apiKey', 'AuthClient', client.uuid],
      ['merge.created', 'apiKey', 'Customer', merged.body.primary.uuid],
      ['merge.created', 'apiKey', 'Customer', legacy.body.uuid],
      ['merge.undone', 'apiKey', 'Merge', merged.body.mergeUuid],
    ]);
    for (const r of rows) {
      assert.deepEqual(r.actor, r.actor.type === 'apiKey' ? adminActor : clientActor, r.action);
      assert.equal(r.ipAddress, '127.0.0.1', r.action);
      assert.ok(r.createdAt >= started && Date.parse(r.createdAt) <= Date.now(), r.action);
      assert.match(r.uuid, /^[0-9a-f-]{36}$/);
    }
    assert.deepEqual(rows[0].details, { name: 'pos', scopes: ['read'] });
    assert.deepEqual(rows[4].details, { url: 'http://127.0.0.1:9/hook2', bearerToken: '[redacted]' });
    // What was revoked or deleted, by name or URL: listed nowhere else afterwards (the rows said {} until 2026-11-29).
    assert.deepEqual(rows[1].details, { name: 'pos' });
    assert.deepEqual(rows[8].details, { url: 'http://127.0.0.1:9/hook2' });
    assert.deepEqual(rows[9].details, { name: 'erp-sync' });
    assert.deepEqual(rows[10].details, { mergeUuid: merged.body.mergeUuid, primary: 'audit-p1', mergedCustomerIds: ['audit-s1'] });
    // A legacy door's row is made like the 2025-04 door's: its merge's uuid, the merged customers' externalIds.
    const legacyMerge = (await api().get('/crm/customers/audit-p2/merges')).body.data[0];
    assert.deepEqual(rows[11].details, { mergeUuid: legacyMerge.uuid, primary: 'audit-p2', mergedCustomerIds: ['audit-s2'] });
    assert.deepEqual(rows[12].details, { primary: 'audit-p1', restoredCustomerIds: ['audit-s1'] });
    const text = JSON.stringify(rows);
    for (const secret of ['never-in-audit', client.clientSecret, key.key, sub.body.signingSecret, ADMIN_KEY]) assert.ok(!text.includes(secret), 'no secret in the audit log');
  });

  it('filters by action, actor (uuid, name, system) and since; pages newest first, each row once', async () => {
    await appendAudit(ctx.tdb.db, { actor: SYSTEM, action: 'subscription.disabled', targetType: 'WebhookSubscription', targetId: null, ip: null, details: { reason: 'test' } });
    const all = await log();
    assert.ok(all.length >= 14);
    const ids = all.map((r) => r.uuid);
    assert.equal(all[0].actor.type, 'system', 'newest first');
    assert.deepEqual(all[0].actor, { type: 'system', uuid: null, name: null });
    assert.equal(all[0].ipAddress, null);
    assert.deepEqual((await log('&action=subscription.disabled')).map((r) => r.actor.type), ['system', 'authClient']);
    assert.deepEqual((await log('&actor=system')).map((r) => r.uuid), [all[0].uuid, all.at(-1).uuid], 'this act and the admin key the start made');
    const client = all.find((r) => r.actor.type === 'authClient').actor;
    assert.equal((await log(`&actor=${client.uuid}`)).length, 6);
    assert.equal((await log('&actor=erp-sync')).length, 6, 'by name');
    assert.equal((await log(`&since=${encodeURIComponent(all[0].createdAt)}`))[0].uuid, all[0].uuid);
    assert.equal((await log(`&since=${new Date(Date.now() + 60_000).toISOString()}`)).length, 0);
    const walked: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const r: any = await api().get(`/integrations/auditLog?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200);
      assert.ok(r.body.data.length <= 4);
      walked.push(...r.body.data.map((x: any) => x.uuid));
      cursor = r.body.nextCursor;
    }
    assert.deepEqual(walked, ids);
    for (const bad of ['action=nope', 'since=yesterday', 'limit=0', 'cursor=zz', 'other=1', `actor=${'x'.repeat(201)}`]) {
      const r = await api().get(`/integrations/auditLog?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.deepEqual(errorCodes(r), ['InvalidParameterError'], bad);
    }
  });

  it('is admin-only, from 2026-11, and append-only (no route changes it; the database refuses)', async () => {
    const reader = (await api().post('/integrations/apiKeys', { name: 'reader', scopes: ['write'] })).body.key;
    assert.deepEqual(errorCodes(await api().withToken(reader).get('/integrations/auditLog')), ['Forbidden']);
    assert.deepEqual(errorCodes(await api().withToken(undefined).get('/integrations/auditLog')), ['Unauthorized']);
    assert.deepEqual(errorCodes(await api().withVersion('2025-04').get('/integrations/auditLog')), ['EndpointNotInVersion']);
    const one = (await log())[0];
    for (const [method, path] of [['DELETE', '/integrations/auditLog'], ['PUT', '/integrations/auditLog'], ['PATCH', '/integrations/auditLog'], ['POST', '/integrations/auditLog']]) {
      assert.equal((await api().req(method, path, method === 'DELETE' ? undefined : {})).status, 405, `${method}`);
    }
    assert.equal((await api().delete(`/integrations/auditLog/${one.uuid}`)).status, 404);
    const before = (await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0].n;
    for (const sql of [`UPDATE audit_log SET action = 'x'`, `DELETE FROM audit_log`, `TRUNCATE audit_log`]) {
      await assert.rejects(ctx.tdb.db.query(sql), /append-only/, sql);
    }
    assert.equal((await ctx.tdb.db.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0].n, before);
  });

  it('records imports started and cancelled', async () => {
    const r = await fetch(`${ctx.srv.url}/api/2026-11/crm/imports?format=ndjson&events=false`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/x-ndjson' },
      body: '{"externalId":"imp-1","firstName":"A"}\n{"externalId":"imp-2"}\n',
    });
    const imp = await r.json();
    assert.equal(r.status, 202, JSON.stringify(imp));
    const cancel = await api().post(`/crm/imports/${imp.uuid}/cancel`);
    const rows = (await log()).filter((x) => x.action.startsWith('import.'));
    const started = rows.find((x) => x.action === 'import.started');
    assert.deepEqual(started.target, { type: 'Import', id: imp.uuid });
    assert.deepEqual(started.details, { format: 'ndjson', events: false, rowsReceived: 2 });
    assert.equal(started.actor.uuid, (await adminUuid()).uuid);
    // No import worker runs in this test server: the import waits, and cancelling it succeeds once.
    assert.equal(cancel.status, 200, cancel.text);
    assert.deepEqual(rows.filter((x) => x.action === 'import.cancelled').map((x) => x.target.id), [imp.uuid]);
    assert.equal((await api().post(`/crm/imports/${imp.uuid}/cancel`)).status, 409);
    assert.equal((await log('&action=import.cancelled')).length, 1, 'a refused cancel is not an act');
  });

  it('records the automatic disabling of a failing subscription with actor system, in its transaction', async () => {
    const rx = await startReceiver(status(500));
    const worker = await startWorker(ctx.tdb.db, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '600' });
    try {
      const sub = (await api().withVersion('2025-04').post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate' })).body;
      // It has been failing for longer than BULB_WEBHOOK_DISABLE_AFTER_HOURS (120), the last time an hour ago: the next failure disables it.
      await ctx.tdb.db.query(`UPDATE webhook_subscriptions SET failing_since = now() - interval '200 hours', last_failure_at = now() - interval '1 hour', consecutive_failures = 40 WHERE uuid = $1`, [sub.uuid]);
      assert.equal((await api().post(`/integrations/webhooks/subscriptions/${sub.uuid}/test`)).status, 202);
      const row = await waitFor(async () => (await log('&actor=system&action=subscription.disabled')).find((x) => x.target.id === sub.uuid), 'the system audit row');
      assert.deepEqual(row.actor, { type: 'system', uuid: null, name: null });
      assert.equal(row.ipAddress, null);
      assert.match(String(row.details.reason), /no successful delivery attempt for 120 hours/);
      assert.equal((await api().get(`/integrations/webhooks/subscriptions/${sub.uuid}`)).body.isActive, false);
    } finally {
      await worker.stop();
      await rx.close();
    }
  });

  it('a broker URL\'s password is *** in the details of subscription acts, in the API and the table; migration 064 redacts the rows written before', async () => {
    const passwords = ['AuditLeakPw_42', 'PatchLeakPw_43', 'Disable%2FPw_44', 'OldLeakPw_45'];
    const created = await api().post(subs, { url: 'nats://alice:AuditLeakPw_42@127.0.0.1:4222?subject=audit.x', eventTypes: ['customerCreate'], isActive: false });
    assert.equal(created.status, 201, created.text);
    const uuid = created.body.uuid;
    const changed = await api().patch(`${subs}/${uuid}`, { url: 'amqp://guest:PatchLeakPw_43@127.0.0.1:5672/?exchange=audit.x' });
    assert.equal(changed.status, 200, changed.text);
    const disabled = await api().patch(`${subs}/${uuid}`, { url: 'amqps://bob:Disable%2FPw_44@127.0.0.1/?exchange=audit.x', isActive: false });
    assert.equal(disabled.status, 200, disabled.text);
    const rows = (await log()).filter((r) => r.target.id === uuid).reverse();
    assert.deepEqual(rows.map((r) => [r.action, r.details.url]), [
      ['subscription.created', 'nats://alice:***@127.0.0.1:4222?subject=audit.x'],
      ['subscription.changed', 'amqp://guest:***@127.0.0.1:5672/?exchange=audit.x'],
      // Created inactive: isActive:false with a new URL changes it, it disables nothing.
      ['subscription.changed', 'amqps://bob:***@127.0.0.1/?exchange=audit.x'],
    ], 'shown as the subscription API shows it');
    const stored = async () => (await ctx.tdb.db.query(`SELECT string_agg(details::text, ' ') AS t FROM audit_log`)).rows[0].t as string;
    for (const pw of passwords) assert.ok(!(await stored()).includes(pw), `audit_log holds ${pw}`);

    // Rows an older Bulb wrote: the request's URL as given, password and all.
    const db = ctx.tdb.db;
    const old = { actor: SYSTEM, targetType: 'WebhookSubscription', targetId: uuid, ip: null };
    await appendAudit(db, { ...old, action: 'subscription.changed', details: { url: 'amqp://carol:OldLeakPw_45@broker.example:5672/?exchange=x', maxInFlight: 4 } });
    await appendAudit(db, { ...old, action: 'subscription.created', details: { url: 'http://127.0.0.1:9/hook@x', eventTypes: ['customerCreate'] } });
    await appendAudit(db, { ...old, action: 'merge.created', details: { primary: 'ext://id:kept@as-is' } }); // not a subscription's act
    const before = (await log()).slice(0, 3);
    assert.match(JSON.stringify(before), /OldLeakPw_45/);
    await db.query('DELETE FROM schema_migrations WHERE version = 64');
    assert.deepEqual(await migrate(db), ['064_audit_url_passwords.sql']);
    const after = (await log()).slice(0, 3);
    assert.deepEqual(after[2].details, { url: 'amqp://carol:***@broker.example:5672/?exchange=x', maxInFlight: 4 });
    assert.deepEqual(after.slice(0, 2), before.slice(0, 2), 'other rows untouched');
    for (const pw of passwords) assert.ok(!(await stored()).includes(pw), `audit_log holds ${pw} after 064`);
    await assert.rejects(db.query(`UPDATE audit_log SET action = 'x'`), /append-only/, 'still append-only');
  });

  const subs = '/integrations/webhooks/subscriptions';
  /** A subscription made with `body`, and a PATCH of it that answers 200 with the subscription. */
  const subscription = async (body: object) => {
    const created = await api().post(subs, { eventTypes: ['customerCreate'], ...body });
    assert.equal(created.status, 201, created.text);
    const uuid: string = created.body.uuid;
    const patch = async (change: object) => {
      const r = await api().patch(`${subs}/${uuid}`, change);
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    return { uuid, patch };
  };

  it('a PATCH that changes nothing is no act: no row, and its updatedAt stays (isActive:false of an inactive one was recorded again)', async () => {
    const { uuid, patch } = await subscription({ url: 'http://127.0.0.1:9/noop', authMethod: 'BEARER', bearerToken: 'tok-noop' });
    const acts = async (target: string) => (await log()).filter((r) => r.target.id === target).reverse().map((r) => r.action);
    const off = await patch({ isActive: false });
    const offAgain = await patch({ isActive: false });
    assert.deepEqual(await acts(uuid), ['subscription.created', 'subscription.disabled'], 'disabled once');
    assert.equal(offAgain.updatedAt, off.updatedAt);
    assert.equal((await api().get(`${subs}/${uuid}`)).body.updatedAt, off.updatedAt);
    // The same body twice, a credential in it given again as it is: the second is no act.
    const moved = await patch({ url: 'http://127.0.0.1:9/noop2', bearerToken: 'tok-noop' });
    assert.equal((await patch({ url: 'http://127.0.0.1:9/noop2', bearerToken: 'tok-noop' })).updatedAt, moved.updatedAt);
    // Another token is a change, though the answer shows none.
    assert.notEqual((await patch({ bearerToken: 'tok-other' })).updatedAt, moved.updatedAt);
    // A broker URL's password given again as it is: no act; another one: an act.
    const broker = await api().post(subs, { url: 'nats://alice:NoopPw_1@127.0.0.1:4222?subject=noop.x', eventTypes: ['customerCreate'], isActive: false });
    assert.equal(broker.status, 201, broker.text);
    const brokerPatch = (url: string) => api().patch(`${subs}/${broker.body.uuid}`, { url });
    assert.equal((await brokerPatch('nats://alice:NoopPw_1@127.0.0.1:4222?subject=noop.x')).status, 200);
    assert.equal((await brokerPatch('nats://alice:NoopPw_2@127.0.0.1:4222?subject=noop.x')).status, 200);
    assert.deepEqual(await acts(uuid), ['subscription.created', 'subscription.disabled', 'subscription.changed', 'subscription.changed']);
    assert.deepEqual(await acts(broker.body.uuid), ['subscription.created', 'subscription.changed']);
  });

  it('a PATCH is recorded as disabled only when it disables: isActive:false with a new URL of an inactive one is a change, a re-activation too', async () => {
    const { uuid, patch } = await subscription({ url: 'http://127.0.0.1:9/acts' });
    const acts = async () => (await log()).filter((r) => r.target.id === uuid).reverse().map((r) => [r.action, r.details]);
    assert.equal((await patch({ isActive: false })).isActive, false);
    // Inactive already: its URL changes, it is not disabled again (this was recorded as subscription.disabled).
    assert.equal((await patch({ isActive: false, url: 'http://127.0.0.1:9/acts2' })).url, 'http://127.0.0.1:9/acts2');
    assert.equal((await patch({ isActive: true })).isActive, true);
    // Active, and a new URL with isActive:false: disabled (and its URL in the details).
    assert.equal((await patch({ url: 'http://127.0.0.1:9/acts3', isActive: false })).isActive, false);
    assert.deepEqual(await acts(), [
      ['subscription.created', { url: 'http://127.0.0.1:9/acts', eventTypes: ['customerCreate'] }],
      ['subscription.disabled', { isActive: false }],
      ['subscription.changed', { isActive: false, url: 'http://127.0.0.1:9/acts2' }],
      ['subscription.changed', { isActive: true }],
      ['subscription.disabled', { url: 'http://127.0.0.1:9/acts3', isActive: false }],
    ]);
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
