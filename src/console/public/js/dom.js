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
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
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
/** Local date-time "2025-04-01 13:05:09"; the element's title carries the exact UTC timestamp. */
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
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
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/** A table with a caption (visually hidden if asked) and a header row. rows: arrays of cells (nodes or text). */
export function table({ caption, hideCaption = true, columns, rows, className = '' }) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: `table ${className}` },
      caption ? h('caption', { class: hideCaption ? 'visually-hidden' : '' }, caption) : null,
      h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rows)));
}

export const dl = (pairs) => h('dl', { class: 'props' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v ?? '—')]));
