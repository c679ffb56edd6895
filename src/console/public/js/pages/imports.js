// Imports (API 2026-11): choose an NDJSON or CSV file, start the import, watch its progress bar, see the
// lines that failed; recent imports below, each opening its own page (#/imports/{uuid}: progress, live while
// it runs, and its failed lines). The file is sent as the raw request body (never parsed here).
import { ApiError, get, post, refusal, session } from '../api.js';
import { announce, badge, busy, clear, dl, errorBox, field, h, load, table, time } from '../dom.js';

const BASE = '/api/2026-11/crm/imports';
const FINISHED = new Set(['completed', 'failed', 'cancelled']);
const SHOWN_ERRORS = 500; // failed lines listed (the first ones)

function contentTypeOf(file) {
  return /\.csv$/i.test(file.name) || file.type === 'text/csv' ? 'text/csv' : 'application/x-ndjson';
}

async function upload(file, events, signal) {
  let res;
  try {
    res = await fetch(`${BASE}?events=${events}`, {
      method: 'POST',
      body: file,
      headers: { 'content-type': contentTypeOf(file), authorization: `Bearer ${session.key}`, 'x-bulb-client': 'console', accept: 'application/json' },
      signal, cache: 'no-store', credentials: 'omit',
    });
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError(0, [{ message: 'The upload did not reach the server.', errorCode: 'NetworkError', moreInfo: String(err && err.message) }]);
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw refusal(res.status, body.errors || [{ message: `The server answered ${res.status}`, errorCode: '', moreInfo: '' }]);
  return body;
}

async function errorsOf(uuid, signal) {
  const res = await fetch(`${BASE}/${encodeURIComponent(uuid)}/errors`, { headers: { authorization: `Bearer ${session.key}`, 'x-bulb-client': 'console' }, signal, cache: 'no-store', credentials: 'omit' });
  if (!res.ok) throw refusal(res.status, (await res.json().catch(() => ({}))).errors || [{ message: `The server answered ${res.status}`, errorCode: '', moreInfo: '' }]);
  // Reads the streamed NDJSON only as far as the lines shown (an import can have millions of failed lines).
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const lines = [];
  let rest = '';
  for (;;) {
    const { done, value } = await reader.read();
    rest += decoder.decode(value, { stream: !done });
    const parts = rest.split('\n');
    rest = done ? '' : parts.pop();
    lines.push(...parts.filter(Boolean).map((l) => JSON.parse(l)));
    if (done || lines.length >= SHOWN_ERRORS) break;
  }
  if (lines.length >= SHOWN_ERRORS) reader.cancel().catch(() => {});
  return lines.slice(0, SHOWN_ERRORS);
}

const statusBadge = (s) => badge(s, s === 'completed' ? 'ok' : s === 'failed' ? 'bad' : 'muted');

function progressView(imp) {
  const max = Math.max(imp.rowsReceived, 1);
  const pct = Math.round((imp.rowsDone / max) * 100);
  return [
    h('p', null, 'Status: ', statusBadge(imp.status)),
    h('progress', { max: String(max), value: String(imp.rowsDone), 'aria-label': 'Import progress', 'aria-valuetext': `${pct}%` }),
    h('p', { class: 'muted', dataset: { testid: 'import-percent' } }, `${pct}% · ${imp.rowsDone} of ${imp.rowsReceived} lines`),
    dl([
      ['Created', String(imp.created)], ['Updated', String(imp.updated)], ['Unchanged', String(imp.unchanged)], ['Failed', String(imp.failed)],
      ['Rows per second', String(imp.rowsPerSecond)],
      ['Time left', imp.estimatedSecondsLeft === null ? '—' : `${imp.estimatedSecondsLeft} s`],
      ['Events', imp.events ? 'yes' : 'no'],
      imp.error ? ['Error', imp.error] : null,
    ]),
  ];
}

/**
 * Shows imp in box: its progress, refreshed every 500 ms until it finishes (with Cancel meanwhile), then its
 * failed lines. onFinished runs once it has finished while watched (not for one finished already).
 */
async function watchImport(box, imp, signal, onFinished) {
  const wasRunning = !FINISHED.has(imp.status);
  for (;;) {
    const cancel = FINISHED.has(imp.status) ? null : h('button', { type: 'button', class: 'btn' }, 'Cancel import');
    cancel?.addEventListener('click', async () => {
      try {
        await post(`${BASE}/${imp.uuid}/cancel`);
        announce('Import cancelled');
      } catch (err) {
        announce(err.message, 'error');
      }
    });
    clear(box, progressView(imp), cancel);
    if (FINISHED.has(imp.status)) break;
    await new Promise((r) => setTimeout(r, 500));
    if (signal.aborted) return;
    imp = await get(`${BASE}/${imp.uuid}`, undefined, { signal });
  }
  if (wasRunning) announce(`Import ${imp.status}: ${imp.rowsDone} lines, ${imp.failed} failed`);
  if (imp.failed > 0) {
    const list = h('div');
    box.append(h('h3', null, `Lines that failed (${imp.failed})`), list);
    await load(list, 'the failed lines', () => errorsOf(imp.uuid, signal), (lines) => clear(list,
      imp.failed > lines.length ? h('p', { class: 'muted' }, `The first ${lines.length} are shown.`) : null,
      table({
        caption: 'Lines that failed', columns: ['Line', 'Errors'],
        rows: lines.map((e) => h('tr', null, h('td', null, String(e.line)), h('td', null, e.errors.map((x) => `${x.message}${x.errorCode ? ` [${x.errorCode}]` : ''}`).join('; ')))),
      })));
  }
  if (wasRunning) onFinished?.(imp);
}

const importLink = (i, text, label) => h('a', { href: `#/imports/${encodeURIComponent(i.uuid)}`, 'aria-label': label }, text);

export function importsPage({ main, signal }) {
  const file = h('input', { type: 'file', name: 'file', accept: '.ndjson,.jsonl,.csv,application/x-ndjson,text/csv', required: true });
  const events = h('input', { type: 'checkbox', name: 'events', checked: true });
  const start = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Start import');
  const message = h('div');
  const form = h('form', { class: 'card', 'aria-label': 'New import' },
    field('File (NDJSON or CSV)', file, 'NDJSON: one customer per line. CSV: a header row (externalId, firstName, lastName, loyaltyTier, emails, phones; emails and phones ;-separated).'),
    h('label', { class: 'check' }, events, ' Emit events (webhooks) for the customers it creates or changes'),
    message,
    h('div', { class: 'actions' }, start));
  const progress = h('section', { class: 'card', 'aria-labelledby': 'import-h', hidden: true },
    h('h2', { id: 'import-h' }, 'Import progress'), h('div', { 'aria-live': 'polite' }));
  const progressBody = progress.lastElementChild;
  const recent = h('div', { class: 'list' });

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (start.getAttribute('aria-busy') === 'true') return; // an upload is under way
    clear(message);
    const f = file.files && file.files[0];
    if (!f) {
      message.append(errorBox({ errors: [{ message: 'Choose a file to import.', errorCode: '', moreInfo: '' }] }, 'No file'));
      return;
    }
    // The progress shown is the last import's: hidden until this one is accepted (a refused file was shown above the
    // progress of the import before it, as if it had been imported; found by a probe).
    progress.hidden = true;
    start.textContent = 'Uploading…';
    await busy(start, async () => {
      try {
        const imp = await upload(f, events.checked, signal);
        announce('Import started');
        progress.hidden = false;
        await watchImport(progressBody, imp, signal, listRecent);
      } catch (err) {
        if (err && err.name === 'AbortError') return;
        message.append(errorBox(err, 'The import was refused'));
      } finally {
        start.textContent = 'Start import';
      }
    });
  });

  const listRecent = () => load(recent, 'imports', () => get(BASE, { limit: 20 }, { signal }), (page) => {
    recent.append(page.data.length === 0 ? h('p', { class: 'muted' }, 'No imports yet.') : table({
      caption: 'Recent imports', columns: ['Started', 'Format', 'Status', 'Lines', 'Created', 'Updated', 'Failed'], stack: true,
      rows: page.data.map((i) => h('tr', null,
        h('th', { scope: 'row' }, importLink(i, time(i.createdAt), `Import of ${new Date(i.createdAt).toISOString()}`)),
        h('td', null, i.format), h('td', null, statusBadge(i.status)),
        h('td', null, `${i.rowsDone} / ${i.rowsReceived}`), h('td', null, String(i.created)), h('td', null, String(i.updated)),
        h('td', null, i.failed > 0 ? importLink(i, `${i.failed} (view lines)`, `${i.failed} failed lines of the import of ${new Date(i.createdAt).toISOString()}`) : '0'))),
    }));
  });

  main.append(h('h1', null, 'Imports'), form, progress, h('h2', null, 'Recent imports'), recent);
  listRecent();
}

/** #/imports/{uuid}: one import, live while it runs, then its failed lines (any import, however old). */
export function importPage({ main, params, signal }) {
  const uuid = params[0];
  const heading = h('h1', null, 'Import');
  const body = h('section', { class: 'card', 'aria-labelledby': 'import-h' }, h('h2', { id: 'import-h' }, 'Progress'), h('div', { 'aria-live': 'polite' }));
  main.append(h('p', { class: 'crumbs' }, h('a', { href: '#/imports' }, 'Imports'), ' / ', h('span', { 'aria-current': 'page' }, uuid)), heading, body);
  const box = body.lastElementChild;
  load(box, 'the import', () => get(`${BASE}/${encodeURIComponent(uuid)}`, undefined, { signal }), (imp) => {
    heading.replaceChildren(`Import of `, time(imp.createdAt));
    document.title = `${heading.textContent} · Bulb console`;
    watchImport(box, imp, signal).catch((err) => err.name !== 'AbortError' && box.append(errorBox(err, 'Could not follow the import')));
  });
}
