// The customer merge (SPEC §6): what moves and what stays, association dedupe, chains, dry run,
// idempotent repeat, Idempotency-Key replay, validation leaving the database unchanged, the three
// doors, merge history, reading a merged-away customer.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { attach, countsOf, makeAssociate, makeCustomer, snapshot, type Made } from './fixtures.ts';

await describeEachDb('customer merge', (ctx) => {
  const api = () => ctx.srv.api;
  const db = () => ctx.tdb.db;
  const merge = (primary: string, ids: string[], headers?: Record<string, string>, query = '') =>
    api().post(`/crm/customers/${encodeURIComponent(primary)}/merge${query}`, { mergeWithCustomerIds: ids }, headers);
  const eventsOf = async (since: number) =>
    (await db().query(`SELECT event_type, resource_external_id FROM events WHERE id > $1 ORDER BY id`, [since])).rows.map((e) => `${e.event_type}:${e.resource_external_id}`);
  const lastEventId = async () => Number((await db().query('SELECT coalesce(max(id), 0) AS m FROM events')).rows[0].m);

  /** A primary and two secondaries, each with n rows of every kind; p.assoc and s1.assoc overlap on one associate. */
  async function trio(prefix: string, n = 2) {
    const [a1, a2, a3] = [await makeAssociate(db(), `${prefix}-a1`), await makeAssociate(db(), `${prefix}-a2`), await makeAssociate(db(), `${prefix}-a3`)];
    const p = await makeCustomer(db(), `${prefix}-p`, { email: `${prefix}-p@x.example`, loyaltyTier: 'gold' });
    const s1 = await makeCustomer(db(), `${prefix}-s1`, { email: `${prefix}-s1@x.example`, loyaltyTier: 'silver' });
    const s2 = await makeCustomer(db(), `${prefix}-s2`, { email: `${prefix}-s2@x.example` });
    await attach(db(), p.id, n, [a1], 'primary-role');
    await attach(db(), s1.id, n, [a1, a2], 's1-role');
    await attach(db(), s2.id, n, [a2, a3], 's2-role');
    return { p, s1, s2, a: [a1, a2, a3] };
  }

  it('moves every kind of attached data, leaves contact data on the secondaries, disables them', async () => {
    const { p, s1, s2 } = await trio('mv', 3);
    const before = await api().get(`/crm/customers/${p.uuid}`);
    const cp = await countsOf(db(), p.id);
    const c1 = await countsOf(db(), s1.id);
    const c2 = await countsOf(db(), s2.id);
    const ev0 = await lastEventId();
    const r = await merge('mv-p', ['mv-s1', 'mv-s2']);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.dryRun, false);
    assert.match(r.body.mergeUuid, /^[0-9a-f-]{36}$/);
    assert.deepEqual(r.body.mergedCustomerIds, ['mv-s1', 'mv-s2']);
    assert.deepEqual(r.body.moved, { orders: 6, followUps: 6, notes: 30, messages: 6, preferences: 6, productShares: 6, associates: 2 });
    assert.equal(r.body.duplicateAssociatesRemoved, 2);
    const after = await countsOf(db(), p.id);
    for (const t of ['orders', 'follow_ups', 'notes', 'messages', 'preferences', 'product_shares']) {
      assert.equal(after[t], cp[t] + c1[t] + c2[t], t);
    }
    for (const s of [s1, s2]) assert.deepEqual(Object.values(await countsOf(db(), s.id)), [0, 0, 0, 0, 0, 0, 0], 'nothing left on a secondary');
    const notesByType = (await db().query(`SELECT type, count(*)::int AS n FROM notes WHERE customer_id = $1 GROUP BY type ORDER BY type`, [p.id])).rows;
    assert.deepEqual(notesByType.map((x) => [x.type, x.n]), [['CUSTOMER_NOTE', 9], ['CUSTOMER_OPTIN_LOG', 9], ['CUSTOMER_PHONE_LOG', 9], ['CUSTOMER_SOCIAL_LOG', 9], ['CUSTOMER_VIDEO_LOG', 9]]);
    // Secondaries: disabled, pointing at the primary, contact data and loyalty tier untouched.
    const g1 = (await api().get('/crm/customers/mv-s1')).body;
    assert.equal(g1.status, 'disabled');
    assert.deepEqual(g1.mergedInto, { uuid: p.uuid, externalId: 'mv-p' });
    assert.equal(g1.emails[0].email, 'mv-s1@x.example');
    assert.equal(g1.phones.length, 1);
    assert.equal(g1.addresses.length, 1);
    assert.deepEqual(g1.socialProfiles, [{ network: 'instagram', handle: 'mv-s1' }]);
    assert.equal(g1.loyaltyTier, 'silver');
    // Primary: same state, its own contact data only, updatedAt renewed.
    assert.equal(r.body.primary.status, 'active');
    assert.deepEqual(r.body.primary.emails, before.body.emails);
    assert.equal(r.body.primary.loyaltyTier, 'gold');
    assert.ok(r.body.primary.updatedAt > before.body.updatedAt, 'updatedAt renewed');
    assert.deepEqual((await eventsOf(ev0)).sort(), ['customerMerge:mv-p', 'customerUpdate:mv-p', 'customerUpdate:mv-s1', 'customerUpdate:mv-s2']);
    // The disabled secondaries are listed only with status=disabled.
    const disabled = await api().get('/crm/customers?status=disabled&limit=250');
    assert.ok(disabled.body.data.some((c: any) => c.externalId === 'mv-s2'));
  });

  it('removes duplicate associations, one per associate, the primary\'s own row winning', async () => {
    const { p, s1, s2, a } = await trio('dd', 1);
    const total = (await db().query('SELECT count(*)::int AS n FROM customer_associates WHERE customer_id = ANY($1::bigint[])', [[p.id, s1.id, s2.id]])).rows[0].n;
    assert.equal(total, 5);
    const r = await merge('dd-p', ['dd-s1', 'dd-s2']);
    assert.equal(r.status, 200);
    const rows = (await db().query('SELECT associate_id, role FROM customer_associates WHERE customer_id = $1 ORDER BY associate_id', [p.id])).rows;
    assert.deepEqual(rows.map((x) => x.associate_id), a, 'one row per associate');
    assert.equal(rows[0].role, 'primary-role', "the primary's association kept");
    assert.equal(rows[1].role, 's1-role', 'the oldest duplicate kept');
    const left = (await db().query('SELECT count(*)::int AS n FROM customer_associates WHERE customer_id = ANY($1::bigint[])', [[p.id, s1.id, s2.id]])).rows[0].n;
    assert.equal(left, 3);
    assert.equal(r.body.duplicateAssociatesRemoved, total - left);
    const list = await api().get(`/crm/customers/${p.uuid}/associates`);
    assert.equal(list.body.data.length, 3);
  });

  it('flattens chains: customers merged into a secondary now point to the final primary', async () => {
    const x = await makeCustomer(db(), 'ch-x');
    const y = await makeCustomer(db(), 'ch-y');
    const s = await makeCustomer(db(), 'ch-s');
    const p = await makeCustomer(db(), 'ch-p');
    await attach(db(), x.id, 1);
    assert.equal((await merge('ch-s', ['ch-x', 'ch-y'])).status, 200);
    assert.equal((await countsOf(db(), s.id)).orders, 1);
    const ev0 = await lastEventId();
    const r = await merge('ch-p', ['ch-s']);
    assert.equal(r.status, 200);
    assert.equal(r.body.moved.orders, 1, "x's order reached the primary through s");
    for (const ext of ['ch-x', 'ch-y', 'ch-s']) {
      const g = (await api().get(`/crm/customers/${ext}`)).body;
      assert.equal(g.status, 'disabled');
      assert.deepEqual(g.mergedInto, { uuid: p.uuid, externalId: 'ch-p' }, ext);
    }
    const direct = (await db().query('SELECT count(*)::int AS n FROM customers WHERE merged_into = $1', [s.id])).rows[0].n;
    assert.equal(direct, 0, 'nobody points at a disabled customer');
    assert.ok((await eventsOf(ev0)).includes('customerUpdate:ch-x'), 're-pointed customers get a customerUpdate');
    // x is now merged into p: naming it again for p counts as done; for another primary it is a 403.
    const again = await merge('ch-p', ['ch-x']);
    assert.equal(again.status, 200);
    assert.equal(again.body.mergeUuid, null);
    await makeCustomer(db(), 'ch-other');
    const elsewhere = await merge('ch-other', ['ch-x']);
    assert.equal(elsewhere.status, 403);
    assert.deepEqual(errorCodes(elsewhere), ['CustomerDisabled']);
    void x; void y;
  });

  it('the survivor\'s externalId changed: its merged-away customers show it, are marked changed and get a customerUpdate each', async () => {
    await makeCustomer(db(), 'rn-p');
    await makeCustomer(db(), 'rn-s1');
    await makeCustomer(db(), 'rn-s2');
    assert.equal((await merge('rn-p', ['rn-s1', 'rn-s2'])).status, 200);
    const v = ctx.srv.api.withVersion('2026-11');
    const before = (await v.get('/crm/customers/rn-s1')).body.updatedAt;
    const ev0 = await lastEventId();
    const since = new Date(Date.now() - 1).toISOString();
    for (const [path, body] of [['/crm/customers/rn-p', { externalId: 'rn-p2' }], ['/crm/customers/rn-p2', { externalId: 'rn-p3', firstName: 'P' }]] as const) {
      const r = path.endsWith('p2') ? await v.patch(path, body) : await v.put(path, body);
      assert.equal(r.status, 200, r.text);
    }
    const s1 = (await v.get('/crm/customers/rn-s1')).body;
    assert.deepEqual(s1.mergedInto?.externalId, 'rn-p3');
    assert.ok(s1.updatedAt > before, 'its updatedAt moved with what it shows');
    const synced = (await v.get(`/crm/customers?status=all&updatedSince=${encodeURIComponent(since)}&limit=50`)).body.data.map((c: any) => c.externalId).sort();
    assert.deepEqual(synced, ['rn-p3', 'rn-s1', 'rn-s2'], 'an updatedSince sync sees them');
    const evs = await eventsOf(ev0);
    assert.deepEqual(evs.filter((e) => e === 'customerUpdate:rn-s1').length, 2, evs.join());
    assert.deepEqual(evs.filter((e) => e === 'customerUpdate:rn-s2').length, 2, evs.join());
    // a change that leaves the externalId as it was marks nobody else
    const ev1 = await lastEventId();
    assert.equal((await v.patch('/crm/customers/rn-p3', { firstName: 'Q' })).status, 200);
    assert.deepEqual(await eventsOf(ev1), ['customerUpdate:rn-p3']);
  });

  it('dry run computes the same counts and changes nothing', async () => {
    await trio('dry', 2);
    const snap = await snapshot(db());
    const preview = await merge('dry-p', ['dry-s1', 'dry-s2'], {}, '?dryRun=true');
    assert.equal(preview.status, 200, preview.text);
    assert.equal(preview.body.dryRun, true);
    assert.equal(preview.body.mergeUuid, null);
    assert.equal(await snapshot(db()), snap, 'database unchanged');
    assert.equal((await api().get('/crm/customers/dry-s1')).body.status, 'active');
    const real = await merge('dry-p', ['dry-s1', 'dry-s2']);
    assert.equal(real.status, 200);
    assert.deepEqual(preview.body.moved, real.body.moved);
    assert.equal(preview.body.duplicateAssociatesRemoved, real.body.duplicateAssociatesRemoved);
    assert.ok(real.body.moved.orders > 0);
  });

  it('repeating a completed merge answers 200 and changes nothing (no events)', async () => {
    await trio('rep', 1);
    const first = await merge('rep-p', ['rep-s1', 'rep-s2']);
    assert.equal(first.status, 200);
    const snap = await snapshot(db());
    const again = await merge('rep-p', ['rep-s1', 'rep-s2']);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.moved, { orders: 0, followUps: 0, notes: 0, messages: 0, preferences: 0, productShares: 0, associates: 0 });
    assert.equal(again.body.mergeUuid, null);
    assert.equal(again.body.primary.updatedAt, first.body.primary.updatedAt);
    assert.equal(await snapshot(db()), snap, 'no row, event or merge record written');
    // Partly done: only the new secondary is merged.
    const s3 = await makeCustomer(db(), 'rep-s3');
    await attach(db(), s3.id, 1);
    const ev0 = await lastEventId();
    const partial = await merge('rep-p', ['rep-s1', 'rep-s3']);
    assert.equal(partial.status, 200);
    assert.equal(partial.body.moved.orders, 1);
    assert.deepEqual((await eventsOf(ev0)).sort(), ['customerMerge:rep-p', 'customerUpdate:rep-p', 'customerUpdate:rep-s3']);
  });

  it('Idempotency-Key replays the first answer; another request with the key is a 409', async () => {
    await trio('idk', 1);
    const h = { 'idempotency-key': 'merge-idk-1' };
    const first = await merge('idk-p', ['idk-s1'], h);
    assert.equal(first.status, 200);
    assert.ok(first.body.mergeUuid);
    const snap = await snapshot(db());
    const replay = await merge('idk-p', ['idk-s1'], h);
    assert.equal(replay.status, 200);
    assert.deepEqual(replay.body, first.body, 'the very same answer (same mergeUuid and counts, not the no-op answer)');
    assert.equal(replay.text, first.text, 'byte for byte (the stored answer keeps its key order)');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(await snapshot(db()), snap);
    const other = await merge('idk-p', ['idk-s2'], h);
    assert.equal(other.status, 409);
    assert.deepEqual(errorCodes(other), ['Conflict']);
    assert.equal(other.body.errors[0].moreInfo, 'Idempotency-Key');
    assert.equal((await api().get('/crm/customers/idk-s2')).body.status, 'active');
    // A failed request does not burn its key.
    const h2 = { 'idempotency-key': 'merge-idk-2' };
    assert.equal((await merge('idk-p', ['idk-s2', 'idk-late'], h2)).status, 404);
    await makeCustomer(db(), 'idk-late');
    assert.equal((await merge('idk-p', ['idk-s2', 'idk-late'], h2)).status, 200);
    // Legacy doors honour the key too.
    await makeCustomer(db(), 'idk-s4');
    const legacy = api().withVersion('2022-08');
    const l1 = await legacy.put('/crm/customers/idk-p/merge_by_external_id', { ids: ['idk-s4'] }, { 'idempotency-key': 'merge-idk-3' });
    const l2 = await legacy.put('/crm/customers/idk-p/merge_by_external_id', { ids: ['idk-s4'] }, { 'idempotency-key': 'merge-idk-3' });
    assert.equal(l1.status, 200);
    assert.deepEqual(l2.body, l1.body);
    assert.equal(l2.text, l1.text, 'byte for byte');
    assert.equal(l2.headers.get('idempotent-replayed'), 'true');
    const bad = await merge('idk-p', ['idk-s1'], { 'idempotency-key': 'x'.repeat(300) });
    assert.equal(bad.status, 400);
  });

  it('validates everything before changing anything, listing every problem', async () => {
    await trio('val', 1);
    const done = await makeCustomer(db(), 'val-done');
    const elsewhere = await makeCustomer(db(), 'val-elsewhere');
    assert.equal((await merge('val-elsewhere', ['val-done'])).status, 200);
    void done; void elsewhere;
    const snap = await snapshot(db());
    const cases: [string, () => Promise<any>, number, string[]][] = [
      ['missing field', () => api().post('/crm/customers/val-p/merge', {}), 400, ['InvalidParameterError']],
      ['empty list', () => merge('val-p', []), 400, ['InvalidParameterError']],
      ['101 ids', () => merge('val-p', Array.from({ length: 101 }, (_, i) => `val-x${i}`)), 400, ['InvalidParameterError']],
      ['empty id', () => merge('val-p', ['']), 400, ['InvalidParameterError']],
      ['not strings', () => api().post('/crm/customers/val-p/merge', { mergeWithCustomerIds: [1, true] }), 400, ['InvalidParameterError', 'InvalidParameterError']],
      // String() of a deeply nested array overflowed the stack before the items were checked: a 500.
      ['nested 5,000 deep', () => api().post('/crm/customers/val-p/merge', `{"mergeWithCustomerIds":[${'['.repeat(5000)}${']'.repeat(5000)}]}`), 400, ['InvalidParameterError']],
      ['legacy: nested 5,000 deep', () => api().withVersion('2022-04').put('/crm/customers/val-p/merge', `{"ids":[${'['.repeat(5000)}${']'.repeat(5000)}]}`), 400, ['InvalidParameterError']],
      ['unknown field', () => api().post('/crm/customers/val-p/merge', { mergeWithCustomerIds: ['val-s1'], force: true }), 400, ['InvalidParameterError']],
      ['not JSON', () => api().post('/crm/customers/val-p/merge', '{"mergeWithCustomerIds":'), 400, ['InvalidJson']],
      ['duplicates', () => merge('val-p', ['val-s1', 'val-s2', 'val-s1', 'val-s2']), 400, ['InvalidParameterError', 'InvalidParameterError']],
      ['primary in list', () => merge('val-p', ['val-s1', 'val-p']), 400, ['InvalidParameterError']],
      ['unknown ids', () => merge('val-nobody', ['val-s1', 'val-ghost1', 'val-ghost2']), 404, ['NotFound', 'NotFound', 'NotFound']],
      // 403 for a refusal due to the resource's state: https://docs.tulip.com/integrating/aerial/errors/troubleshooterrors
      ['disabled primary', () => merge('val-done', ['val-s1']), 403, ['CustomerDisabled']],
      ['secondary merged elsewhere', () => merge('val-p', ['val-s1', 'val-done']), 403, ['CustomerDisabled']],
      ['bad dryRun', () => merge('val-p', ['val-s1'], {}, '?dryRun=maybe'), 400, ['InvalidParameterError']],
      ['legacy: not a uuid', () => api().withVersion('2022-04').put('/crm/customers/val-p/merge', { ids: ['val-s1'] }), 400, ['InvalidParameterError']],
    ];
    for (const [name, run, status, codes] of cases) {
      const r = await run();
      assert.equal(r.status, status, `${name}: ${r.text}`);
      assert.deepEqual(errorCodes(r), codes, name);
      assert.equal(await snapshot(db()), snap, `${name} left the database unchanged`);
    }
    // Every problem of the list in one answer, in list order: an item the schema refuses hid the repeats and the primary.
    const all = await merge('val-p', ['val-s1', 'val-s1', 'val-p', '', 'x'.repeat(256)]);
    assert.equal(all.status, 400, all.text);
    assert.deepEqual(all.body.errors.map((e: any) => e.moreInfo), ['mergeWithCustomerIds.1', 'mergeWithCustomerIds.2', 'mergeWithCustomerIds.3', 'mergeWithCustomerIds.4']);
    assert.match(all.body.errors[2].message, /"mergeWithCustomerIds\.3" must NOT have fewer than 1 characters/);
    // One notation in one answer: field.index, as the schema's problems are named.
    assert.match(all.body.errors[0].message, /^"mergeWithCustomerIds\.1" repeats "val-s1"$/);
    assert.match(all.body.errors[1].message, /^"mergeWithCustomerIds\.2" is the primary customer itself/);
    const legacyAll = await api().withVersion('2022-04').put('/crm/customers/1/merge', { ids: [7, 7, 'val-s1', { x: 1 }] });
    assert.equal(legacyAll.status, 400, legacyAll.text);
    assert.deepEqual(legacyAll.body.errors.map((e: any) => e.moreInfo), ['ids.1', 'ids.2', 'ids.3']);
    assert.equal(await snapshot(db()), snap, 'left the database unchanged');
    const nf = await merge('val-nobody', ['val-s1', 'val-ghost1', 'val-ghost2']);
    assert.deepEqual(nf.body.errors.map((e: any) => e.message), ['customer "val-nobody" not found', 'customer "val-ghost1" not found', 'customer "val-ghost2" not found']);
    const dp = await merge('val-done', ['val-s1']);
    assert.match(dp.body.errors[0].moreInfo, /val-elsewhere/, 'moreInfo names mergedInto');
    const both = await merge('val-done', ['val-s1', 'val-done2']);
    assert.equal(both.status, 404, 'unknown ids are reported before conflicts');
  });

  it('the three doors have the same effect; legacy doors answer the primary customer', async () => {
    const summaries: unknown[] = [];
    const doors: [string, (f: { p: Made; s1: Made; s2: Made }) => Promise<any>][] = [
      ['2025-04', (f) => merge(f.p.externalId, [f.s1.externalId, f.s2.externalId])],
      ['2022-04 by uuid', (f) => api().withVersion('2022-04').put(`/crm/customers/${f.p.uuid}/merge`, { ids: [f.s1.uuid, f.s2.uuid.toUpperCase()] })],
      ['legacy prefix by externalId', (f) => api().put(`/tulip_api/v2/crm/customers/${f.p.externalId}/merge_by_external_id`, { ids: [f.s1.externalId, f.s2.externalId] })],
    ];
    for (const [i, [name, door]] of doors.entries()) {
      const f = await trio(`door${i}`, 2);
      const ev0 = await lastEventId();
      const r = await door(f);
      assert.equal(r.status, 200, `${name}: ${r.text}`);
      if (i > 0) {
        assert.equal(r.body.uuid, f.p.uuid, `${name} answers the primary Customer`);
        assert.equal(r.body.status, 'active');
        assert.equal(r.body.moved, undefined);
      }
      const s1 = (await api().get(`/crm/customers/${f.s1.uuid}`)).body;
      summaries.push({
        primary: await countsOf(db(), f.p.id),
        secondaries: [await countsOf(db(), f.s1.id), await countsOf(db(), f.s2.id)],
        s1: [s1.status, s1.mergedInto.uuid === f.p.uuid],
        events: (await eventsOf(ev0)).map((e) => e.split(':')[0]).sort(),
        merges: (await api().get(`/crm/customers/${f.p.uuid}/merges`)).body.data.length,
      });
    }
    assert.deepEqual(summaries[1], summaries[0]);
    assert.deepEqual(summaries[2], summaries[0]);
    // Each door only in its versions.
    assert.deepEqual(errorCodes(await api().withVersion('2022-08').post('/crm/customers/x/merge', { mergeWithCustomerIds: ['y'] })), ['EndpointNotInVersion']);
    assert.deepEqual(errorCodes(await api().put('/crm/customers/x/merge_by_external_id', { ids: ['y'] })), ['EndpointNotInVersion']);
  });

  it('keeps a merge history per customer, as primary or secondary', async () => {
    const { p, s1 } = await trio('hist', 1);
    const s9 = await makeCustomer(db(), 'hist-s9');
    await merge('hist-p', ['hist-s1']);
    await merge('hist-p', ['hist-s9']);
    const h = await api().get(`/crm/customers/${p.uuid}/merges`);
    assert.equal(h.status, 200);
    assert.equal(h.body.data.length, 2);
    assert.deepEqual(h.body.data[0].secondaries, [{ uuid: s1.uuid, externalId: 'hist-s1' }]);
    assert.equal(h.body.data[0].primary.externalId, 'hist-p');
    assert.equal(h.body.data[0].moved.orders, 1);
    assert.match(h.body.data[0].tokenUuid, /^[0-9a-f-]{36}$/);
    const page = await api().get(`/crm/customers/hist-p/merges?limit=1`);
    assert.equal(page.body.data.length, 1);
    assert.ok(page.body.nextCursor);
    const asSecondary = await api().get('/crm/customers/hist-s9/merges');
    assert.deepEqual(asSecondary.body.data.map((m: any) => m.secondaries[0].uuid), [s9.uuid]);
    assert.equal((await api().get('/crm/customers/hist-s2/merges')).body.data.length, 0);
    assert.equal((await api().get('/crm/customers/hist-nobody/merges')).status, 404);
  });

  it('refuses attached data for a merged-away customer', async () => {
    await trio('att', 1);
    await merge('att-p', ['att-s1']);
    const r = await api().post('/crm/customers/att-s1/preferences', { category: 'c', value: 'v' });
    assert.equal(r.status, 403);
    assert.deepEqual(errorCodes(r), ['CustomerDisabled']);
    assert.deepEqual((await api().get('/crm/customers/att-s1/orders')).body.data, []);
  });
});
