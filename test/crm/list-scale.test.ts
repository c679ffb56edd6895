// Lists an integrator or the console pages through read what they list, not the table, for a rare filter value:
// a customer's merge history (and the undo's look for a later merge), the audit log by actor (a name, or the
// system) and by each combination of action, actor and since, the disabled customers (also those changed since a
// time). Counted in buffers (pages the executor touched, not time) with the plan Bulb's statement really gets
// (test/helpers/buffers.ts), on tables loaded with one INSERT … SELECT each, whose statistics are fresh (on PGlite,
// made by Bulb's own autovacuum pass). The answers are checked through the API first (results, order, cursors).
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
const INTEGRATION = '00000000-0000-4000-8000-0000000000a1';
const IMPORTER = '00000000-0000-4000-8000-0000000000a3';
/** The importer's acts a day ago (N/4) and lately (RECENT_IMPORTS); the integration merges in between. */
const RECENT_IMPORTS = 5;

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
  /** The database's time before the customers were loaded, to the millisecond (every loaded customer changed since). */
  let loadedFrom = '';
  /** A time between the importer's older acts and the integration's merges. */
  const aDayAgo = new Date(Date.now() - 86_400_000).toISOString();

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

  it(`loads ${N} customers (${N / 1000} disabled), ${N / 2} merges and ${N / 2 + N / 4 + RECENT_IMPORTS} audit rows; statistics are made (PGlite: by Bulb's autovacuum pass)`, async () => {
    loadedFrom = (await db().query<{ t: string }>(`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t`)).rows[0].t;
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
    // Two actors that each wrote much of the log, never the other's act: an importer (imports two days ago, and a few
    // lately) and an integration (merges, in between). The old imports' created_at is given (the acts logged above are
    // newer than them, as no real log's are: no answer checked below with `since` is one of those acts).
    await db().query(
      `INSERT INTO audit_log (actor_type, actor_uuid, actor_name, action, target_type, target_id, created_at)
       SELECT 'apiKey', $2::uuid, 'importer', 'import.started', 'Import', gen_random_uuid()::text, now() - interval '2 days' + g * interval '1 second'
       FROM generate_series(1, $1::int / 4) g`,
      [N, IMPORTER],
    );
    await db().query(
      `INSERT INTO audit_log (actor_type, actor_uuid, actor_name, action, target_type, target_id)
       SELECT 'apiKey', $2::uuid, 'integration', 'merge.created', 'Merge', gen_random_uuid()::text
       FROM generate_series(1, $1::int / 2)`,
      [N, INTEGRATION],
    );
    await db().query(
      `INSERT INTO audit_log (actor_type, actor_uuid, actor_name, action, target_type, target_id)
       SELECT 'apiKey', $2::uuid, 'importer', 'import.started', 'Import', 'recent' || g FROM generate_series(1, $1::int) g`,
      [RECENT_IMPORTS, IMPORTER],
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
    // Each of the 43 read with the customer it was merged into: a nested loop probes that one's primary key per row
    // (3–4 pages each; a plan of a hash join or a memoized probe reads far fewer). Walking the active ones read the
    // table, ~500 pages. (The bound was 120: a nested loop's page of 50 could pass it.)
    assert.ok(buffers < 250, `${buffers} buffers: ${plans}`);
  });

  it('the audit log by two filters, each common and never together, or by one common in the log but not lately, reads what it lists', async (t) => {
    // The answers, through the API: newest first, page by page.
    const recent = Array.from({ length: RECENT_IMPORTS }, (_, i) => `recent${RECENT_IMPORTS - i}`);
    for (const actor of [INTEGRATION, 'integration']) {
      assert.deepEqual(await walk(`/integrations/auditLog?actor=${actor}&action=import.started`, 50, (e) => e.uuid), { out: [], pages: 1 });
    }
    assert.deepEqual(await walk(`/integrations/auditLog?actor=importer&action=merge.created`, 50, (e) => e.uuid), { out: [], pages: 1 });
    assert.deepEqual(await walk(`/integrations/auditLog?actor=system&action=merge.created`, 50, (e) => e.uuid), { out: [], pages: 1 });
    const imports = await walk(`/integrations/auditLog?actor=${IMPORTER}&action=import.started&since=${aDayAgo}`, 2, (e) => e.target.id);
    assert.deepEqual(imports, { out: recent, pages: Math.ceil(RECENT_IMPORTS / 2) });
    assert.deepEqual((await walk(`/integrations/auditLog?action=import.started&since=${aDayAgo}`, 2, (e) => e.target.id)).out, recent);
    assert.deepEqual((await walk(`/integrations/auditLog?actor=importer&since=${aDayAgo}`, 4, (e) => e.target.id)).out, recent);
    assert.deepEqual(await walk(`/integrations/auditLog?actor=importer&action=merge.created&since=${aDayAgo}`, 50, (e) => e.uuid), { out: [], pages: 1 });
    // A common filter's page: the newest first, the next page going on after it, the importer's older acts after its recent ones.
    const first = await api().get(`/integrations/auditLog?action=import.started&limit=${RECENT_IMPORTS + 2}`);
    assert.equal(first.status, 200, first.text);
    const newest = (await db().query<{ uuid: string }>(
      `SELECT uuid FROM audit_log WHERE action = 'import.started' ORDER BY id DESC LIMIT $1`, [2 * RECENT_IMPORTS + 4],
    )).rows.map((r) => r.uuid);
    assert.deepEqual(first.body.data.map((e: any) => e.uuid), newest.slice(0, RECENT_IMPORTS + 2));
    assert.deepEqual(first.body.data.slice(0, RECENT_IMPORTS).map((e: any) => e.target.id), recent);
    const second = await api().get(`/integrations/auditLog?action=import.started&limit=${RECENT_IMPORTS + 2}&cursor=${first.body.nextCursor}`);
    assert.deepEqual(second.body.data.map((e: any) => e.uuid), newest.slice(RECENT_IMPORTS + 2));
    const merged = await api().get(`/integrations/auditLog?actor=integration&action=merge.created&since=${aDayAgo}&limit=3`);
    assert.deepEqual(merged.body.data.map((e: any) => [e.action, e.actor.uuid]), Array(3).fill(['merge.created', INTEGRATION]));
    assert.ok(merged.body.nextCursor);

    // What each reads: about what it lists, where the log newest first was walked (up to its whole 30,000 rows).
    const filters = [
      { actorUuid: INTEGRATION, action: 'import.started' }, { actorName: 'integration', action: 'import.started' },
      { actorName: 'importer', action: 'merge.created' }, { actorType: 'system', action: 'merge.created' },
      { action: 'import.started' }, { actorUuid: IMPORTER }, { actorName: 'importer' },
      { action: 'import.started', since: aDayAgo }, { actorUuid: IMPORTER, since: aDayAgo }, { actorName: 'importer', since: aDayAgo },
      { actorName: 'importer', action: 'import.started', since: aDayAgo }, { actorUuid: INTEGRATION, action: 'import.started', since: aDayAgo },
      { actorType: 'system', since: aDayAgo }, { since: aDayAgo },
    ];
    const over: string[] = []; // every filter that reads more, not the first
    for (const filter of filters) {
      const { buffers, plans } = await costOf(db(), (q) => listAudit(q, { ...filter, limit: 50 }, null));
      t.diagnostic(`${JSON.stringify(filter)}: ${buffers} buffers`);
      // `since` alone lists the 20,000 merges: a page of them.
      if (buffers >= 30) over.push(`${JSON.stringify(filter)}: ${buffers} buffers: ${plans}`);
    }
    assert.deepEqual(over, []);
  });

  it('the disabled customers changed since a time are read from their own index, not by walking every change', async (t) => {
    const expected = (await db().query<{ external_id: string }>(
      `SELECT external_id FROM customers WHERE status = 'disabled' AND updated_at >= $1::timestamptz ORDER BY updated_at, id`, [loadedFrom],
    )).rows.map((r) => `${r.external_id}:disabled`);
    assert.equal(expected.length, N / 1000, 'the loaded disabled customers, not the merged-away ones of the first step');
    for (const prefix of ['/crm/customers', '/tulip_api/v2/crm/customers']) {
      const { out, pages } = await walk(`${prefix}?status=disabled&updatedSince=${loadedFrom}`, 10, (c) => `${c.externalId}:${c.status}`);
      assert.deepEqual(out, expected, prefix);
      assert.equal(pages, Math.ceil(expected.length / 10), prefix);
    }
    // Walking customers_updated for them read the whole window (~155 pages of the index at 40,000 changed), or a
    // thousand customers for each disabled one. Now the page's rows, each with the customer it was merged into (up to 3
    // pages each, by primary key).
    const { buffers, plans } = await costOf(db(), (q) => listCustomers(q, { status: 'disabled', updatedSince: loadedFrom, limit: 5 }, null));
    t.diagnostic(`${buffers} buffers`);
    assert.ok(buffers < 40, `${buffers} buffers: ${plans}`);
  });
});
