// The address helpers of wire.ts are written as literals (for speed: bench/body-cost.ts): they still give every key
// of ADDRESS_KEYS, in its order, with the values the loops they replaced gave.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADDRESS_KEYS, normalAddress, wholeAddress } from '../../src/crm/customers/wire.ts';

const empty = (k: string) => (k === 'disabled' || k === 'isPrimary' ? false : null);

describe('address shapes', () => {
  it('normalAddress: every key of ADDRESS_KEYS in order, the given value or the empty one', () => {
    const given = { city: 'Paris', isPrimary: true, uuid: 'u-1', zz: 1, address2: null };
    const out = normalAddress(given);
    assert.deepEqual(Object.keys(out), [...ADDRESS_KEYS]);
    for (const k of ADDRESS_KEYS) assert.equal((out as Record<string, unknown>)[k], (given as Record<string, unknown>)[k] ?? empty(k), k);
  });

  it('wholeAddress: every key but uuid, in ADDRESS_KEYS order, then the others given; the given values kept, uuid only when given', () => {
    const given = { zz: 1, uuid: 'u-1', city: 'Paris', disabled: true, address1: null };
    const out = wholeAddress(given) as Record<string, unknown>;
    assert.deepEqual(Object.keys(out), [...ADDRESS_KEYS.filter((k) => k !== 'uuid'), 'zz', 'uuid']);
    for (const k of ADDRESS_KEYS) assert.equal(out[k], k in given ? (given as Record<string, unknown>)[k] : empty(k), k);
    assert.equal(out.zz, 1);
    assert.notEqual(out, given, 'a copy');
    assert.equal('uuid' in (wholeAddress({ city: 'x' }) as object), false);
    for (const odd of [null, 5, 'x', [1]]) assert.equal(wholeAddress(odd), odd);
  });
});
