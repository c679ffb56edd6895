// Lists an integrator or the console pages through read what they list, not the table, for a rare filter value:
// a customer's merge history (and the undo's look for a later merge), the audit log by actor (a name, or the
// system), the disabled customers. Counted in buffers (pages the executor touched, not time) with the plan
// Bulb's statement really gets (test/helpers/buffers.ts), on tables loaded with one INSERT … SELECT each, whose
// statistics are fresh (on PGlite, made by Bulb's own autovacuum pass). The answers are checked through the
// API first (results, order, cursors).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { costOf } from '../helpers/buffers.ts';
import { maintain } from '../../src/db/autovacuum.ts';
import { listCustomers } from '../../src/crm/customers/store.ts';
import { listMerges } from '../../src/crm/merge/store.ts';
import { laterMergeOf } from '../../src/crm/merge/undo-store.ts';
import { listAudit } from '../../src/audit/store.ts';

const N = 40_000;
const MOVED = { orders: 0, followUps: 0, notes: 0, messages: 0, preferences: 0, productShares: 0, associates: 0 };
const OPS = '00000000-0000-4000-8000-0000000000b2';

await describeEachDb('lists at scale', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const db = () => ctx.tdb.db;
  const idOf = async (externalId: string) => (await db().query<{ id: string }>('SELECT id FROM customers WHERE external_id = $1', [externalId])).rows[0].id;
  const merge = async (primary: string, ids: string[]) => {
    const r = await api().post(`/crm/customers/${primary}/merge`, { mergeWithCustomerIds: ids });
    assert.equal(r.status, 200, r.text);
    return r.body.mergeUuid as string;
  };
  /** Every page of a list, limit by limit: the items' values of `key`, and how many pages it took. */
  const walk = async (path: string, limit: number, key: (x: any) => string) => {
    const out: string[] = [];
    let pages = 0;
    for (let cursor: string | null = null; ; ) {
      const r: { status: number; text: string; body: any } = await api().get(`${path}${path.includes('?') ? '&' : '?'}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      out.push(...r.body.data.map(key));
      pages++;
      cursor = r.body.nextCursor;
      if (!cursor) return { out, pages };
    }
  };
  const merges: string[] = [];

  it('merges a few customers through the API (the oldest merges), with the audit rows of a system and an ops actor', async () => {
    for (const x of ['mh-a', 'mh-b', 'mh-c', 'mh-d']) assert.equal((await api().post('/crm/customers', { externalId: x, firstName: x })).status, 201);
    merges.push(await merge('mh-a', ['mh-b']), await merge('mh-a', ['mh-c']), await merge('mh-d', ['mh-a']));
    await db().query(
      `INSERT INTO audit_log (actor_type, actor_uuid, actor_name, action, target_type, target_id)
       SELECT 'system', NULL, NULL, 'subscription.disabled', 'WebhookSubscription', gen_random_uuid()::text FROM generate_series(1, 3)
       UNION ALL
       SELECT 'apiKey', $1::uuid, 'ops console', 'apiKey.created', 'ApiKey', gen_random_uuid()::text FROM generate_series(1, 3)`,
      [OPS],
    );
  });

  it(`loads ${N} customers (${N / 1000} disabled), ${N / 2} merges and ${N / 2} audit rows; statistics are made (PGlite: by Bulb's autovacuum pass)`, async () => {
    await db().query(
      `INSERT INTO customers (external_id, first_name, last_name, email_keys)
       SELECT 'ls' || g, 'Bo', 'N' || g, ARRAY['ls' || g || '@y.example'] FROM generate_series(1, $1::int) g`,
      [N],
    );
    await db().query(
      `UPDATE customers SET status = 'disabled', merged_into = (SELECT id FROM customers WHERE external_id = 'ls1')
       WHERE external_id ~ '^ls[0-9]+$' AND substr(external_id, 3)::int % 1000 = 500`,
    );
    // lsG is the primary of a merge whose secondary is ls(G + N/2), for G from 11: ls1 … ls10 are in none.
    await db().query(
      `INSERT INTO merges (primary_id, secondary_ids, moved, duplicates_removed, source)
       SELECT p.id, ARRAY[s.id], $2::jsonb, 0, 'TEST' FROM generate_series(11, $1::int / 2) g
       JOIN customers p ON p.external_id = 'ls' || g JOIN customers s ON s.external_id = 'ls' || (g + $1::int / 2)`,
      [N, JSON.stringify(MOVED)],
    );
    await db().query(
      `INSERT INTO audit_log (actor_type, actor_uuid, actor_name, action, target_type, target_id)
       SELECT 'apiKey', '00000000-0000-4000-8000-0000000000a1', 'integration', 'merge.created', 'Merge', gen_random_uuid()::text
       FROM generate_series(1, $1::int / 2)`,
      [N],
    );
    if (ctx.backend === 'pglite') {
      await db().query('SELECT pg_stat_force_next_flush()');
      const done = await maintain(db());
      for (const t of ['customers', 'merges', 'audit_log']) assert.ok(done.analyzed.includes(t), JSON.stringify(done));
    } else {
      await db().exec('ANALYZE customers, merges, audit_log'); // PostgreSQL's autovacuum daemon does this within a minute or so
    }
  });

  it("a customer's merge history reads that customer's merges, not the merges table", async (t) => {
    const { out, pages } = await walk('/crm/customers/mh-a/merges', 2, (m) => m.uuid);
    assert.deepEqual(out, merges, 'primary of the first two, secondary of the third, oldest first');
    assert.equal(pages, 2);
    assert.deepEqual((await walk('/crm/customers/mh-d/merges', 50, (m) => m.uuid)).out, [merges[2]]);
    const secondary = await api().get(`/crm/customers/ls${N / 2 + 20}/merges`);
    assert.deepEqual(secondary.body.data.map((m: any) => [m.primary.externalId, m.secondaries.map((s: any) => s.externalId)]), [['ls20', [`ls${N / 2 + 20}`]]]);
    assert.deepEqual((await api().get('/crm/customers/ls3/merges')).body, { data: [], nextCursor: null });

    for (const [who, bound] of [['ls3', 20], ['ls20', 30], [`ls${N / 2 + 20}`, 30], ['mh-a', 60]] as const) {
      const id = await idOf(who);
      const { buffers, plans } = await costOf(db(), (q) => listMerges(q, id, null, 50));
      t.diagnostic(`${who}: ${buffers} buffers`);
      assert.ok(buffers < bound, `${who}: ${buffers} buffers: ${plans}`);
    }
  });

  it('refusing an undo names the later merge reading the merges of those customers, not every merge since', async (t) => {
    const r = await api().post(`/crm/merges/${merges[0]}/undo`);
    assert.equal(r.status, 409, r.text);
    assert.deepEqual(errorCodes(r), ['MergeNotUndoable']);
    assert.ok(r.body.errors[0].moreInfo.includes(merges[2]), r.body.errors[0].moreInfo);
    const first = (await db().query<{ id: string }>('SELECT id FROM merges WHERE uuid = $1', [merges[0]])).rows[0].id;
    const ids = await Promise.all(['mh-a', 'mh-b'].map(idOf));
    const { buffers, plans } = await costOf(db(), (q) => laterMergeOf(q, first, ids));
    t.diagnostic(`${buffers} buffers`);
    assert.ok(buffers < 30, `${buffers} buffers: ${plans}`);
  });

  it('the audit log of one actor (by name, or the system) reads that actor\'s rows, not the log', async (t) => {
    const system = await walk('/integrations/auditLog?actor=system', 2, (e) => `${e.action}:${e.actor.type}`);
    // Newest first: the three disablings, then the admin key the server's start made (the system's act too).
    assert.deepEqual(system.out, [...Array(3).fill('subscription.disabled:system'), 'apiKey.created:system']);
    assert.equal(system.pages, 2);
    const ops = await walk(`/integrations/auditLog?actor=${encodeURIComponent('ops console')}`, 2, (e) => `${e.action}:${e.actor.uuid}`);
    assert.deepEqual(ops.out, Array(3).fill(`apiKey.created:${OPS}`));
    assert.deepEqual((await api().get(`/integrations/auditLog?actor=${OPS}&limit=1`)).body.data.map((e: any) => e.actor.name), ['ops console']);

    for (const filter of [{ actorType: 'system' }, { actorName: 'ops console' }, { actorName: 'nobody' }]) {
      const { buffers, plans } = await costOf(db(), (q) => listAudit(q, { ...filter, limit: 50 }, null));
      t.diagnostic(`${JSON.stringify(filter)}: ${buffers} buffers`);
      assert.ok(buffers < 20, `${JSON.stringify(filter)}: ${buffers} buffers: ${plans}`);
    }
  });

  it('the disabled customers are read from the status index, not by walking the active ones', async (t) => {
    const expected = ['mh-a', 'mh-b', 'mh-c', ...Array.from({ length: N / 1000 }, (_, i) => `ls${1000 * i + 500}`)];
    const { out, pages } = await walk('/crm/customers?status=disabled', 10, (c) => `${c.externalId}:${c.status}`);
    assert.deepEqual(out, expected.map((x) => `${x}:disabled`));
    assert.equal(pages, Math.ceil(expected.length / 10));
    const { buffers, plans } = await costOf(db(), (q) => listCustomers(q, { status: 'disabled', limit: 50 }, null));
    t.diagnostic(`${buffers} buffers`);
    assert.ok(buffers < 120, `${buffers} buffers: ${plans}`);
  });
});
