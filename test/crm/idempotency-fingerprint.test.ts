// An Idempotency-Key's request fingerprint: the same whatever order the request's members were written in, and a key
// stored before 2026-11-29 (fingerprinted in the order sent) still matches its retry.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { idempotent, keyOf, type IdemKey } from '../../src/crm/idempotency/service.ts';
import { freshDb } from '../helpers/db.ts';

const request = (body: unknown, query: unknown = {}) =>
  ({ headers: { 'idempotency-key': 'k-1' }, routeOptions: { config: { routeId: 'r', apiVersion: '2026-11' } }, params: { id: 'c-1' }, query, body }) as unknown as FastifyRequest;

it('members in another order give the same fingerprint; other values, or another array order, do not', () => {
  const a = keyOf(request({ since: 's', eventTypes: ['x', 'y'], nested: { b: 1, a: 2 } }, { dryRun: 'true', limit: '1' }))!;
  const b = keyOf(request({ nested: { a: 2, b: 1 }, eventTypes: ['x', 'y'], since: 's' }, { limit: '1', dryRun: 'true' }))!;
  assert.equal(a.hash, b.hash);
  assert.notEqual(a.legacyHash, b.legacyHash, 'the fingerprint as it was kept the order');
  assert.notEqual(keyOf(request({ since: 's', eventTypes: ['y', 'x'], nested: { b: 1, a: 2 } }, { dryRun: 'true', limit: '1' }))!.hash, a.hash);
  assert.notEqual(keyOf(request({ since: 't', eventTypes: ['x', 'y'], nested: { b: 1, a: 2 } }, { dryRun: 'true', limit: '1' }))!.hash, a.hash);
  // The legacy fingerprint is what was stored before: the request as sent.
  const raw = ['r', '2026-11', { id: 'c-1' }, { dryRun: 'true', limit: '1' }, { since: 's', eventTypes: ['x', 'y'], nested: { b: 1, a: 2 } }];
  assert.equal(a.legacyHash, crypto.createHash('sha256').update(JSON.stringify(raw)).digest('hex'));
});

it('a key stored with the fingerprint as it was is still answered by its replay, not a 409', async () => {
  const tdb = await freshDb('pglite');
  try {
    const run = (k: IdemKey) => tdb.db.transaction((tx) => idempotent(tx, k, async () => ({ status: 200, body: { n: 1 } })));
    // Stored before the change: its hash was what is now the legacy fingerprint.
    assert.equal((await run({ principal: 'p', key: 'k', hash: 'sent-order', legacyHash: 'older' })).replayed, false);
    const retry = await run({ principal: 'p', key: 'k', hash: 'canonical', legacyHash: 'sent-order' });
    assert.deepEqual([retry.replayed, retry.status, retry.body], [true, 200, { n: 1 }]);
    await assert.rejects(run({ principal: 'p', key: 'k', hash: 'another', legacyHash: 'request' }), (e: any) => e.status === 409);
  } finally {
    await tdb.close();
  }
});
