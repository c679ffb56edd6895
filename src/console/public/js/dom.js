// Small DOM toolkit: element builder (text only, never innerHTML), formatting, loading/empty/error states,
// dialogs, copy buttons and the status announcer.

/** h('button', { class: 'x', onclick: fn, disabled: true }, 'text', child, [more]) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'class') el.className = v;
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'value' || k === 'checked' || k === 'selected') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(closeBidi(String(c))));
  }
}

/**
 * `s` with every bidirectional embedding, override or isolate it opens closed at its end, so that a value cannot
 * reverse the text after it: an externalId with an unclosed right-to-left override (U+202E) turned "Merging … into …"
 * around the other customer's name backwards (found by a probe). Text without those characters is returned as is.
 */
export function closeBidi(s) {
  if (!/[\u202A-\u202E\u2066-\u2069]/.test(s)) return s;
  // What is open at the end, as the bidi algorithm reads it (UAX #9 X2–X7): a PDF closes the last embedding only
  // when no isolate opened after it; a PDI closes its isolate and every embedding opened inside it. Closed innermost
  // first: a PDF put after a still-open isolate would be ignored, leaving the override open.
  const open = [];
  for (const ch of s) {
    if (ch >= '\u202A' && ch <= '\u202E' && ch !== '\u202C') open.push('\u202C');
    else if (ch === '\u202C') { if (open.at(-1) === '\u202C') open.pop(); }
    else if (ch >= '\u2066' && ch <= '\u2068') open.push('\u2069');
    else if (ch === '\u2069' && open.includes('\u2069')) open.length = open.lastIndexOf('\u2069');
  }
  return s + open.reverse().join('');
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let seq = 0;
export const uid = (prefix = 'f') => `${prefix}-${++seq}`;

/** A labelled form field: the label's for= points at the control; an optional hint is its description. */
export function field(label, control, hint) {
  control.id ||= uid('field');
  const hintEl = hint ? h('p', { class: 'hint', id: uid('hint') }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

export function select(name, options, value) {
  return h('select', { name }, options.map((o) => {
    const [v, text] = Array.isArray(o) ? o : [o, o];
    return h('option', { value: v, selected: v === value }, text);
  }));
}

const pad = (n) => String(n).padStart(2, '0');

/** The browser's offset from UTC at that instant (DST included): "UTC", "UTC+2", "UTC-4", "UTC+5:30". */
export function zoneOf(d = new Date()) {
  const off = -d.getTimezoneOffset();
  if (off === 0) return 'UTC';
  const a = Math.abs(off);
  return `UTC${off < 0 ? '-' : '+'}${Math.floor(a / 60)}${a % 60 ? `:${pad(a % 60)}` : ''}`;
}

/** Local date-time with its zone, "2025-04-01 13:05:09 UTC+2"; the element's title carries the exact UTC timestamp. */
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zoneOf(d)}`;
}
/** An ISO instant as a datetime-local value ("2025-04-01T13:05", the browser's zone); '' if none or invalid. */
export function toLocalInput(iso) {
  const d = new Date(iso || '');
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
/** A datetime-local value (the browser's zone) as an ISO instant; '' stays ''. */
export const fromLocalInput = (v) => (v ? new Date(v).toISOString() : '');
/** The hint under a datetime-local field: which zone its time is in. */
export const zoneHint = () => `In your time zone, ${zoneOf()}`;

export const time = (iso) => (iso ? h('time', { datetime: iso, title: iso }, fmtTime(iso)) : '—');

export function fmtJson(text) {
  if (text === null || text === undefined || text === '') return '';
  if (typeof text !== 'string') return JSON.stringify(text, null, 2);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export const badge = (text, kind) => h('span', { class: `badge badge-${kind}` }, text);

// ---- states ----

export const loading = (what = '') => h('p', { class: 'state state-loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), `Loading${what ? ` ${what}` : ''}…`);

export const empty = (text, ...more) => h('div', { class: 'state state-empty' }, h('p', null, text), more);

/** The API's own messages, one per problem, with its error code; and a retry button when given. */
export function errorBox(err, title = 'Something went wrong', retry) {
  const errors = err && Array.isArray(err.errors) ? err.errors : [{ message: String((err && err.message) || err), errorCode: '', moreInfo: '' }];
  return h('div', { class: 'state state-error', role: 'alert' },
    h('p', { class: 'state-title' }, title),
    h('ul', null, errors.map((e) => h('li', null, e.message, e.moreInfo ? h('span', { class: 'more' }, ` (${e.moreInfo})`) : null, e.errorCode ? h('code', { class: 'code' }, e.errorCode) : null))),
    retry ? h('button', { type: 'button', class: 'btn', onclick: retry }, 'Try again') : null);
}

/**
 * Shows "Loading…" in container, runs fn, then render(result) or the error with a retry button.
 * Aborted loads (navigation away) render nothing.
 */
export async function load(container, what, fn, render) {
  const run = async () => {
    clear(container, loading(what));
    container.setAttribute('aria-busy', 'true');
    try {
      const result = await fn();
      clear(container);
      render(result);
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      clear(container, errorBox(err, `Could not load ${what}`, run));
    } finally {
      container.removeAttribute('aria-busy');
    }
  };
  return run();
}

// ---- announcements ----

/** A short message in the polite live region (and visible as a toast for a few seconds). */
export function announce(message, kind = 'info') {
  const region = document.getElementById('toasts');
  if (!region) return;
  const item = h('div', { class: `toast toast-${kind}` }, message);
  region.append(item);
  while (region.children.length > 3) region.firstElementChild.remove(); // the newest few only
  setTimeout(() => item.remove(), kind === 'error' ? 9000 : 5000);
}

// ---- dialogs ----

/**
 * A modal <dialog> (focus is kept inside, Escape closes). content: nodes; actions: buttons for the footer.
 * Returns { dialog, close }. onClose runs once when it closes, however it closes.
 */
export function openDialog({ title, content, actions = [], onClose, wide = false }) {
  const titleId = uid('dlg-title');
  const closeBtn = h('button', { type: 'button', class: 'btn btn-quiet dialog-x', 'aria-label': 'Close dialog' }, '×');
  const dialog = h('dialog', { class: `dialog${wide ? ' dialog-wide' : ''}`, 'aria-labelledby': titleId },
    h('div', { class: 'dialog-head' }, h('h2', { id: titleId }, title), closeBtn),
    h('div', { class: 'dialog-body' }, content),
    actions.length ? h('div', { class: 'dialog-actions' }, actions) : null);
  const close = () => dialog.open && dialog.close();
  closeBtn.addEventListener('click', close);
  dialog.addEventListener('close', () => {
    dialog.remove();
    onClose?.();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, close };
}

/** Asks for confirmation; resolves true only if the confirm button was pressed. */
export function confirmDialog({ title, message, confirmLabel = 'Confirm', danger = false }) {
  return new Promise((resolve) => {
    let answer = false;
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    const ok = h('button', { type: 'button', class: `btn ${danger ? 'btn-danger' : 'btn-primary'}` }, confirmLabel);
    const { close } = openDialog({
      title,
      content: Array.isArray(message) ? message : [h('p', null, message)],
      actions: [cancel, ok],
      onClose: () => resolve(answer),
    });
    cancel.addEventListener('click', close);
    ok.addEventListener('click', () => {
      answer = true;
      close();
    });
    cancel.focus(); // the safe choice has focus
  });
}

/** A button that copies text() to the clipboard and says so. */
export function copyButton(text, label = 'Copy') {
  const btn = h('button', { type: 'button', class: 'btn' }, label);
  btn.addEventListener('click', async () => {
    const value = typeof text === 'function' ? text() : text;
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      // Clipboard API refused (not a secure context): fall back to a selected hidden field.
      const ta = h('textarea', { class: 'visually-hidden', 'aria-hidden': 'true' });
      ta.value = value;
      document.body.append(ta);
      ta.select();
      document.execCommand('copy');
      ta.remove();
    }
    btn.textContent = 'Copied';
    announce('Copied to the clipboard');
    setTimeout(() => (btn.textContent = label), 2000);
  });
  return btn;
}

/** A read-only field showing a secret, with a copy button beside it. */
export function secretField(label, value) {
  const input = h('input', { type: 'text', readonly: true, class: 'mono secret', value, spellcheck: 'false', autocomplete: 'off' });
  input.addEventListener('focus', () => input.select());
  const f = field(label, input);
  f.append(copyButton(() => input.value));
  f.classList.add('field-secret');
  return f;
}

/** Runs an action from a button: disables it meanwhile; shows the API's error as an alert toast. */
export async function busy(button, fn) {
  // At work already: a second click or Enter does nothing (the act runs once).
  if (button.getAttribute('aria-busy') === 'true') return undefined;
  // aria-disabled, not disabled: a disabled button loses the focus (Chromium moves it to the body), so a failed act
  // left it there and a dialog opened meanwhile returned it there on closing (found by a probe, 2026-11-29).
  button.setAttribute('aria-busy', 'true');
  button.setAttribute('aria-disabled', 'true');
  try {
    return await fn();
  } finally {
    button.removeAttribute('aria-busy');
    button.removeAttribute('aria-disabled');
  }
}

/**
 * The "Load more" of a list shown from its first page: each click fetches the page after `cursor` (fetchPage(cursor)
 * → { data, nextCursor }) and hands its rows to onPage(rows, more); the control goes once the last page is in. A
 * failure shows under the button, which stays to try again. Returns the control, or null when there is no next page.
 */
export function moreButton({ label = 'Load more', cursor, fetchPage, onPage, what = 'more' }) {
  if (!cursor) return null;
  const btn = h('button', { type: 'button', class: 'btn' }, label);
  const problem = h('div');
  const box = h('div', { class: 'more' }, h('div', { class: 'actions' }, btn), problem);
  btn.addEventListener('click', () => busy(btn, async () => {
    clear(problem);
    try {
      const page = await fetchPage(cursor);
      cursor = page.nextCursor;
      onPage(page.data, !!cursor);
      if (!cursor) box.remove();
    } catch (err) {
      if (err?.name !== 'AbortError') problem.append(errorBox(err, `Could not load ${what}`));
    }
  }));
  return box;
}

/**
 * A table with a caption (visually hidden if asked) and a header row. rows: arrays of cells (nodes or text).
 * stack: on a narrow screen each row becomes a card, each cell labelled with its column (console.css).
 * A table wider than its box scrolls inside it; the box is then a focusable region named
 * "<caption>, scrolls sideways" (so keyboard users can scroll it too), and is plain again once it fits.
 */
export function table({ caption, hideCaption = true, columns, rows, className = '', stack = false }) {
  const tbl = h('table', { class: `table ${stack ? 'table-stack ' : ''}${className}` },
    caption ? h('caption', { class: hideCaption ? 'visually-hidden' : '' }, caption) : null,
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows));
  if (stack) labelCells(tbl, columns);
  const wrap = h('div', { class: 'table-wrap' }, tbl);
  if (caption) watchOverflow(wrap, `${caption}, scrolls sideways`);
  return wrap;
}

/**
 * Stacked tables lose their table layout (display: block), so their roles are made explicit, and each
 * cell carries its column's name (data-label) for the CSS to show before it.
 */
function labelCells(tbl, columns) {
  const names = columns.map((c) => (typeof c === 'string' ? c : c.textContent));
  tbl.setAttribute('role', 'table');
  for (const tr of tbl.rows) labelRow(tr, names);
  for (const part of tbl.querySelectorAll('thead, tbody')) part.setAttribute('role', 'rowgroup');
}

function labelRow(tr, names) {
  tr.setAttribute('role', 'row');
  [...tr.cells].forEach((cell, i) => {
    const head = cell.tagName === 'TH';
    cell.setAttribute('role', head ? (cell.scope === 'row' ? 'rowheader' : 'columnheader') : 'cell');
    if (!head || cell.scope === 'row') cell.dataset.label = names[i] ?? '';
  });
}

/**
 * Appends rows to a table() (its box): a stacked one's get their roles and column names as its first rows did
 * (rows appended to its <tbody> by hand would miss them).
 */
export function appendRows(wrap, rows) {
  const tbl = wrap.querySelector('table');
  tbl.tBodies[0].append(...rows);
  if (!tbl.classList.contains('table-stack')) return;
  const names = [...tbl.tHead.rows[0].cells].map((c) => c.textContent);
  for (const tr of rows) labelRow(tr, names);
}

const overflowing = new ResizeObserver((entries) => {
  for (const { target } of entries) {
    if (!target.isConnected) {
      overflowing.unobserve(target); // left the page (a removed box reports a last, empty size)
      continue;
    }
    const wrap = target.classList.contains('table-wrap') ? target : target.parentElement;
    if (!wrap?.dataset.scrollLabel) continue;
    if (wrap.scrollWidth > wrap.clientWidth + 1) {
      wrap.setAttribute('role', 'region');
      wrap.setAttribute('tabindex', '0');
      wrap.setAttribute('aria-label', wrap.dataset.scrollLabel);
    } else {
      for (const a of ['role', 'tabindex', 'aria-label']) wrap.removeAttribute(a);
    }
  }
});
/** Watches the box and its table (either may change width) while they are in the page. */
function watchOverflow(wrap, label) {
  wrap.dataset.scrollLabel = label;
  overflowing.observe(wrap);
  overflowing.observe(wrap.firstElementChild);
}

export const dl = (pairs) => h('dl', { class: 'props' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v ?? '—')]));
