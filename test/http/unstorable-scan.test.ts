// The body parser's scan for escapes (errors.ts mayHoldUnstorable): a JSON text it says false of parses into no string
// PostgreSQL cannot store, so the body is not walked. Sound for any JSON value, as JSON.stringify or a client writes it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { firstUnstorable, mayHoldUnstorable } from '../../src/http/errors.ts';

describe('mayHoldUnstorable', () => {
  it('is true of every JSON text whose value holds a NUL or a lone surrogate, in a value or a field name', () => {
    const unit = fc.oneof(
      { weight: 8, arbitrary: fc.string({ unit: 'grapheme', maxLength: 4 }) },
      { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', '\\', '\\u0000', 'é') },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) },
    );
    const text = fc.array(unit, { maxLength: 4 }).map((parts) => parts.join(''));
    const value = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(text, tie('v'), { maxKeys: 3, noNullPrototype: true })),
    })).v;
    fc.assert(fc.property(value, fc.boolean(), (v, upper) => {
      let json = JSON.stringify(v);
      // A client may write the hex digits in capitals: \uD800.
      if (upper) json = json.replace(/\\u([0-9a-f]{4})/g, (_, h: string) => `\\u${h.toUpperCase()}`);
      assert.deepEqual(JSON.parse(json), v);
      if (firstUnstorable(v) !== undefined) assert.ok(mayHoldUnstorable(json), json);
    }), { numRuns: 2000 });
  });

  it('is false without such an escape, true with one (or with a backslash written before "u0000")', () => {
    for (const json of ['{"a":"Zoë 😀"}', '{"a":"\\u00e9\\u0041"}', '{"a":"\\ue000\\uFFFF\\u0001"}', '[]', '{"a\\\\b":"\\\\"}']) assert.equal(mayHoldUnstorable(json), false, json);
    for (const json of ['{"a":"\\u0000"}', '{"\\ud800":1}', '{"a":"\\uDFFF"}', '{"a":"\\ud83d\\ude00"}', '{"a":"\\\\u0000"}']) assert.equal(mayHoldUnstorable(json), true, json);
  });
});
