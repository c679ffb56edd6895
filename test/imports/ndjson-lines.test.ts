// NDJSON lines are at most MAX_LINE characters (a CR of a CR LF ending not counted), whatever chunks the file arrives
// in. Until 2026-11-28 only the part of a line left after a chunk's last newline was measured: a line that came whole
// inside one chunk, or ended in the chunk after its start, was read at any length up to the chunk's size on top.
import assert from 'node:assert/strict';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { it } from 'node:test';
import { MAX_LINE, ndjsonRows, type StagedLine } from '../../src/imports/parse.ts';

async function rows(chunks: string[]): Promise<StagedLine[]> {
  const out: StagedLine[] = [];
  await pipeline(Readable.from(chunks, { objectMode: true }), ndjsonRows(), new Writable({
    objectMode: true,
    write(row: StagedLine, _enc, cb) {
      out.push(row);
      cb();
    },
  }));
  return out;
}

/** A valid item's JSON line of exactly `n` characters (padded with spaces inside the object). */
const lineOf = (n: number, id: string) => {
  const head = `{"externalId":"${id}"`;
  return head + ' '.repeat(n - head.length - 1) + '}';
};
const tooLong = (r: StagedLine) => r.errors?.some((e) => /longer than/.test(e.message)) ?? false;

/** Every way of cutting `text` into chunks at the given places. */
const cut = (text: string, at: number[]) => at.map((a, i) => text.slice(i === 0 ? 0 : at[i - 1], a)).concat(text.slice(at.at(-1)));

it('a line one character over the limit is refused however the file is cut into chunks; the lines around it are read', async () => {
  const long = lineOf(MAX_LINE + 1, 'long');
  const file = `${lineOf(40, 'a')}\n${long}\n${lineOf(40, 'b')}\n`;
  const start = 41;
  const end = start + long.length;
  const cuts: Record<string, string[]> = {
    'one chunk': [file],
    'the line whole inside the second chunk': cut(file, [10, end + 3]),
    'the line starts in one chunk, ends in the next': cut(file, [start + 100]),
    'cut just before its newline': cut(file, [end]),
    'cut just after its newline': cut(file, [end + 1]),
    'three chunks': cut(file, [start + 5, start + 600_000]),
  };
  for (const [name, chunks] of Object.entries(cuts)) {
    const out = await rows(chunks);
    assert.deepEqual(out.map((r) => r.line), [1, 2, 3], name);
    assert.deepEqual(out.map(tooLong), [false, true, false], name);
    assert.deepEqual(out.map((r) => (r.item as { externalId?: string } | null)?.externalId ?? null), ['a', null, 'b'], name);
  }
});

it('a line of exactly the limit is read, with LF or CR LF, last or not, however it is cut', async () => {
  const line = lineOf(MAX_LINE, 'edge');
  for (const file of [`${line}\n`, `${line}\r\n`, line, `${line}\r\n${lineOf(40, 'z')}`]) {
    for (const chunks of [[file], cut(file, [7]), cut(file, [MAX_LINE]), cut(file, [MAX_LINE + 1]), cut(file, [100, MAX_LINE - 1])]) {
      const out = await rows(chunks);
      assert.equal(out[0].line, 1);
      assert.equal(tooLong(out[0]), false, `${JSON.stringify(file.slice(-4))} in ${chunks.length} chunks`);
    }
  }
  // The last line, without a newline, over the limit: refused.
  const out = await rows(cut(`${lineOf(40, 'first')}\n${lineOf(MAX_LINE + 1, 'last')}`, [500]));
  assert.deepEqual(out.map(tooLong), [false, true]);
});

it('a file none of whose lines is short enough to be JSON is not NDJSON (it was accepted, every line failed)', async () => {
  const long = 'a'.repeat(MAX_LINE + 1);
  for (const file of [long, `${long}\n`, `${long}\n${long}\n\n${long}`, Array(12).fill(long).join('\n')]) {
    await assert.rejects(rows(cut(file, [1000])), (e: any) => e.status === 400 && /not NDJSON/.test(e.message), `${file.length} characters`);
  }
  // Ten lines too long, then JSON: refused at the tenth, as ten lines of anything else that is not JSON.
  await assert.rejects(rows([Array(10).fill(long).join('\n') + `\n${lineOf(40, 'late')}\n`]), (e: any) => e.status === 400);
  // One JSON line among them: read, the long ones reported.
  const out = await rows([`${long}\n${lineOf(40, 'ok')}\n${long}`]);
  assert.deepEqual(out.map(tooLong), [true, false, true]);
});
