// The verifier's own HMAC-SHA256 (packages/client/src/hmac-sha256.ts) gives node:crypto's answer: every message
// length around the 64-byte block and padding boundaries, keys shorter and longer than a block, messages in
// several parts, random inputs (fast-check), and a 1 MiB body.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { hmacSha256, sha256 } from '../../packages/client/src/hmac-sha256.ts';

const nodeSha = (b: Uint8Array) => crypto.createHash('sha256').update(b).digest('hex');
const nodeHmac = (k: Uint8Array, b: Uint8Array) => crypto.createHmac('sha256', k).update(b).digest('hex');
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('hmac-sha256 (pure TypeScript)', () => {
  it('SHA-256 of the FIPS 180-4 examples and of every length from 0 to 200 bytes', () => {
    assert.equal(hex(sha256(new TextEncoder().encode('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(hex(sha256(new Uint8Array(0))), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    for (let n = 0; n <= 200; n++) {
      const b = crypto.randomBytes(n);
      assert.equal(hex(sha256(b)), nodeSha(b), `length ${n}`);
    }
  });
  it('HMAC-SHA256 of RFC 4231 test case 2, and with keys of 0 to 150 bytes (a long key is hashed first)', () => {
    const enc = new TextEncoder();
    assert.equal(hex(hmacSha256(enc.encode('Jefe'), enc.encode('what do ya want for nothing?'))), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    for (let n = 0; n <= 150; n++) {
      const k = crypto.randomBytes(n);
      const b = crypto.randomBytes(n * 3);
      assert.equal(hex(hmacSha256(k, b)), nodeHmac(k, b), `key length ${n}`);
    }
  });
  it('random keys and messages in several parts agree with node:crypto', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 130 }), fc.array(fc.uint8Array({ maxLength: 140 }), { maxLength: 4 }), (key, parts) => {
        assert.equal(hex(hmacSha256(key, ...parts)), nodeHmac(key, Buffer.concat(parts)));
      }),
      { numRuns: 500 },
    );
  });
  it('a 1 MiB body', () => {
    const k = crypto.randomBytes(32);
    const b = crypto.randomBytes(1 << 20);
    assert.equal(hex(hmacSha256(k, b)), nodeHmac(k, b));
  });
});
