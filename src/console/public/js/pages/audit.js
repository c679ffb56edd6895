// Integrations → Audit log: administrative and destructive acts, newest first, filtered by action, actor
// (API key or auth client uuid or name, or "system") and time; read-only (the log is append-only).
import { get } from '../api.js';
import { clear, closeBidi, empty, field, h, load, moreButton, select, table, time, toLocalInput, fromLocalInput, zoneHint } from '../dom.js';

const PAGE = 50;
// GET /integrations/auditLog is served from 2026-11 on, whatever version the rest of the console uses.
const PATH = '/api/2026-11/integrations/auditLog';
const ACTIONS = [
  'apiKey.created', 'apiKey.revoked', 'authClient.created', 'authClient.revoked',
  'subscription.created', 'subscription.changed', 'subscription.deleted', 'subscription.disabled',
  'subscription.secretRevealed', 'subscription.secretRotated', 'merge.created', 'merge.undone',
  'import.started', 'import.cancelled', 'replay.started', 'replay.cancelled',
];
const ACTOR_TYPE = { apiKey: 'API key', authClient: 'Auth client', system: 'System' };


function actorCell(a) {
  if (a.type === 'system') return h('span', null, 'System');
  return h('span', null, a.name ?? '(deleted)', ' ', h('span', { class: 'muted' }, `(${ACTOR_TYPE[a.type] ?? a.type})`), h('br'), h('code', { class: 'muted' }, a.uuid));
}

/** A detail's value as text, every string in it closed where it ends (an override in one reversed the rest of the line). */
const detailValue = (v) => (typeof v === 'string' ? closeBidi(v) : JSON.stringify(v, (_k, x) => (typeof x === 'string' ? closeBidi(x) : x)));

function detailsText(d) {
  const entries = Object.entries(d || {});
  if (entries.length === 0) return '—';
  return h('span', { class: 'mono break' }, entries.map(([k, v]) => `${k}: ${detailValue(v)}`).join('; '));
}

export function auditPage({ main, query, signal, navigate }) {
  const filters = { action: query.action || '', actor: query.actor || '', since: query.since || '' };
  const action = select('action', [['', 'All actions'], ...ACTIONS.map((a) => [a, a])], filters.action);
  const actor = h('input', { type: 'text', name: 'actor', value: filters.actor, maxlength: '200', autocomplete: 'off', spellcheck: 'false' });
  const since = h('input', { type: 'datetime-local', name: 'since', value: toLocalInput(filters.since) });
  const apply = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply filters');
  const reset = h('button', { type: 'button', class: 'btn' }, 'Clear filters');
  const form = h('form', { class: 'card filters', role: 'search', 'aria-label': 'Filter the audit log' },
    field('Action', action), field('Actor', actor, 'An API key or auth client name or uuid, or "system".'), field('From', since, zoneHint()),
    h('div', { class: 'actions' }, apply, reset));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    if (action.value) p.set('action', action.value);
    if (actor.value.trim()) p.set('actor', actor.value.trim());
    if (since.value) p.set('since', fromLocalInput(since.value));
    navigate(`#/integrations/audit-log${p.toString() ? `?${p}` : ''}`, true);
    document.getElementById('audit-h')?.focus();
  });
  reset.addEventListener('click', () => navigate('#/integrations/audit-log', true));

  const listBox = h('div', { class: 'list' });
  main.append(
    h('h1', null, 'Audit log'),
    h('p', { class: 'lead' }, 'Every administrative or destructive act, newest first: who did it (API key, auth client or the system), what, to which record, from which address. Entries cannot be changed or removed.'),
    form,
    h('section', { 'aria-labelledby': 'audit-h' }, h('h2', { id: 'audit-h', tabindex: '-1' }, 'Entries'), listBox),
  );

  const q = () => ({ ...filters, limit: PAGE });
  const rowOf = (e) => h('tr', null,
    h('td', null, time(e.createdAt)),
    h('th', { scope: 'row' }, h('code', null, e.action)),
    h('td', null, actorCell(e.actor)),
    h('td', null, e.target.type, e.target.id ? [h('br'), h('code', { class: 'muted' }, e.target.id)] : null),
    h('td', null, e.ipAddress ?? '—'),
    h('td', { class: 'details' }, detailsText(e.details)));

  function render(page) {
    clear(listBox);
    if (page.data.length === 0) {
      listBox.append(empty(Object.values(filters).some(Boolean) ? 'No entries match these filters.' : 'No administrative acts recorded yet.'));
      return;
    }
    const t = table({ caption: 'Audit log entries, newest first', columns: ['Time', 'Action', 'Actor', 'Target', 'IP address', 'Details'], rows: page.data.map(rowOf) });
    const tbody = t.querySelector('tbody');
    listBox.append(t);
    const more = moreButton({
      label: 'Load older entries', cursor: page.nextCursor, what: 'older entries',
      fetchPage: (cursor) => get(PATH, { ...q(), cursor }, { signal }),
      onPage: (rows) => tbody.append(...rows.map(rowOf)),
    });
    if (more) listBox.append(more);
  }

  load(listBox, 'audit log', () => get(PATH, q(), { signal }), render);
}
