// The typed client's types in git (packages/client/src/openapi.ts, compiled into @bulb/client) are those of the
// routes as declared now: a route or schema change without `npm run build` fails here.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { CLIENT_TYPES_FILE, clientTypes } from '../../scripts/client-types.ts';

it('packages/client/src/openapi.ts is generated from the current routes (run `npm run build` if not)', async () => {
  const committed = await readFile(CLIENT_TYPES_FILE, 'utf8');
  assert.ok(committed.length > 1000, 'the committed client types are not empty');
  assert.equal(committed, await clientTypes());
});
