// Console Imports page in a real browser: choose a file, start the import, watch the progress bar reach
// 100%, see the lines that failed; a refused file shows the API's message.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { ImportWorker } from '../../src/imports/worker.ts';

let worker: ImportWorker;
describeConsole('imports', (ctx) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-import-'));

  it('imports a file chosen by the admin: progress bar to 100%, counters, failed lines listed', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ externalId: `ui-${i}`, firstName: `N${i}` }));
    lines.splice(10, 0, '{not json');
    lines.splice(20, 0, JSON.stringify({ externalId: 'ui-bad', nope: true }));
    const file = path.join(dir, 'customers.ndjson');
    fs.writeFileSync(file, lines.join('\n') + '\n');
    await ctx.signIn();
    await ctx.go('Imports');
    await ctx.page.getByLabel('File (NDJSON or CSV)').setInputFiles(file);
    await ctx.page.getByLabel(/Emit events/).uncheck();
    await ctx.page.getByRole('button', { name: 'Start import' }).click();
    const bar = ctx.page.getByRole('progressbar', { name: 'Import progress' });
    await bar.waitFor();
    await ctx.page.getByText('100% · 42 of 42 lines').waitFor();
    assert.equal(await bar.getAttribute('value'), '42');
    await ctx.page.getByRole('heading', { name: 'Lines that failed (2)' }).waitFor();
    const failed = ctx.page.getByRole('table', { name: 'Lines that failed' });
    const text = await failed.innerText();
    assert.match(text, /11\s+line 11 is not valid JSON/);
    assert.match(text, /21\s+.*nope/);
    await ctx.shot('imports-done');
    assert.equal((await ctx.srv.api.get('/crm/customers/ui-39')).body.firstName, 'N39');
    assert.equal(Number((await ctx.tdb.db.query(`SELECT count(*) AS n FROM events WHERE resource_external_id LIKE 'ui-%'`)).rows[0].n), 0, 'events unchecked: none written');
    await ctx.page.getByRole('table', { name: 'Recent imports' }).getByText('completed').waitFor();
  });

  it('shows the API message when the file is refused', async () => {
    const file = path.join(dir, 'photo.csv');
    fs.writeFileSync(file, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x01]));
    await ctx.page.getByLabel('File (NDJSON or CSV)').setInputFiles(file);
    await ctx.page.getByRole('button', { name: 'Start import' }).click();
    const alert = ctx.page.getByRole('alert').filter({ hasText: 'The import was refused' });
    await alert.waitFor();
    assert.match(await alert.innerText(), /not text/);
  });
}, {}, {
  started: async (ctx) => {
    worker = new ImportWorker(ctx.tdb.db, { importChunkRows: 5, importLeaseMs: 5000 });
    await worker.start();
  },
  stopping: () => worker.stop(),
});
