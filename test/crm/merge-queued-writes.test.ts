// A write that waits for a merge holding its customer (or its note) sees the merge once it commits (a probe, two API
// processes: a PATCH {"disabled":false} racing a merge re-activated the merged-away customer in 13 of 40 runs, and
// the merge could no longer be undone). The look-ups lock the customer row and read whom it was merged into: by a
// join, PostgreSQL re-read the locked row after the wait but kept the joined one as first read (no merge). Here the
// merge's effect on the row is committed by hand while the request waits for the lock, as a merge's would be.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import pg from 'pg';
import { describePg } from '../helpers/suite.ts';
import { untilWaitingForLock } from '../helpers/db.ts';

await describePg('writes queued behind a merge', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const idOf = async (externalId: string) =>
    (await ctx.tdb.db.query<{ id: string }>(`SELECT id FROM customers WHERE external_id = $1`, [externalId])).rows[0].id;

  /**
   * Runs `request` while another transaction holds `lockSql`'s row, waits until the request waits for it, then runs
   * `commitSql` in that transaction and commits (what a merge does to the row), and returns the request's answer.
   */
  async function behindMerge<T>(lockSql: string, commitSql: string, params: unknown[], request: () => Promise<T>): Promise<T> {
    const merge = new pg.Client({ connectionString: ctx.tdb.url });
    await merge.connect();
    try {
      await merge.query('BEGIN');
      await merge.query(lockSql, params);
      const answer = request();
      await untilWaitingForLock(merge, 'the request never waited for the lock', { tries: 500 });
      await merge.query(commitSql, params);
      await merge.query('COMMIT');
      return await answer;
    } finally {
      await merge.query('ROLLBACK').catch(() => {});
      await merge.end();
    }
  }

  /** A primary and a secondary; returns their internal ids. */
  async function pair(tag: string): Promise<{ a: string; b: string }> {
    for (const x of [`${tag}-a`, `${tag}-b`]) assert.equal((await api().post('/crm/customers', { externalId: x, firstName: 'Ann' })).status, 201);
    return { a: await idOf(`${tag}-a`), b: await idOf(`${tag}-b`) };
  }
  const LOCK_B = `SELECT $1::bigint FROM customers WHERE id = $2 FOR NO KEY UPDATE`;
  const MERGE_B = `UPDATE customers SET merged_into = $1, status = 'disabled', updated_at = clock_timestamp() WHERE id = $2`;
  const stateOf = async (id: string) =>
    (await ctx.tdb.db.query<{ status: string; first_name: string }>(`SELECT status, first_name FROM customers WHERE id = $1`, [id])).rows[0];

  for (const [door, send] of [
    ['PATCH {"disabled": false}', (x: string) => api().patch(`/crm/customers/${x}`, { disabled: false, firstName: 'Changed' })],
    ['PUT', (x: string) => api().put(`/crm/customers/${x}`, { externalId: x, firstName: 'Changed' })],
  ] as const) {
    it(`${door} of the secondary: 403 CustomerDisabled naming the merge, nothing changed`, async () => {
      const tag = `mq-${door.length}`;
      const { a, b } = await pair(tag);
      const r: any = await behindMerge(LOCK_B, MERGE_B, [a, b], () => send(`${tag}-b`));
      assert.equal(r.status, 403, r.text);
      assert.equal(r.body.errors[0].errorCode, 'CustomerDisabled');
      assert.match(r.body.errors[0].message, new RegExp(`merged into ${tag}-a`));
      assert.deepEqual(await stateOf(b), { status: 'disabled', first_name: 'Ann' });
    });
  }

  it('a bulk item for the secondary: 403, nothing changed', async () => {
    const { a, b } = await pair('mq-bulk');
    const r: any = await behindMerge(LOCK_B, MERGE_B, [a, b], () => api().post('/crm/customers/bulk', [{ externalId: 'mq-bulk-b', disabled: false, firstName: 'Changed' }]));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.results[0].status, 403, JSON.stringify(r.body.results[0]));
    assert.deepEqual(await stateOf(b), { status: 'disabled', first_name: 'Ann' });
  });

  it('data attached to the secondary: 403 naming the merge, nothing attached', async () => {
    const { a, b } = await pair('mq-data');
    const r: any = await behindMerge(LOCK_B, MERGE_B, [a, b], () => api().post('/crm/customers/mq-data-b/preferences', { category: 'size', value: 'M' }));
    assert.equal(r.status, 403, r.text);
    assert.match(r.body.errors[0].message, /merged into mq-data-a/);
    assert.equal((await ctx.tdb.db.query(`SELECT 1 FROM preferences WHERE customer_id = $1`, [b])).rows.length, 0);
  });

  it('a merge of the secondary into a third customer: 403 naming the merge that won (moreInfo mergedInto)', async () => {
    const { a, b } = await pair('mq-race');
    assert.equal((await api().post('/crm/customers', { externalId: 'mq-race-c' })).status, 201);
    const r: any = await behindMerge(LOCK_B, MERGE_B, [a, b], () => api().post('/crm/customers/mq-race-c/merge', { mergeWithCustomerIds: ['mq-race-b'] }));
    assert.equal(r.status, 403, r.text);
    assert.match(r.body.errors[0].moreInfo, /^mergedInto: mq-race-a \(/);
  });

  it('a note the merge moves while its edit waits: the edit lands on the moved note (it answered 404 and was lost)', async () => {
    const { a } = await pair('mq-note');
    const note = await api().post('/crm/customerNotes', { customer: 'mq-note-b', comments: 'before', type: 'CUSTOMER_NOTE' });
    assert.equal(note.status, 201, note.text);
    const noteId = (await ctx.tdb.db.query<{ id: string }>(`SELECT id FROM notes WHERE uuid = $1`, [note.body.uuid])).rows[0].id;
    const r: any = await behindMerge(`SELECT $1::bigint FROM notes WHERE id = $2 FOR UPDATE`, `UPDATE notes SET customer_id = $1 WHERE id = $2`, [a, noteId],
      () => api().put(`/crm/customerNotes/${note.body.uuid}`, { customer: 'mq-note-a', comments: 'after', type: 'CUSTOMER_NOTE' }));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.comments, 'after');
    const stored = (await ctx.tdb.db.query(`SELECT comments, customer_id FROM notes WHERE id = $1`, [noteId])).rows[0];
    assert.deepEqual(stored, { comments: 'after', customer_id: a });
  });
});
