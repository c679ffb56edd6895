// Console in a real browser: Integrations → Webhook Event Types shows the event catalog (issue 26 item 4): each
// type with its description, the fields of its body, its JSON Schema and an example, as the API answers them.
// The body is Tulip's: https://docs.tulip.com/integrating/webhooks/eventsoverview
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeConsole } from './browser.ts';
import { CATALOG } from '../../src/events/catalog.ts';

describeConsole('webhook event types', (ctx) => {
  it('lists every event type with its description, fields, schema and example', async () => {
    const { page } = ctx;
    await ctx.signIn();
    await ctx.go('Webhook Event Types', 'Webhook event types');
    for (const e of CATALOG) {
      const section = page.getByRole('region', { name: e.name, exact: true });
      await section.waitFor();
      assert.match(await section.innerText(), new RegExp(e.description.slice(0, 40).replace(/[.?*+^$()[\]{}|\\/]/g, '\\$&')));
      assert.match(await section.innerText(), new RegExp(e.resourceType));
      const fields = section.getByRole('table', { name: `Fields of a ${e.name} body` });
      assert.match(await fields.getByRole('row', { name: /^eventType/ }).innerText(), new RegExp(`always "${e.name}"`));
      assert.equal(await fields.getByRole('row', { name: /^resource\.externalId/ }).count(), 1);
    }
    // The example and the schema open on demand and show what the API answers.
    const merge = page.getByRole('region', { name: 'customerMerge', exact: true });
    await merge.getByText('Example customerMerge body').click();
    const example = JSON.parse(await merge.getByLabel('Example customerMerge body').innerText());
    assert.deepEqual(example, CATALOG.find((e) => e.name === 'customerMerge')!.example);
    await merge.getByText('JSON Schema of customerMerge').click();
    const schema = JSON.parse(await merge.getByLabel('JSON Schema of customerMerge').innerText());
    assert.equal(schema.properties.eventType.const, 'customerMerge');
    assert.equal(schema.additionalProperties, false);
    await ctx.shot('event-types');
  });
});
