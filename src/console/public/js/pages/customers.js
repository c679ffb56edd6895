// Customers: search by name, email or externalId, with a status filter; results link to the customer page.
import { get, getPages, supportsQueryParam } from '../api.js';
import { badge, closeBidi, empty, field, h, load, moreButton, select, table, time } from '../dom.js';

export const displayName = (c) => closeBidi([c.firstName, c.lastName].filter(Boolean).map(closeBidi).join(' ') || c.externalId || c.uuid);
/** A customer's externalId, or its uuid when it has none (externalId is optional, as in Tulip). */
export const refName = (c) => closeBidi(c.externalId ?? c.uuid);
export const primaryEmail = (c) => (c.emails || []).find((e) => e.isPrimary)?.email ?? c.emails?.[0]?.email ?? '';
export const statusBadge = (status) => badge(status, status === 'active' ? 'ok' : 'muted');

const SCAN_PAGES = 4; // without a server-side name filter, name search looks at this many pages of 250
const SEARCH_PAGES = 20; // pages of the API's q search followed for a page of matches (a short term: 10,000 customers each)

/**
 * Finds customers matching q. Uses the API's `q` filter when the server offers one; otherwise asks for exact
 * email and externalId matches and filters a scan of the first pages by name, email or externalId.
 */
async function search(q, status, signal) {
  if (await supportsQueryParam('/crm/customers', 'q')) {
    // A term without three letters or digits in a row (Wu, Li, a.b) is looked for in 10,000 customers per page: a page
    // may hold few matches, none even, with more to come. Follow the cursor up to a bound (it showed "No customer
    // matches" for a name the next pages held; the review, 2026-11-29).
    const data = [];
    let cursor = null;
    let pages = 0;
    do {
      const page = await get('/crm/customers', { q, status, limit: 100, ...(cursor ? { cursor } : {}) }, { signal });
      data.push(...page.data);
      cursor = page.nextCursor;
      pages++;
    } while (cursor && data.length < 100 && pages < SEARCH_PAGES);
    const more = !!cursor || data.length > 100;
    const note = !more ? '' : data.length > 0 ? 'Showing the first matches; refine the search to see others.'
      : `No match among the first ${(SEARCH_PAGES * 10_000).toLocaleString('en')} customers searched; a longer term searches them all.`;
    return { data: data.slice(0, 100), partial: more, note };
  }
  const needle = q.toLowerCase();
  const exact = await Promise.all([
    q.includes('@') ? get('/crm/customers', { email: q, status, limit: 100 }, { signal }).catch(() => ({ data: [] })) : { data: [] },
    get('/crm/customers', { externalId: q, status, limit: 10 }, { signal }).catch(() => ({ data: [] })),
  ]);
  const scan = await getPages('/crm/customers', { status, limit: 250 }, SCAN_PAGES, { signal });
  const matches = scan.data.filter((c) =>
    displayName(c).toLowerCase().includes(needle) ||
    (c.externalId ?? '').toLowerCase().includes(needle) ||
    (c.emails || []).some((e) => e.email.toLowerCase().includes(needle)));
  const seen = new Set();
  const data = [...exact[0].data, ...exact[1].data, ...matches].filter((c) => !seen.has(c.uuid) && seen.add(c.uuid));
  return {
    data,
    partial: scan.more,
    note: scan.more ? `Exact email and external ID matches, and name matches among the first ${SCAN_PAGES * 250} customers.` : '',
  };
}

export function customersPage({ main, query, signal, navigate }) {
  const q = h('input', { type: 'search', name: 'q', value: query.q || '', autocomplete: 'off', spellcheck: 'false' });
  const status = select('status', [['active', 'Active'], ['disabled', 'Disabled (merged)'], ['all', 'All']], query.status || 'active');
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Search');
  const form = h('form', { class: 'card filters', role: 'search', 'aria-label': 'Customers' },
    field('Name, email or external ID', q),
    field('Status', status),
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    if (q.value.trim()) p.set('q', q.value.trim());
    if (status.value !== 'active') p.set('status', status.value);
    navigate(`#/customers${p.toString() ? `?${p}` : ''}`, true);
    document.getElementById('results-h')?.focus();
  });

  const results = h('div', { class: 'list' });
  const rows = (list) => list.map((c) => h('tr', null,
    h('th', { scope: 'row' }, h('a', { href: `#/customers/${encodeURIComponent(c.uuid)}` }, displayName(c))),
    h('td', null, c.externalId === null ? h('span', { class: 'muted' }, 'none') : h('code', null, c.externalId)),
    h('td', null, primaryEmail(c) || '—'),
    h('td', null, statusBadge(c.status), c.mergedInto ? [' merged into ', h('a', { href: `#/customers/${encodeURIComponent(c.mergedInto.uuid)}` }, refName(c.mergedInto))] : null),
    h('td', null, time(c.updatedAt))));
  const columns = ['Name', 'External ID', 'Email', 'Status', 'Updated'];

  const term = (query.q || '').trim();
  main.append(
    h('h1', null, 'Customers'),
    form,
    h('section', { 'aria-labelledby': 'results-h' },
      h('h2', { id: 'results-h', tabindex: '-1' }, term ? `Results for “${closeBidi(term)}”` : { active: 'Active customers', disabled: 'Disabled (merged) customers', all: 'All customers' }[status.value] ?? 'Customers'),
      results));

  if (term) {
    load(results, 'customers', () => search(term, status.value, signal), (r) => {
      if (r.data.length === 0) return results.append(empty(`No customer matches “${term}”.`, r.note ? h('p', { class: 'muted' }, r.note) : null));
      results.append(h('p', { class: 'muted', role: 'status' }, `${r.data.length} match${r.data.length === 1 ? '' : 'es'}.`, r.note ? ` ${r.note}` : ''));
      results.append(table({ caption: `Customers matching ${term}`, columns, rows: rows(r.data) }));
    });
    return;
  }
  // No search term: browse, newest pages via the cursor.
  load(results, 'customers', () => get('/crm/customers', { status: status.value, limit: 50 }, { signal }), (page) => {
    if (page.data.length === 0) return results.append(empty(status.value === 'active' ? 'No customers yet. Integrations create them with POST /crm/customers.' : 'No customers with this status.'));
    const tbl = table({ caption: 'Customers', columns, rows: rows(page.data) });
    results.append(tbl);
    const more = moreButton({
      cursor: page.nextCursor, what: 'more customers',
      fetchPage: (cursor) => get('/crm/customers', { status: status.value, limit: 50, cursor }, { signal }),
      onPage: (data) => tbl.querySelector('tbody').append(...rows(data)),
    });
    if (more) results.append(more);
  });
}
