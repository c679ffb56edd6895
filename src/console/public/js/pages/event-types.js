// Integrations → Webhooks → Event types (API 2026-11, the event catalog): each event type a subscription can
// listen for, with its description, the fields of the body it delivers, the JSON Schema of that body and an
// example; read-only. The catalog comes from GET /api/2026-11/integrations/webhooks/eventTypes.
import { get } from '../api.js';
import { badge, copyButton, empty, fmtJson, h, load, table } from '../dom.js';

const PATH = '/api/2026-11/integrations/webhooks/eventTypes';

/** "const customerCreate", "string (uuid)", "string or null", from a field's JSON Schema. */
function typeOf(s) {
  if (s.const !== undefined) return `always ${JSON.stringify(s.const)}`;
  if (s.anyOf) return s.anyOf.map(typeOf).join(' or ');
  if (s.type === 'object') return 'object';
  return s.format ? `${s.type} (${s.format})` : s.pattern ? `${s.type} matching ${s.pattern}` : String(s.type);
}

/** One row per field of the body, resource.* included. */
function fieldRows(schema) {
  const rows = [];
  const walk = (props, prefix) => {
    for (const [name, s] of Object.entries(props || {})) {
      rows.push(h('tr', null, h('th', { scope: 'row' }, h('code', null, prefix + name)), h('td', null, typeOf(s)), h('td', null, s.description ?? '')));
      if (s.type === 'object' && s.properties) walk(s.properties, `${prefix}${name}.`);
    }
  };
  walk(schema.properties, '');
  return rows;
}

function entrySection(e) {
  const id = `event-${e.name}`;
  const schemaText = fmtJson(e.schema);
  const exampleText = fmtJson(e.example);
  return h('section', { class: 'card', 'aria-labelledby': id },
    h('div', { class: 'section-head' }, h('h2', { id }, e.name), badge(e.resourceType, 'info')),
    h('p', null, e.description),
    table({ caption: `Fields of a ${e.name} body`, columns: ['Field', 'Type', 'Meaning'], rows: fieldRows(e.schema) }),
    h('details', null, h('summary', null, `Example ${e.name} body`),
      h('pre', { class: 'code-block', tabindex: '0', 'aria-label': `Example ${e.name} body` }, exampleText),
      copyButton(exampleText, 'Copy example')),
    h('details', null, h('summary', null, `JSON Schema of ${e.name}`),
      h('pre', { class: 'code-block', tabindex: '0', 'aria-label': `JSON Schema of ${e.name}` }, schemaText),
      copyButton(schemaText, 'Copy schema')));
}

export function eventTypesPage({ main, query, signal }) {
  const box = h('div');
  main.append(
    h('h1', null, 'Webhook event types'),
    h('p', { class: 'muted' }, 'What each event type sends: every delivery is a signed POST of one event body. The same catalog is in the OpenAPI document (its webhooks section).'),
    box);
  load(box, 'event types', () => get(PATH, undefined, { signal }), (answer) => {
    if (!answer.data.length) return box.append(empty('No event types.'));
    box.append(h('nav', { 'aria-label': 'Event types' }, h('ul', { class: 'plain' }, answer.data.map((e) => h('li', null, h('a', { href: `#/integrations/webhooks/event-types?type=${e.name}`, onclick: (ev) => {
      ev.preventDefault();
      document.getElementById(`event-${e.name}`)?.scrollIntoView();
    } }, e.name), ` — ${e.description}`)))), ...answer.data.map(entrySection));
    if (query.type) document.getElementById(`event-${query.type}`)?.scrollIntoView();
  });
}
