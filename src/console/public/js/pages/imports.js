// Imports (API 2026-11): choose an NDJSON or CSV file, start the import, watch its progress bar, see the
// lines that failed; recent imports below. The file is sent as the raw request body (never parsed here).
import { ApiError, get, post, session } from '../api.js';
import { announce, badge, clear, dl, errorBox, field, fmtTime, h, load, table } from '../dom.js';

const BASE = '/api/2026-11/crm/imports';
const FINISHED = new Set(['completed', 'failed', 'cancelled']);

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
  if (!res.ok) throw new ApiError(res.status, body.errors || [{ message: `The server answered ${res.status}`, errorCode: '', moreInfo: '' }]);
  return body;
}

async function errorsOf(uuid, signal) {
  const res = await fetch(`${BASE}/${uuid}/errors`, { headers: { authorization: `Bearer ${session.key}` }, signal, cache: 'no-store' });
  if (!res.ok) throw new ApiError(res.status, [{ message: 'Could not load the errors', errorCode: '', moreInfo: '' }]);
  return (await res.text()).split('\n').filter(Boolean).slice(0, 500).map((l) => JSON.parse(l));
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

  const showErrors = async (imp) => {
    if (imp.failed === 0) return;
    const list = await errorsOf(imp.uuid, signal);
    progressBody.append(h('h3', null, `Lines that failed (${imp.failed})`), table({
      caption: 'Lines that failed', columns: ['Line', 'Errors'],
      rows: list.map((e) => h('tr', null, h('td', null, String(e.line)), h('td', null, e.errors.map((x) => `${x.message}${x.errorCode ? ` [${x.errorCode}]` : ''}`).join('; ')))),
    }));
  };
  const watch = async (imp) => {
    progress.hidden = false;
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
      clear(progressBody, progressView(imp), cancel);
      if (FINISHED.has(imp.status)) break;
      await new Promise((r) => setTimeout(r, 500));
      if (signal.aborted) return;
      imp = await get(`${BASE}/${imp.uuid}`, undefined, { signal });
    }
    announce(`Import ${imp.status}: ${imp.rowsDone} lines, ${imp.failed} failed`);
    await showErrors(imp);
    listRecent();
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(message);
    const f = file.files && file.files[0];
    if (!f) {
      message.append(errorBox({ errors: [{ message: 'Choose a file to import.', errorCode: '', moreInfo: '' }] }, 'No file'));
      return;
    }
    start.disabled = true;
    start.textContent = 'Uploading…';
    try {
      const imp = await upload(f, events.checked, signal);
      announce('Import started');
      await watch(imp);
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      message.append(errorBox(err, 'The import was refused'));
    } finally {
      start.disabled = false;
      start.textContent = 'Start import';
    }
  });

  const listRecent = () => load(recent, 'imports', () => get(BASE, { limit: 20 }, { signal }), (page) => {
    recent.append(page.data.length === 0 ? h('p', { class: 'muted' }, 'No imports yet.') : table({
      caption: 'Recent imports', columns: ['Started', 'Format', 'Status', 'Lines', 'Created', 'Updated', 'Failed'],
      rows: page.data.map((i) => h('tr', null, h('td', null, fmtTime(i.createdAt)), h('td', null, i.format), h('td', null, statusBadge(i.status)),
        h('td', null, `${i.rowsDone} / ${i.rowsReceived}`), h('td', null, String(i.created)), h('td', null, String(i.updated)), h('td', null, String(i.failed)))),
    }));
  });

  main.append(h('h1', null, 'Imports'), form, progress, h('h2', null, 'Recent imports'), recent);
  listRecent();
}
