// The typed client's routes whose bodies are not JSON (docs/client-package.md): the export and an import's errors
// answer NDJSON, an import takes CSV or NDJSON. openapi-fetch alone parsed the export as JSON (an object for one
// customer, a SyntaxError thrown for two, though `data` is typed string) and sent an import's CSV JSON-quoted
// (a client's probe, 2026-11-30). Against a real server, from the package's source.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createBulbClient } from '../../packages/client/src/index.ts';
import { describeEachDb } from '../helpers/suite.ts';
import { ADMIN_KEY } from '../helpers/server.ts';
import { importFinished, useImportWorker } from '../helpers/imports.ts';

await describeEachDb('client: routes whose bodies are not JSON', (ctx) => {
  useImportWorker(ctx, 100);
  it('an export is data as NDJSON text, an import sends CSV as given and its errors come back as text; JSON routes are as before', async () => {
    const bulb = createBulbClient({ baseUrl: ctx.srv.url, token: ADMIN_KEY });
    for (const externalId of ['cb-1', 'cb-2']) {
      const made = await bulb.POST('/api/2026-11/crm/customers', { body: { externalId, firstName: 'Ann' } });
      assert.equal(made.response.status, 201);
      assert.equal(made.data?.externalId, externalId, 'a JSON answer is parsed as before');
    }
    const exported = await bulb.GET('/api/2026-11/crm/customers/export', {});
    assert.equal(exported.response.status, 200);
    assert.equal(typeof exported.data, 'string');
    const lines = exported.data!.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((c) => c.externalId).sort(), ['cb-1', 'cb-2']);
    const streamed = await bulb.GET('/api/2026-11/crm/customers/export', { parseAs: 'stream' });
    assert.ok(streamed.data instanceof ReadableStream, 'parseAs: "stream" still streams');
    await streamed.data.cancel();

    const csv = 'externalId,firstName\ncb-3,Bo\n,no id\n';
    const imported = await bulb.POST('/api/2026-11/crm/imports', { body: csv, headers: { 'content-type': 'text/csv' } });
    assert.equal(imported.response.status, 202, JSON.stringify(imported.error));
    const uuid = imported.data!.uuid;
    assert.equal((await importFinished(ctx.srv.api.withVersion('2026-11'), uuid)).status, 'completed');
    assert.equal((await bulb.GET('/api/2026-11/crm/customers/{id}', { params: { path: { id: 'cb-3' } } })).data?.firstName, 'Bo');
    const errors = await bulb.GET('/api/2026-11/crm/imports/{uuid}/errors', { params: { path: { uuid } } });
    assert.equal(errors.response.status, 200);
    assert.equal(typeof errors.data, 'string');
    assert.equal(errors.data!.trim().split('\n').length, 1, errors.data);

    // An error answer is still the SPEC §3 object.
    const missing = await bulb.GET('/api/2026-11/crm/customers/{id}', { params: { path: { id: 'nobody' } } });
    assert.equal(missing.response.status, 404);
    assert.equal(missing.error?.errors[0].errorCode, 'NotFound');
  });
});
