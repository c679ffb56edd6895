// Integrations → Webhooks Logs: delivery attempts, newest first, filtered by subscription, event type, outcome
// and time; a detail view (request headers and body, response, error, timing, next attempt); retry; live refresh.
import { get, post } from '../api.js';
import { announce, badge, busy, clear, closeBidi, dl, empty, errorBox, field, fmtJson, fmtTime, h, load, openDialog, select, table, time, toLocalInput, fromLocalInput, zoneHint } from '../dom.js';
import { SUBS } from './webhooks.js';

const PAGE = 50;
const LIVE_MS = 3000;
// Pages followed for a page of rows: filtered by a common event type, an outcome or a time range, the API looks at
// 5,000 attempts a page, so a page may hold few, none even, with more to come (docs/delivery.md "Log lists").
const SCAN_PAGES = 20;
// Subscriptions the filter offers: the first page (oldest first); another is given by its UUID (every one, a page
// after another, took 40 requests and a select of 10,000 options for 10,000 subscriptions).
const SUB_OPTIONS = 100;
const OTHER = 'other';
const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';


const outcomeBadge = (a) => (a.outcome === 'success' ? badge('Success', 'ok') : badge('Failure', 'bad'));
const statusText = (a) => (a.statusCode ? String(a.statusCode) : a.errorCode ? a.errorCode : '—');

export function logsPage({ main, query, signal, navigate }) {
  const filters = {
    subscription: query.subscription || '',
    eventType: query.eventType || '',
    outcome: query.outcome || '',
    since: query.since || '',
    until: query.until || '',
    delivery: query.delivery || '', // set from an attempt's detail view: "all attempts of this delivery"
  };
  const subSelect = select('subscription', [['', 'All subscriptions']], filters.subscription);
  // Shown with "Another subscription…": disabled while hidden (a required field hidden would block the form).
  const subId = h('input', { type: 'text', name: 'subscriptionId', required: true, disabled: true, pattern: UUID, spellcheck: 'false', autocomplete: 'off', placeholder: '00000000-0000-0000-0000-000000000000' });
  const subIdBox = field('UUID', subId, `Of a subscription not in the list, which offers the first ${SUB_OPTIONS}: the Logs link of its row on the Webhooks page filters by it too.`);
  subIdBox.hidden = true;
  subSelect.addEventListener('change', () => {
    subIdBox.hidden = subSelect.value !== OTHER;
    subId.disabled = subIdBox.hidden;
    if (!subIdBox.hidden) subId.focus();
  });
  const typeSelect = select('eventType', [['', 'All event types']], filters.eventType);
  const outcome = select('outcome', [['', 'Any outcome'], ['success', 'Success'], ['failure', 'Failure']], filters.outcome);
  const since = h('input', { type: 'datetime-local', name: 'since', value: toLocalInput(filters.since) });
  const until = h('input', { type: 'datetime-local', name: 'until', value: toLocalInput(filters.until) });
  const apply = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply filters');
  const reset = h('button', { type: 'button', class: 'btn' }, 'Clear filters');
  const live = h('input', { type: 'checkbox', id: 'live-refresh', checked: query.live !== 'off' });
  const updated = h('span', { class: 'muted', 'aria-live': 'off' });

  const form = h('form', { class: 'card filters', role: 'search', 'aria-label': 'Filter attempts' },
    field('Subscription', subSelect), subIdBox, field('Event type', typeSelect), field('Outcome', outcome),
    field('From', since, zoneHint()), field('Until', until, zoneHint()),
    h('div', { class: 'actions' }, apply, reset));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    const subscription = subSelect.value === OTHER ? subId.value.trim().toLowerCase() : subSelect.value;
    if (subscription) p.set('subscription', subscription);
    if (typeSelect.value) p.set('eventType', typeSelect.value);
    if (outcome.value) p.set('outcome', outcome.value);
    if (since.value) p.set('since', fromLocalInput(since.value));
    if (until.value) p.set('until', fromLocalInput(until.value));
    if (filters.delivery) p.set('delivery', filters.delivery);
    if (!live.checked) p.set('live', 'off');
    navigate(`#/integrations/webhooks/logs${p.toString() ? `?${p}` : ''}`, true);
    document.getElementById('attempts-h')?.focus();
  });
  reset.addEventListener('click', () => navigate('#/integrations/webhooks/logs', true));

  const listBox = h('div', { class: 'list' });
  main.append(...[
    h('h1', null, 'Webhooks Logs'),
    h('p', { class: 'lead' }, 'Every delivery attempt, newest first. A failed delivery is retried on the schedule; after the last attempt it stays failed until retried here.'),
    form,
    filters.delivery ? h('p', { class: 'notice notice-filter' }, 'Showing only the attempts of delivery ', h('code', null, filters.delivery), '. ',
      h('a', { href: '#/integrations/webhooks/logs' }, 'Show all attempts')) : null,
    h('section', { 'aria-labelledby': 'attempts-h' },
      h('div', { class: 'section-head' },
        h('h2', { id: 'attempts-h', tabindex: '-1' }, 'Attempts'),
        h('div', { class: 'check' }, live, h('label', { for: live.id }, 'Live refresh')), updated),
      listBox),
  ].filter(Boolean));

  // Fill the filter selects (subscriptions by URL, event types) without blocking the list.
  const subsByUuid = new Map();
  get(SUBS, { limit: SUB_OPTIONS }, { signal }).then(async (page) => {
    const subs = page.data;
    // The one filtered by (a Logs link, a UUID given) past the first page: read alone, named by its UUID if gone.
    const wanted = filters.subscription;
    if (wanted && !subs.some((s) => s.uuid === wanted)) subs.push(await get(`${SUBS}/${encodeURIComponent(wanted)}`, undefined, { signal }).catch(() => ({ uuid: wanted })));
    for (const s of subs) {
      if (s.url !== undefined) subsByUuid.set(s.uuid, s);
      // The URL closed where it ends: an override in it reversed the event types after it.
      const text = s.url === undefined ? s.uuid : `${closeBidi(s.url)} (${(s.eventTypes ?? [s.eventType]).join(', ')})`;
      subSelect.append(h('option', { value: s.uuid, selected: s.uuid === filters.subscription }, text));
    }
    if (page.nextCursor) subSelect.append(h('option', { value: OTHER }, 'Another subscription (by its UUID)…'));
  }, () => {});
  get('/integrations/webhooks/eventTypes', undefined, { signal }).then((types) => {
    const list = Array.isArray(types) ? types : types.data ?? types.eventTypes ?? [];
    for (const t of list) {
      const name = typeof t === 'string' ? t : t.eventType ?? t.name;
      typeSelect.append(h('option', { value: name, selected: name === filters.eventType }, name));
    }
  }, () => {});

  const q = () => ({ ...filters, limit: PAGE });
  let attempts = [];
  let cursor = null;
  let tbody;

  /** The attempts from `from` (null: the newest) on, following the cursor up to SCAN_PAGES pages for a page of them. */
  async function pagesFrom(from) {
    let data = [];
    let at = from;
    for (let n = 0; n < SCAN_PAGES; n++) {
      const page = await get('/integrations/webhooks/logs', { ...q(), ...(at ? { cursor: at } : {}) }, { signal });
      data = data.concat(page.data);
      at = page.nextCursor;
      if (!at || data.length >= PAGE) break;
    }
    return { data, nextCursor: at };
  }

  function rowOf(a) {
    const details = h('button', { type: 'button', class: 'btn btn-small', dataset: { uuid: a.uuid }, 'aria-label': `Details of attempt ${a.attemptNumber} of ${a.eventType} to ${a.url}` }, 'Details');
    details.addEventListener('click', () => showDetails(a));
    return h('tr', { class: a.outcome === 'failure' ? 'row-failure' : '' },
      h('td', null, time(a.startedAt)),
      h('td', null, h('code', null, a.eventType)),
      h('td', { class: 'url' }, h('span', { class: 'mono break' }, a.url)),
      h('td', { class: 'num' }, String(a.attemptNumber)),
      h('td', null, statusText(a)),
      h('th', { scope: 'row' }, outcomeBadge(a)),
      h('td', { class: 'num' }, `${a.durationMs} ms`),
      h('td', { class: 'row-actions' }, details));
  }

  function render() {
    clear(listBox);
    if (attempts.length === 0) {
      const filtered = Object.values(filters).some(Boolean);
      const text = cursor ? 'No attempts match these filters among the newest looked at.' : filtered ? 'No attempts match these filters.' : 'No delivery attempts yet.';
      listBox.append(empty(text, h('p', { class: 'muted' }, live.checked ? 'This list refreshes by itself.' : '')));
      tbody = undefined;
    } else {
      const t = table({ caption: 'Delivery attempts, newest first', columns: ['Started', 'Event type', 'URL', 'Attempt', 'Status', 'Outcome', 'Duration', h('span', { class: 'visually-hidden' }, 'Actions')], rows: attempts.map(rowOf) });
      tbody = t.querySelector('tbody');
      listBox.append(t);
    }
    if (cursor) {
      const more = h('button', { type: 'button', class: 'btn' }, attempts.length ? 'Load older attempts' : 'Look further back');
      more.addEventListener('click', () => busy(more, async () => {
        try {
          const page = await pagesFrom(cursor);
          attempts = attempts.concat(page.data);
          cursor = page.nextCursor;
          if (!tbody) render();
          else {
            tbody.append(...page.data.map(rowOf));
            if (!cursor) more.remove();
          }
        } catch (err) {
          listBox.append(errorBox(err, 'Could not load older attempts'));
        }
      }));
      listBox.append(h('div', { class: 'actions' }, more));
    }
  }

  const stamp = () => (updated.textContent = `Updated ${fmtTime(new Date().toISOString()).slice(11)}`);
  function initial() {
    return load(listBox, 'attempts', () => pagesFrom(null), (page) => {
      attempts = page.data;
      cursor = page.nextCursor;
      render();
      stamp();
    });
  }

  /** Live refresh: new attempts (immutable rows) are put on top; focus and older pages stay as they are. */
  const MAX_POLL_PAGES = 20;
  let inFlight = false;
  async function poll(force = false) {
    if (inFlight || (!force && (!live.checked || document.hidden))) return;
    inFlight = true;
    try {
      // Pages back until one holds a row already shown: more than a page can arrive between two polls (a failure
      // burst), and taking the first page alone left a gap that nothing filled. Past MAX_POLL_PAGES the list starts
      // again from the newest (Load older attempts then goes on from there), so it never has a hole.
      const known = new Set(attempts.map((a) => a.uuid));
      let fresh = [];
      let page = await get('/integrations/webhooks/logs', q(), { signal });
      let met = false;
      for (let n = 1; ; n++) {
        met = page.data.some((a) => known.has(a.uuid));
        fresh = fresh.concat(page.data.filter((a) => !known.has(a.uuid)));
        // Nothing shown: an empty page (a common event type's 5,000 newest attempts without a match) ends the look;
        // following it to the end every few seconds would read the whole list for nothing.
        if (met || !page.nextCursor || n >= MAX_POLL_PAGES || (known.size === 0 && page.data.length === 0)) break;
        page = await get('/integrations/webhooks/logs', { ...q(), cursor: page.nextCursor }, { signal });
      }
      if (!met && page.nextCursor && (attempts.length > 0 || fresh.length > 0)) {
        attempts = fresh;
        cursor = page.nextCursor;
        render();
      } else if (fresh.length) {
        attempts = fresh.concat(attempts);
        if (!tbody) render();
        else tbody.prepend(...fresh.map(rowOf));
      }
      stamp();
    } catch (err) {
      if (err.name !== 'AbortError') updated.textContent = `Live refresh failed: ${err.message}`;
    } finally {
      inFlight = false;
    }
  }
  const timer = setInterval(() => poll(), LIVE_MS);
  signal.addEventListener('abort', () => clearInterval(timer));
  live.addEventListener('change', () => {
    announce(live.checked ? 'Live refresh on' : 'Live refresh off');
    if (live.checked) poll();
  });

  function showDetails(a) {
    const sub = subsByUuid.get(a.subscriptionUuid);
    const headers = Object.entries(a.requestHeaders || {});
    const retry = a.outcome === 'failure' ? h('button', { type: 'button', class: 'btn btn-primary' }, 'Retry delivery') : null;
    const close = h('button', { type: 'button', class: 'btn' }, 'Close');
    const msg = h('div');
    const nextAttempt = a.nextAttemptAt ? time(a.nextAttemptAt) : a.outcome === 'failure' ? 'None scheduled (no more automatic retries)' : '—';
    const dlg = openDialog({
      title: `Attempt ${a.attemptNumber}: ${a.eventType}`,
      wide: true,
      content: [
        dl([
          ['Outcome', outcomeBadge(a)],
          ['Status code', a.statusCode ? String(a.statusCode) : '—'],
          ['Error', a.errorCode ? h('code', null, a.errorCode) : '—'],
          ['URL', h('span', { class: 'mono break' }, a.url)],
          ['Started', time(a.startedAt)],
          ['Duration', `${a.durationMs} ms`],
          ['Next attempt', nextAttempt],
          ['Attempt number', String(a.attemptNumber)],
          ['Event', h('code', null, a.eventUuid)],
          ['Delivery', [h('code', null, a.deliveryUuid), ' ', h('a', { href: `#/integrations/webhooks/logs?delivery=${a.deliveryUuid}`, onclick: () => dlg.close() }, 'All attempts of this delivery')]],
          ['Subscription', sub ? h('span', { class: 'mono break' }, sub.url) : h('code', null, a.subscriptionUuid)],
        ]),
        h('h3', null, 'Request headers'),
        headers.length
          ? table({ caption: 'Request headers', columns: ['Header', 'Value'], rows: headers.map(([k, v]) => h('tr', null, h('th', { scope: 'row' }, h('code', null, k)), h('td', { class: 'mono break' }, String(v)))), className: 'table-compact' })
          : h('p', { class: 'muted' }, 'None recorded.'),
        h('h3', null, 'Request body'),
        h('pre', { class: 'code-block', tabindex: '0', 'aria-label': 'Request body' }, fmtJson(a.requestBody)),
        h('h3', null, `Response${a.statusCode ? ` (${a.statusCode})` : ''}`),
        a.responseBody
          ? h('pre', { class: 'code-block', tabindex: '0', 'aria-label': 'Response body' }, fmtJson(a.responseBody))
          : h('p', { class: 'muted' }, a.errorCode && !a.statusCode ? `No response: ${a.errorCode}.` : 'Empty response body.'),
        msg,
      ],
      actions: [retry, close].filter(Boolean),
    });
    close.addEventListener('click', dlg.close);
    retry?.addEventListener('click', () => busy(retry, async () => {
      clear(msg);
      try {
        await post(`/integrations/webhooks/deliveries/${a.deliveryUuid}/retry`);
        announce('Retry started: the new attempt appears at the top of the list', 'success');
        dlg.close();
        setTimeout(() => poll(true), 300);
      } catch (err) {
        msg.append(errorBox(err, 'Could not retry the delivery'));
      }
    }));
  }

  initial();
}
