// Possible duplicates of a customer (API 2026-11, SPEC §14): who, how likely, why; *Preview merge* fills
// the merge form with that customer and runs its dry run (the merge itself is then one more click).
import { get } from '../api.js';
import { badge, empty, h, load, table } from '../dom.js';
import { displayName, refName } from './customers.js';

const FIELD = { email: 'Email', phone: 'Phone', name: 'Name', address: 'Address' };

export function duplicatesSection({ c, signal, customerLink, previewMerge }) {
  const box = h('div');
  load(box, 'possible duplicates', () => get(`/api/2026-11/crm/customers/${encodeURIComponent(c.uuid)}/duplicates`, { limit: 10 }, { signal }), (page) => {
    if (page.data.length === 0) return box.append(empty('No likely duplicates of this customer.'));
    box.append(table({
      caption: 'Possible duplicates',
      columns: ['Customer', 'Score', 'Why', ''],
      rows: page.data.map((d) => {
        const name = displayName(d.customer);
        const btn = h('button', { type: 'button', class: 'btn', 'aria-label': `Preview merge of ${refName(d.customer)}` }, 'Preview merge');
        btn.addEventListener('click', () => previewMerge([d.customer.uuid])); // by uuid: exactly the customer listed
        return h('tr', null,
          h('th', { scope: 'row' }, customerLink(d.customer), h('span', { class: 'muted' }, ` ${name}`)),
          h('td', null, badge(`${Math.round(d.score * 100)}%`, d.score >= 0.8 ? 'warn' : 'info')),
          h('td', null, h('ul', { class: 'plain' }, d.reasons.map((r) => h('li', null, `${FIELD[r.field] ?? r.field}: ${r.detail}`)))),
          h('td', null, btn));
      }),
    }));
  });
  return h('section', { class: 'card', 'aria-labelledby': 'dups-h' },
    h('h2', { id: 'dups-h' }, 'Possible duplicates'),
    h('p', { class: 'muted' }, 'Active customers that look like the same person (same email or phone, or a similar name in the same place).'),
    box);
}
