// What an import file's envelope and header may be (issue 24 items 2, 7, 13), on both engines: a header too wide is
// refused in linear time with a bounded answer, line errors speak the API's per-field messages, a body without an
// import Content-Type is a 415 naming the import types, a declared latin1 charset is honoured (others refused), and a
// malformed CSV record is reported with csv-parse's reason.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { errorCodes } from '../helpers/server.ts';
import { MAX_HEADER_BYTES, MAX_HEADER_COLUMNS } from '../../src/imports/parse.ts';
import { MAX_LISTED_PROBLEMS } from '../../src/http/errors.ts';
import { importErrors, importFinished, useImportWorker } from '../helpers/imports.ts';

await describeEachDb('import input', (ctx) => {
  useImportWorker(ctx, 100);
  const api = () => ctx.srv.api.withVersion('2026-11');
  const count = async (sql: string) => Number((await ctx.tdb.db.query(sql)).rows[0].n);
  const raw = (path: string, body: BodyInit, headers: Record<string, string>) =>
    fetch(`${ctx.srv.url}/api/2026-11${path}`, { method: 'POST', body, headers: { ...headers, authorization: `Bearer ${ctx.srv.api.token}` } });
  const finished = (uuid: string) => importFinished(api(), uuid);
  const errorsOf = (uuid: string) => importErrors(api(), uuid);

  it('a CSV header of 100,000 columns is refused with one bounded error (was 100,001 errors in a 16 MB body), leaving nothing behind', async () => {
    const header = Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',');
    const r = await api().post('/crm/imports?format=csv', `${header}\nx\n`, { 'content-type': 'text/csv' });
    assert.equal(r.status, 400);
    assert.deepEqual(errorCodes(r), ['InvalidParameterError']);
    // Its first line alone is over the byte bound: refused before csv-parse reads it (parsing it took ~0.9 s).
    assert.equal(r.body.errors[0].message, `the CSV header row is over ${MAX_HEADER_BYTES} bytes long; at most ${MAX_HEADER_BYTES} are allowed`);
    assert.ok(r.text.length < 1000, `answer of ${r.text.length} bytes`);
    // Within the byte bound, over the column bound.
    const many = Array.from({ length: MAX_HEADER_COLUMNS + 1 }, (_, i) => `c${i}`).join(',');
    const m = await api().post('/crm/imports?format=csv', `${many}\r\nx\r\n`, { 'content-type': 'text/csv' });
    assert.equal(m.status, 400);
    assert.deepEqual(m.body.errors.map((e: any) => e.message), [`the CSV header row has ${MAX_HEADER_COLUMNS + 1} columns; at most ${MAX_HEADER_COLUMNS} are allowed`]);
    // Wide in bytes, within the column bound.
    const wide = ['externalId', ...Array.from({ length: 100 }, (_, i) => `${'w'.repeat(700)}${i}`)].join(',');
    const w = await api().post('/crm/imports?format=csv', `${wide}\nx\n`, { 'content-type': 'text/csv' });
    assert.equal(w.status, 400);
    assert.match(w.body.errors[0].message, new RegExp(`at most ${MAX_HEADER_BYTES} are allowed`));
    assert.equal(await count('SELECT count(*) AS n FROM imports'), 0);
  });

  it('a header with many unknown columns lists the first 100 problems and counts the rest', async () => {
    const header = ['externalId', ...Array.from({ length: 250 }, (_, i) => `u${i}`), 'u0'].join(',');
    const r = await api().post('/crm/imports?format=csv', `${header}\nx\n`, { 'content-type': 'text/csv' });
    assert.equal(r.status, 400);
    assert.equal(r.body.errors.length, MAX_LISTED_PROBLEMS + 1);
    assert.equal(r.body.errors[0].message, 'unknown CSV column "u0"');
    // 251 unknown columns (u0 twice) and the duplicate: 252 problems, 100 listed.
    assert.equal(r.body.errors.at(-1).message, 'and 152 more problems not listed');
  });

  it('a line error says what POST says of the same field ("emails.0.email" must match format "email")', async () => {
    const bad = { externalId: 'msg-1', emails: [{ email: 'not-an-email' }] };
    const post = await api().post('/crm/customers', { ...bad, firstName: 'A' });
    assert.equal(post.status, 400);
    const postMessage = post.body.errors.find((e: any) => e.moreInfo === 'body.emails.0.email')?.message;
    assert.equal(postMessage, '"emails.0.email" must match format "email"');
    const r = await api().post('/crm/imports?format=ndjson', JSON.stringify(bad) + '\n' + JSON.stringify({ externalId: 'msg-2' }) + '\n', { 'content-type': 'application/x-ndjson' });
    assert.equal(r.status, 202, r.text);
    const done = await finished(r.body.uuid);
    assert.deepEqual([done.created, done.failed], [1, 1]);
    const errs = await errorsOf(r.body.uuid);
    assert.deepEqual(errs, [{ line: 1, errors: [{ message: postMessage, errorCode: 'InvalidParameterError', moreInfo: 'emails.0.email' }] }]);
    // Bulk items share the check.
    const bulk = await api().post('/crm/customers/bulk', [bad]);
    assert.deepEqual(bulk.body.results[0].errors.map((e: any) => e.message), [postMessage]);
  });

  it('a body with no or a wrong Content-Type is a 415 naming the import types (was "must be application/json")', async () => {
    for (const headers of [{}, { 'content-type': 'text/plain' }, { 'content-type': 'application/octet-stream' }] as Record<string, string>[]) {
      const res = await raw('/crm/imports', 'externalId\nx\n', headers);
      const body = await res.json();
      assert.equal(res.status, 415, JSON.stringify(body));
      assert.equal(body.errors[0].errorCode, 'UnsupportedMediaType');
      assert.match(body.errors[0].message, /application\/x-ndjson/);
      assert.match(body.errors[0].message, /text\/csv/);
      assert.doesNotMatch(body.errors[0].message, /application\/json/);
    }
    // Routes taking JSON still say so.
    const other = await raw('/crm/customers', 'x', { 'content-type': 'text/plain' });
    assert.equal(other.status, 415);
    assert.match((await other.json()).errors[0].message, /must be application\/json/);
  });

  it('text/csv; charset=latin1 is decoded as latin1 (was read as UTF-8: refused as not text); an unknown charset is a 415', async () => {
    const file = Buffer.from('externalId,firstName,lastName\ncs-1,Zoë,Müller\n', 'latin1');
    assert.equal(file.includes(Buffer.from('ë', 'utf8')), false);
    for (const charset of ['latin1', 'ISO-8859-1', 'windows-1252']) {
      const res = await raw('/crm/imports', file, { 'content-type': `text/csv; charset=${charset}` });
      assert.equal(res.status, 202, await res.clone().text());
      assert.equal((await finished((await res.json()).uuid)).status, 'completed');
    }
    const c = (await api().get('/crm/customers/cs-1')).body;
    assert.deepEqual([c.firstName, c.lastName], ['Zoë', 'Müller']);
    const utf8 = await raw('/crm/imports', Buffer.from('externalId,firstName\ncs-2,Zoë\n'), { 'content-type': 'text/csv; charset=UTF-8' });
    assert.equal(utf8.status, 202);
    const sjis = await raw('/crm/imports', file, { 'content-type': 'text/csv; charset=shift_jis' });
    assert.equal(sjis.status, 415);
    const body = await sjis.json();
    assert.equal(body.errors[0].errorCode, 'UnsupportedMediaType');
    assert.match(body.errors[0].message, /charset "shift_jis" is not supported/);
  });

  it('a malformed CSV record is reported with csv-parse\'s reason', async () => {
    const r = await api().post('/crm/imports?format=csv', 'externalId,firstName\nr-1,A\nr-2,B,extra\nr-3,C\n', { 'content-type': 'text/csv' });
    assert.equal(r.status, 202, r.text);
    const done = await finished(r.body.uuid);
    assert.deepEqual([done.created, done.failed], [2, 1]);
    const errs = await errorsOf(r.body.uuid);
    assert.equal(errs[0].line, 3);
    assert.equal(errs[0].errors[0].message, 'line 3 is not a valid CSV record: Invalid Record Length: columns length is 2, got 3');
  });
});
