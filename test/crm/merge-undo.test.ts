// Undoing a merge (SPEC §13): exactly the journaled rows go back, removed duplicate associations come
// back, chains are re-pointed, rows added after the merge stay; dry run, Idempotency-Key, events,
// undoneAt in the history, and every MergeNotUndoable refusal (undone already, window, later merge).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { ATTACHED_TABLES, attach, makeAssociate, makeCustomer } from './fixtures.ts';

await describeEachDb('merge undo', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const db = () => ctx.tdb.db;
  const merge = (primary: string, ids: string[]) => api().post(`/crm/customers/${primary}/merge`, { mergeWithCustomerIds: ids });
  const undo = (uuid: string, query = '', headers?: Record<string, string>) => api().post(`/crm/merges/${uuid}/undo${query}`, undefined, headers);
  /** (table, row id, uuid, customer id, associate id, role) of every attached row of these customers. */
  const rowsOf = async (ids: string[]) => {
    const out: string[] = [];
    for (const t of ATTACHED_TABLES) {
      const extra = t === 'customer_associates' ? ', uuid, associate_id, role' : '';
      const r = await db().query(`SELECT id, customer_id${extra} FROM ${t} WHERE customer_id = ANY($1::bigint[]) ORDER BY id`, [ids]);
      out.push(...r.rows.map((x) => `${t}:${JSON.stringify(x)}`));
    }
    return out;
  };
  const customerState = async (ids: string[]) =>
    (await db().query('SELECT id, status, merged_into FROM customers WHERE id = ANY($1::bigint[]) ORDER BY id', [ids])).rows;
  const lastEventId = async () => Number((await db().query('SELECT coalesce(max(id), 0) AS m FROM events')).rows[0].m);
  const eventsSince = async (id: number) =>
    (await db().query('SELECT event_type, resource_external_id FROM events WHERE id > $1 ORDER BY id', [id])).rows.map((e) => `${e.event_type}:${e.resource_external_id}`);

  async function trio(prefix: string) {
    const [a1, a2, a3] = [await makeAssociate(db(), `${prefix}-a1`), await makeAssociate(db(), `${prefix}-a2`), await makeAssociate(db(), `${prefix}-a3`)];
    const p = await makeCustomer(db(), `${prefix}-p`, { email: `${prefix}-p@x.example` });
    const s1 = await makeCustomer(db(), `${prefix}-s1`, { email: `${prefix}-s1@x.example` });
    const s2 = await makeCustomer(db(), `${prefix}-s2`);
    await attach(db(), p.id, 2, [a1], 'p-role');
    await attach(db(), s1.id, 2, [a1, a2], 's1-role');
    await attach(db(), s2.id, 1, [a2, a3], 's2-role');
    return { p, s1, s2, ids: [p.id, s1.id, s2.id] };
  }

  it('puts every moved row back, restores removed associations, reactivates the secondaries', async () => {
    const { p, s1, s2, ids } = await trio('un');
    const before = await rowsOf(ids);
    const stateBefore = await customerState(ids);
    const m = await merge('un-p', ['un-s1', 'un-s2']);
    assert.equal(m.status, 200, m.text);
    assert.equal(m.body.duplicateAssociatesRemoved, 2);
    // Rows added to the primary after the merge stay with it.
    await attach(db(), p.id, 1);
    const added = await api().post(`/crm/customers/un-p/orders`, { externalId: 'late-1', orderedAt: '2026-01-01T00:00:00.000Z', currency: 'EUR', total: '5.00', lineItems: [] });
    assert.equal(added.status, 201, added.text);
    const ev0 = await lastEventId();

    const r = await undo(m.body.mergeUuid);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.undone, true);
    assert.equal(r.body.dryRun, false);
    assert.equal(r.body.mergeUuid, m.body.mergeUuid);
    assert.deepEqual(r.body.restoredCustomerIds, ['un-s1', 'un-s2']);
    assert.deepEqual(r.body.movedBack, m.body.moved, 'every journaled row moved back');
    assert.equal(r.body.associationsRestored, 2);
    assert.equal(r.body.primary.externalId, 'un-p');

    const afterRows = await rowsOf(ids);
    const lateRows = afterRows.filter((x) => !before.includes(x));
    assert.deepEqual(before.filter((x) => !afterRows.includes(x)), [], 'every row that existed before the merge is back, same id, same customer');
    assert.ok(lateRows.length > 0 && lateRows.every((x) => x.includes(`"customer_id":"${p.id}"`)), 'rows added after the merge stay on the primary');
    assert.deepEqual(await customerState(ids), stateBefore);
    for (const s of ['un-s1', 'un-s2']) {
      const g = (await api().get(`/crm/customers/${s}`)).body;
      assert.equal(g.status, 'active');
      assert.equal(g.mergedInto, null);
    }
    assert.deepEqual((await eventsSince(ev0)).sort(), ['customerUnmerge:un-p', 'customerUpdate:un-p', 'customerUpdate:un-s1', 'customerUpdate:un-s2']);

    // History: undoneAt in 2026-11, absent from older versions; a second undo is refused.
    const h = await api().get('/crm/customers/un-s1/merges');
    assert.match(h.body.data[0].undoneAt, /Z$/);
    // The record's counts as the merge answered them, in the same key order (the stored jsonb had its own).
    assert.deepEqual(Object.entries(h.body.data[0].moved), Object.entries(m.body.moved));
    const old = await ctx.srv.api.get('/crm/customers/un-s1/merges');
    assert.equal(old.status, 200);
    assert.equal('undoneAt' in old.body.data[0], false);
    const again = await undo(m.body.mergeUuid);
    assert.equal(again.status, 409);
    assert.deepEqual(errorCodes(again), ['MergeNotUndoable']);
    assert.match(again.body.errors[0].moreInfo, /undone already/);
    // The customers can be merged again after an undo, and that merge undone too.
    const m2 = await merge('un-p', ['un-s1']);
    assert.equal(m2.status, 200);
    assert.notEqual(m2.body.mergeUuid, m.body.mergeUuid);
    assert.equal((await undo(m2.body.mergeUuid)).status, 200);
    assert.equal(s2.externalId, 'un-s2');
    assert.equal((await api().get(`/crm/customers/${s1.uuid}`)).body.status, 'active');
  });

  it('dry run shows what would move back and changes nothing; Idempotency-Key replays the undo', async () => {
    const { ids } = await trio('ud');
    const m = await merge('ud-p', ['ud-s1', 'ud-s2']);
    const snap = async () => JSON.stringify([await rowsOf(ids), await customerState(ids), await lastEventId(), (await db().query('SELECT undone_at FROM merges')).rows]);
    const s0 = await snap();
    const dry = await undo(m.body.mergeUuid, '?dryRun=true');
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.body.dryRun, true);
    assert.equal(dry.body.undone, false);
    assert.deepEqual(dry.body.movedBack, m.body.moved);
    assert.equal(dry.body.associationsRestored, 2);
    assert.equal(await snap(), s0, 'a dry run changes nothing');

    const h = { 'idempotency-key': 'undo-key-1' };
    const first = await undo(m.body.mergeUuid, '', h);
    assert.equal(first.status, 200);
    const replay = await undo(m.body.mergeUuid, '', h);
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
    assert.equal(replay.text, first.text, 'byte for byte: the stored answer keeps its key order (jsonb reordered it)');
  });

  it('re-points flattened chains back and refuses while a later merge stands', async () => {
    const t = await makeCustomer(db(), 'ch-t');
    const s = await makeCustomer(db(), 'ch-s');
    const p = await makeCustomer(db(), 'ch-p');
    const q = await makeCustomer(db(), 'ch-q');
    await attach(db(), t.id, 1);
    await attach(db(), s.id, 1);
    const before = await rowsOf([t.id, s.id, p.id, q.id]);
    const m0 = (await merge('ch-s', ['ch-t'])).body; // t → s
    const m1 = (await merge('ch-p', ['ch-s'])).body; // s → p, t re-pointed to p
    assert.equal((await api().get('/crm/customers/ch-t')).body.mergedInto.externalId, 'ch-p');
    const m2 = (await merge('ch-q', ['ch-p'])).body; // p → q, s and t re-pointed to q

    for (const [older, later] of [[m1, m2], [m0, m1]]) {
      const r = await undo(older.mergeUuid);
      assert.equal(r.status, 409, r.text);
      assert.deepEqual(errorCodes(r), ['MergeNotUndoable']);
      assert.ok(r.body.errors[0].moreInfo.includes(later.mergeUuid), `names the later merge: ${r.body.errors[0].moreInfo}`);
    }
    assert.equal((await undo(m2.mergeUuid)).status, 200);
    assert.equal((await api().get('/crm/customers/ch-t')).body.mergedInto.externalId, 'ch-p', 'back to its former survivor');
    assert.equal((await api().get('/crm/customers/ch-s')).body.mergedInto.externalId, 'ch-p');
    const u1 = await undo(m1.mergeUuid);
    assert.equal(u1.status, 200);
    assert.equal((await api().get('/crm/customers/ch-t')).body.mergedInto.externalId, 'ch-s');
    assert.equal((await undo(m0.mergeUuid)).status, 200);
    assert.equal((await api().get('/crm/customers/ch-t')).body.mergedInto, null);
    assert.deepEqual(await rowsOf([t.id, s.id, p.id, q.id]), before);
  });

  it('refuses while the primary is deactivated by hand, saying so (no later merge to name), and undoes once it is re-activated', async () => {
    await trio('uh');
    const m = (await merge('uh-p', ['uh-s1'])).body;
    assert.equal((await api().patch('/crm/customers/uh-p', { disabled: true })).status, 200);
    const r = await undo(m.mergeUuid);
    assert.equal(r.status, 409);
    assert.deepEqual(errorCodes(r), ['MergeNotUndoable']);
    assert.match(r.body.errors[0].message, /primary "uh-p" is deactivated/);
    assert.match(r.body.errors[0].moreInfo, /re-activate customer "uh-p" first/);
    assert.doesNotMatch(r.body.errors[0].message, /later merge/);
    assert.equal((await api().patch('/crm/customers/uh-p', { disabled: false })).status, 200);
    assert.equal((await undo(m.mergeUuid)).status, 200);
    assert.equal((await api().get('/crm/customers/uh-s1')).body.status, 'active');
    // A primary without an externalId is named by its uuid (it said "null").
    const keyless = (await api().post('/crm/customers', { firstName: 'No', lastName: 'Key' })).body;
    const m2 = (await merge(keyless.uuid, ['uh-s1'])).body;
    assert.equal((await api().patch(`/crm/customers/${keyless.uuid}`, { disabled: true })).status, 200);
    const r2 = await undo(m2.mergeUuid);
    assert.match(r2.body.errors[0].message, new RegExp(`primary "${keyless.uuid}" is deactivated`));
    assert.match(r2.body.errors[0].moreInfo, new RegExp(`re-activate customer "${keyless.uuid}" first`));
  });

  it('refuses after the window, answers 404/400 for unknown or malformed ids, and only from 2026-11', async () => {
    const { p } = await trio('uw');
    const m = (await merge('uw-p', ['uw-s1'])).body;
    await db().query(`UPDATE merges SET created_at = now() - interval '31 days' WHERE uuid = $1`, [m.mergeUuid]);
    const r = await undo(m.mergeUuid);
    assert.equal(r.status, 409);
    assert.deepEqual(errorCodes(r), ['MergeNotUndoable']);
    assert.match(r.body.errors[0].moreInfo, /window passed.*30 days/);
    assert.equal((await api().get(`/crm/customers/${p.uuid}`)).body.status, 'active');
    assert.equal((await api().get('/crm/customers/uw-s1')).body.status, 'disabled', 'nothing changed');

    const unknown = await undo('00000000-0000-4000-8000-000000000000');
    assert.equal(unknown.status, 404);
    assert.deepEqual(errorCodes(unknown), ['NotFound']);
    const bad = await undo('not-a-uuid');
    assert.equal(bad.status, 400);
    errorCodes(bad);
    const older = await ctx.srv.api.post(`/crm/merges/${m.mergeUuid}/undo`);
    assert.equal(older.status, 404);
    assert.deepEqual(errorCodes(older), ['EndpointNotInVersion']);
    const badQuery = await undo(m.mergeUuid, '?dryRun=maybe');
    assert.equal(badQuery.status, 400);
  });

  it('a removed duplicate association does not come back over an existing one', async () => {
    const { p, s1 } = await trio('ua');
    const m = (await merge('ua-p', ['ua-s1'])).body;
    assert.equal(m.duplicateAssociatesRemoved, 1);
    // The associate that was a duplicate (a1) gets associated with s1 again (written behind the API's back).
    const a1 = (await db().query(`SELECT id FROM associates WHERE external_id = 'ua-a1'`)).rows[0].id;
    await db().query('INSERT INTO customer_associates (customer_id, associate_id, role) VALUES ($1, $2, $3)', [s1.id, a1, 'new-role']);
    const r = await undo(m.mergeUuid);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.associationsRestored, 0);
    const rows = (await db().query('SELECT role FROM customer_associates WHERE customer_id = $1 AND associate_id = $2', [s1.id, a1])).rows;
    assert.deepEqual(rows.map((x) => x.role), ['new-role']);
    assert.equal((await db().query('SELECT count(*)::int AS n FROM customer_associates WHERE customer_id = $1', [p.id])).rows[0].n, 1);
  });
});
