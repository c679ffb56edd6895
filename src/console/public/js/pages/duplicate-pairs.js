// Possible duplicates across all customers (#/duplicates, API 2026-11 GET /crm/duplicates): candidate pairs
// of active customers, best first, with their score and reasons, filtered by the lowest score; older pages on
// demand. *Preview merge* opens the pair's first customer (the earlier record) with the merge of the second
// into it previewed as a dry run (#/customers/{uuid}?merge={uuid}); nothing changes until confirmed there.
// The pairs are those the background refresher has folded in: how many changed customers it has still to check is said.
import { get } from '../api.js';
import { badge, busy, clear, closeBidi, empty, errorBox, field, h, load, select, table } from '../dom.js';
import { refName } from './customers.js';

const PATH = '/api/2026-11/crm/duplicates';
const PAGE = 50;
const SCORES = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95];
const DEFAULT_SCORE = '0.8'; // the API's default minScore
const FIELD = { email: 'Email', phone: 'Phone', name: 'Name', address: 'Address' };

const pct = (score) => `${Math.round(score * 100)}%`;
const customerCell = (c) => {
  const name = [c.firstName, c.lastName].filter(Boolean).map(closeBidi).join(' '); // each closed, as displayName does
  return [h('a', { href: `#/customers/${encodeURIComponent(c.uuid)}` }, refName(c)), name ? [h('br'), h('span', { class: 'muted' }, name)] : null];
};

export function duplicatePairsPage({ main, query, signal, navigate }) {
  const minScore = SCORES.map(String).includes(query.minScore) ? query.minScore : DEFAULT_SCORE;
  const scoreSelect = select('minScore', SCORES.map((s) => [String(s), `${pct(s)} or more`]), minScore);
  const form = h('form', { class: 'card filters', role: 'search', 'aria-label': 'Filter possible duplicates' },
    field('Lowest score', scoreSelect), h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply filter')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    navigate(scoreSelect.value === DEFAULT_SCORE ? '#/duplicates' : `#/duplicates?minScore=${scoreSelect.value}`, true);
    document.getElementById('pairs-h')?.focus();
  });
  const listBox = h('div', { class: 'list' });
  main.append(
    h('h1', null, 'Possible duplicates'),
    h('p', { class: 'lead' }, 'Pairs of active customers that look like the same person (same email or phone, or a similar name in the same place), best first. ',
      h('em', null, 'Preview merge'), ' opens the first customer of a pair, the earlier record, with the merge of the other into it shown as a dry run: nothing changes until you confirm it there.'),
    form,
    h('section', { 'aria-labelledby': 'pairs-h' }, h('h2', { id: 'pairs-h', tabindex: '-1' }, 'Pairs'), listBox));

  const pairs = [];
  let pending = 0; // customers changed but not yet checked (the API's pendingCustomers, counted up to 10,000)
  const pendingNote = () => pending > 0
    ? h('p', { class: 'muted', role: 'status' }, `${pending >= 10000 ? '10,000 or more' : pending.toLocaleString('en-US')} recently changed customer${pending === 1 ? ' is' : 's are'} still being checked in the background: their pairs appear once checked.`)
    : null;
  const fetchPage = (cursor) => get(PATH, { minScore, limit: PAGE, cursor }, { signal });

  function rowOf({ customers: [a, b], score, reasons }) {
    return h('tr', null,
      h('th', { scope: 'row' }, customerCell(a)),
      h('td', null, customerCell(b)),
      h('td', null, badge(pct(score), score >= 0.8 ? 'warn' : 'info')),
      h('td', null, h('ul', { class: 'plain' }, reasons.map((r) => h('li', null, `${FIELD[r.field] ?? r.field}: ${r.detail}`)))),
      h('td', null, h('a', {
        class: 'btn btn-small',
        href: `#/customers/${encodeURIComponent(a.uuid)}?merge=${encodeURIComponent(b.uuid)}`, // by uuid: exactly that customer
        'aria-label': `Preview merge of ${refName(b)} into ${refName(a)}`,
      }, 'Preview merge')));
  }

  function render(nextCursor) {
    if (pairs.length === 0) {
      clear(listBox, empty(`No possible duplicates scoring ${pct(Number(minScore))} or more.`), pendingNote());
      return;
    }
    const more = nextCursor ? h('button', { type: 'button', class: 'btn' }, 'Show more pairs') : null;
    more?.addEventListener('click', () => busy(more, async () => {
      try {
        const page = await fetchPage(nextCursor);
        pairs.push(...page.data);
        render(page.nextCursor);
        listBox.querySelector('tbody tr:nth-child(' + (pairs.length - page.data.length + 1) + ') a')?.focus();
      } catch (err) {
        if (err.name !== 'AbortError') more.after(errorBox(err, 'Could not load more pairs'));
      }
    }));
    clear(listBox,
      pendingNote(),
      h('p', { class: 'muted' }, `${pairs.length}${nextCursor ? '+' : ''} pair${pairs.length === 1 ? '' : 's'} scoring ${pct(Number(minScore))} or more.`),
      table({ caption: 'Possible duplicate pairs, best first', columns: ['Customer', 'Possible duplicate', 'Score', 'Why', h('span', { class: 'visually-hidden' }, 'Actions')], rows: pairs.map(rowOf), stack: true }),
      more ? h('div', { class: 'actions' }, more) : null);
  }

  load(listBox, 'possible duplicates', () => fetchPage(), (page) => {
    pending = page.pendingCustomers ?? 0;
    pairs.push(...page.data);
    render(page.nextCursor);
  });
}
