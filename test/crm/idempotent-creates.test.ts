// Idempotency-Key on the creates (2026-11-29): a client that retries a create after a lost answer, with its key,
// gets the first answer back (201, the same body, Idempotent-Replayed: true) and nothing is made twice. Before, the
// header was read only by the merge doors, undo and replays: a retried create made a second customer (externalId is
// optional), a second order (an order's externalId is not unique), a second subscription (every event then delivered
// twice). The same key with another body is a 409, as on the merge.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';

await describeEachDb('Idempotency-Key on creates', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const count = async (sql: string, params: unknown[] = []) => Number((await ctx.tdb.db.query<{ n: string }>(`SELECT count(*) AS n FROM ${sql}`, params)).rows[0].n);
  const key = (k: string) => ({ 'idempotency-key': k });

  /** Posts the body twice under one key, then another body under it: the first is made once and answered twice. */
  async function once(path: string, body: Record<string, unknown>, other: Record<string, unknown>, k: string) {
    const first = await api().post(path, body, key(k));
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const retry = await api().post(path, body, key(k));
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    const clash = await api().post(path, other, key(k));
    assert.equal(clash.status, 409, clash.text);
    assert.equal(clash.body.errors[0].moreInfo, 'Idempotency-Key');
    return first.body;
  }

  it('a customer without an externalId, retried with its key, is created once, with one customerCreate event', async () => {
    const c = await once('/crm/customers', { firstName: 'Once', lastName: 'Only' }, { firstName: 'Other' }, 'cust-1');
    assert.equal(await count(`customers WHERE first_name = 'Once'`), 1);
    assert.equal(await count(`events WHERE event_type = 'customerCreate' AND resource_uuid = $1`, [c.uuid]), 1);
    // Without a key a retry is another request, as before.
    assert.equal((await api().post('/crm/customers', { firstName: 'Once', lastName: 'Only' })).status, 201);
    assert.equal(await count(`customers WHERE first_name = 'Once'`), 2);
  });

  it('an order, a note, an associate and a customer attribute, each retried with its key, are made once', async () => {
    const c = (await api().post('/crm/customers', { externalId: 'idem-c' })).body;
    const order = { externalId: 'o-1', orderedAt: '2026-11-01T00:00:00.000Z', currency: 'USD', total: '10.00', lineItems: [] };
    await once('/crm/customers/idem-c/orders', order, { ...order, total: '11.00' }, 'order-1');
    assert.equal(await count(`orders WHERE customer_id = (SELECT id FROM customers WHERE uuid = $1)`, [c.uuid]), 1);
    const note = { customer: 'idem-c', type: 'CUSTOMER_NOTE', comments: 'called' };
    await once('/crm/customerNotes', note, { ...note, comments: 'called again' }, 'note-1');
    assert.equal(await count(`notes WHERE comments = 'called'`), 1);
    await once('/crm/associates', { externalId: 'a-1', firstName: 'Ann' }, { externalId: 'a-2' }, 'assoc-1');
    assert.equal(await count(`associates WHERE external_id = 'a-1'`), 1);
    await once('/crm/customerAttributes', { externalId: 'shoe-size' }, { externalId: 'hat-size' }, 'attr-1');
    assert.equal(await count(`customer_attributes WHERE external_id = 'shoe-size'`), 1);
  });

  it('a subscription retried with its key is made once; the replay shows its signing secret, which the key does not keep', async () => {
    const body = { url: 'http://127.0.0.1:9/once', eventTypes: ['customerCreate'] };
    const sub = await once('/integrations/webhooks/subscriptions', body, { ...body, url: 'http://127.0.0.1:9/other' }, 'sub-1');
    assert.match(sub.signingSecret, /^whsec_/);
    assert.equal(await count(`webhook_subscriptions WHERE url = $1`, [body.url]), 1);
    const kept = (await ctx.tdb.db.query<{ body: unknown }>(`SELECT body::text AS body FROM idempotency_keys WHERE key = 'sub-1'`)).rows[0].body as string;
    assert.ok(kept.includes(sub.uuid) && !kept.includes(sub.signingSecret), kept);
    // Rotated since: the replay does not show the new secret (GET …/secret does, and audits it).
    const audits = async () => Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM audit_log WHERE target_id = $1`, [sub.uuid])).rows[0].n);
    const before = await audits();
    assert.equal((await api().post(`/integrations/webhooks/subscriptions/${sub.uuid}/rotateSecret`)).status, 200);
    const rotated = await api().post('/integrations/webhooks/subscriptions', body, key('sub-1'));
    assert.equal(rotated.status, 409, rotated.text);
    assert.match(rotated.body.errors[0].message, /rotated since/);
    assert.ok(!rotated.text.includes('whsec_'));
    assert.equal(await audits(), before + 1, 'the rotation only');
    // Deleted since: the replay says so (409), rather than show the secret of a subscription that is gone.
    assert.equal((await api().delete(`/integrations/webhooks/subscriptions/${sub.uuid}`)).status, 204);
    const gone = await api().post('/integrations/webhooks/subscriptions', body, key('sub-1'));
    assert.equal(gone.status, 409, gone.text);
    assert.match(gone.body.errors[0].message, /deleted since/);
  });

  it('an undo retried with {} under its key is replayed: a route that takes no body takes none, null and {} alike', async () => {
    for (const id of ['u-p', 'u-s']) assert.equal((await api().post('/crm/customers', { externalId: id })).status, 201);
    const merged = await api().post('/crm/customers/u-p/merge', { mergeWithCustomerIds: ['u-s'] });
    assert.equal(merged.status, 200, merged.text);
    const path = `/crm/merges/${merged.body.mergeUuid}/undo`;
    const first = await api().post(path, undefined, key('undo-1'));
    assert.equal(first.status, 200, first.text);
    for (const sent of ['{}', 'null']) {
      const retry = await api().post(path, sent, key('undo-1'));
      assert.equal(retry.status, 200, `${sent}: ${retry.text}`);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    }
  });
}, { BULB_WEBHOOK_ALLOW_PRIVATE: 'true' });
