// Lock order between merges (and their undos) and the writes beside them (docs/merge.md "Lock order": a customer
// before the rows attached to it, customers in id order). Each case drives the race hard over real HTTP and counts
// the deadlocks PostgreSQL reported to the server's statements (SQLSTATE 40P01, retried or not): none may happen, and
// no request may answer a 5xx. Found by a probe (2026-11-30): a note's edit locked the note, then its customer, while
// a merge or an undo locks the customers, then moves the notes (4 merges in 10 answered 500 after 16–27 s of retried
// deadlocks); a rename of a merge survivor locked it, then the customers merged into it, while a merge of the survivor
// locks them all in id order (81 deadlocks in 30 s). PostgreSQL only: PGlite runs one transaction at a time.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describePg } from '../helpers/suite.ts';
import { hookedDb } from '../helpers/db.ts';
import { startServer, type Client, type Res, type TestServer } from '../helpers/server.ts';
import { sqlState } from '../../src/db/db.ts';

await describePg('merge lock order', (ctx) => {
  let srv: TestServer;
  let deadlocks = 0;
  const api = (): Client => srv.api.withVersion('2026-11');
  before(async () => {
    srv = await startServer(hookedDb(ctx.tdb.db, { failed: (_sql, _name, err) => void (sqlState(err) === '40P01' && deadlocks++) }));
  });
  after(async () => {
    await srv?.close();
  });

  const answers: Res[] = [];
  const sent = async (r: Promise<Res>) => {
    const res = await r;
    answers.push(res);
    return res;
  };
  const fives = () => answers.filter((r) => r.status >= 500).map((r) => `${r.status} ${r.text.slice(0, 200)}`);
  /** Runs `race` with the deadlock count and the answers reset, then asserts no deadlock and no 5xx. */
  async function noDeadlock(race: () => Promise<void>) {
    deadlocks = 0;
    answers.length = 0;
    await race();
    assert.equal(deadlocks, 0, `PostgreSQL reported ${deadlocks} deadlock(s) to the server's statements`);
    assert.deepEqual(fives(), [], 'no request answered a 5xx');
  }
  const customer = async (externalId: string) => {
    const r = await api().post('/crm/customers', { externalId });
    assert.equal(r.status, 201, r.text);
    return r.body.uuid as string;
  };
  /** Calls `step` in `n` loops until `done` settles; each loop waits for its answer before the next. */
  async function loopsUntil<T>(n: number, done: Promise<T>, step: (loop: number, i: number) => Promise<unknown>): Promise<T> {
    let over = false;
    const finished = done.finally(() => (over = true));
    await Promise.all([finished, ...Array.from({ length: n }, async (_, loop) => {
      for (let i = 0; !over; i++) await step(loop, i);
    })]);
    return finished;
  }

  const ROUNDS = 3;
  const EDITORS = 8;
  it('edits of a note while its customer is merged, and the merge undone: no deadlock, no 5xx', async () => {
    await noDeadlock(async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const a = `nl${round}-a`;
        const b = `nl${round}-b`;
        await customer(a);
        await customer(b);
        const note = await api().post(`/crm/customers/${b}/notes`, { comments: 'c', type: 'CUSTOMER_NOTE' });
        assert.equal(note.status, 201, note.text);
        const edit = (loop: number, i: number) =>
          sent(api().put(`/crm/customerNotes/${note.body.uuid}`, { comments: `e${loop}-${i}`, type: 'CUSTOMER_NOTE' }));
        const merged = await loopsUntil(EDITORS, sent(api().post(`/crm/customers/${a}/merge`, { mergeWithCustomerIds: [b] })), edit);
        if (merged.status === 200) await loopsUntil(EDITORS, sent(api().post(`/crm/merges/${merged.body.mergeUuid}/undo`)), edit);
      }
    });
    assert.ok(answers.length > ROUNDS * 2 * EDITORS, 'the edits ran beside the merges and undos');
    for (const r of answers) assert.equal(r.status, 200, r.text.slice(0, 200));
  });

  it('renames of a merge survivor while it is merged into another and the merge undone: no deadlock, no 5xx', async () => {
    // The customers merged into A are older than it (lower ids): a merge of A locks them before A.
    const merged: string[] = [];
    for (let i = 0; i < 4; i++) merged.push(await customer(`rn-c${i}`));
    const a = await customer('rn-a');
    const x = await customer('rn-x');
    const first = await api().post('/crm/customers/rn-a/merge', { mergeWithCustomerIds: merged });
    assert.equal(first.status, 200, first.text);
    const mergesAndUndos: Res[] = [];
    await noDeadlock(async () => {
      const rounds = async () => {
        for (let round = 0; round < 8; round++) {
          const m = await sent(api().post(`/crm/customers/${x}/merge`, { mergeWithCustomerIds: [a] }));
          mergesAndUndos.push(m);
          if (m.status === 200) mergesAndUndos.push(await sent(api().post(`/crm/merges/${m.body.mergeUuid}/undo`)));
        }
      };
      await loopsUntil(10, rounds(), (loop, i) => sent(api().patch(`/crm/customers/${a}`, { externalId: `rn-a-${loop}-${i}` })));
    });
    assert.deepEqual(mergesAndUndos.map((r) => r.status), Array(16).fill(200), 'every merge and undo went through');
    // A rename of A while it is merged into X is refused (403 CustomerDisabled); every other answer is a 200.
    for (const r of answers) assert.ok(r.status === 200 || (r.status === 403 && r.body.errors[0].errorCode === 'CustomerDisabled'), `${r.status} ${r.text.slice(0, 200)}`);
    assert.ok(answers.filter((r) => r.status === 200).length > 16 + 10, 'renames went through beside the merges');
    const shown = await api().get(`/crm/customers/${merged[0]}`);
    assert.equal(shown.body.mergedInto.uuid, a, 'the customers merged into A point at it again');
  });
});
