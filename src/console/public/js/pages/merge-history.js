// A customer's merge history (API 2026-11: undoneAt), newest first, with *Undo merge*: a dry run shows what would move
// back and who comes back, then *Confirm undo* (after a confirmation) undoes it with an Idempotency-Key.
import { ApiError, get, getPages, idempotencyKey, post } from '../api.js';
import { announce, busy, clear, closeBidi, confirmDialog, empty, errorBox, h, load, moreButton, table, time } from '../dom.js';
import { refName } from './customers.js';

const V = '/api/2026-11';
const PAGE = 250; // the API's largest page
const MAX_PAGES = 4; // read at once (1,000 merges, more than a customer is likely to have); the rest on demand

/** Rows of moved counts (orders, notes…) and one extra row. */
function countsTable(kinds, counts, extra, caption) {
  const rows = kinds.map((k) => h('tr', null, h('th', { scope: 'row' }, k.title), h('td', { class: 'num' }, String(counts?.[k.key] ?? 0))));
  rows.push(h('tr', null, h('th', { scope: 'row' }, extra[0]), h('td', { class: 'num' }, String(extra[1] ?? 0))));
  return table({ caption, hideCaption: false, columns: ['Data', 'Rows'], rows, className: 'table-compact' });
}

export function historySection({ c, kinds, signal, navigate, customerLink, list }) {
  const path = `${V}/crm/customers/${encodeURIComponent(c.uuid)}/merges`;
  const historyBox = h('div');
  const out = h('div', { class: 'undo-out', tabindex: '-1' });
  const rowOf = (m) => h('tr', null,
    h('th', { scope: 'row' }, time(m.createdAt)),
    h('td', null, customerLink(m.primary)),
    h('td', null, list(m.secondaries, customerLink)),
    h('td', null, kinds.filter((k) => m.moved[k.key] > 0).map((k) => `${k.title}: ${m.moved[k.key]}`).join(', ') || 'Nothing moved',
      m.duplicateAssociatesRemoved ? `; ${m.duplicateAssociatesRemoved} duplicate associate link${m.duplicateAssociatesRemoved === 1 ? '' : 's'} removed` : ''),
    h('td', null, m.undoneAt ? ['Undone ', time(m.undoneAt)] : undoButton(m)));
  // Newest first: the API lists them oldest first, and one page of them hid the newest, the likeliest to be undone.
  const newestFirst = (merges) => merges.map(rowOf).reverse();

  load(historyBox, 'merge history', () => getPages(path, { limit: PAGE }, MAX_PAGES, { signal }), ({ data: merges, cursor }) => {
    if (merges.length === 0) return historyBox.append(empty('No merges involve this customer.'));
    const tbl = table({ caption: 'Merges, newest first', columns: ['When', 'Primary', 'Merged customers', 'Moved', 'Undo'], rows: newestFirst(merges) });
    // More than MAX_PAGES: the newer ones load on demand, on top of the table.
    let shown = merges.length;
    const note = h('p', null);
    const says = () => (note.textContent = `Showing the ${shown} oldest merges of this customer; newer ones are not loaded yet.`);
    const more = moreButton({
      label: 'Load newer merges', cursor, what: 'newer merges',
      fetchPage: (after) => get(path, { limit: PAGE, cursor: after }, { signal }),
      onPage: (rows, left) => {
        tbl.querySelector('tbody').prepend(...newestFirst(rows));
        shown += rows.length;
        if (left) says();
        else notice.remove();
      },
    });
    const notice = more ? h('div', { class: 'notice notice-filter' }, note, more) : null;
    says();
    historyBox.append(...[notice, tbl].filter(Boolean));
  });

  function undoButton(m) {
    const label = `Undo merge of ${m.secondaries.map(refName).join(', ')}`;
    const btn = h('button', { type: 'button', class: 'btn', 'aria-label': label }, 'Undo merge');
    btn.addEventListener('click', () => busy(btn, async () => {
      clear(out);
      try {
        const dry = await post(`${V}/crm/merges/${encodeURIComponent(m.uuid)}/undo`, undefined, { query: { dryRun: 'true' } });
        showPreview(m, dry, btn);
      } catch (err) {
        out.append(errorBox(err, 'This merge cannot be undone'));
        out.focus();
      }
    }));
    return btn;
  }

  function showPreview(m, dry, opener) {
    const confirm = h('button', { type: 'button', class: 'btn btn-danger' }, 'Confirm undo');
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    // Each id closed where it ends: the list goes into sentences, and an unclosed override reversed their rest.
    const who = dry.restoredCustomerIds.map(closeBidi).join(', ');
    clear(out, h('div', { class: 'preview', role: 'region', 'aria-labelledby': 'undo-preview-h' },
      h('h3', { id: 'undo-preview-h' }, 'Undo preview (nothing has changed yet)'),
      h('p', null, `Undoing this merge makes ${who} active again and moves back to them, from ${refName(m.primary)}:`),
      countsTable(kinds, dry.movedBack, ['Associate links restored', dry.associationsRestored], 'What moves back'),
      h('p', { class: 'muted' }, 'Data added to the primary after the merge stays with it.'),
      h('div', { class: 'actions' }, confirm, cancel)));
    out.focus();
    // Back to the Undo button that opened it (focus fell to the body with the preview; found by a probe).
    cancel.addEventListener('click', () => {
      clear(out);
      if (opener.isConnected) opener.focus();
    });
    let failure = null; // the last failure's box: a new one replaces it (they stacked up)
    confirm.addEventListener('click', async () => {
      const ok = await confirmDialog({
        title: `Undo the merge of ${who} into ${refName(m.primary)}?`,
        message: `${who} will be active again with the data the merge moved.`,
        confirmLabel: 'Undo merge',
        danger: true,
      });
      if (!ok) return confirm.focus();
      await busy(confirm, async () => {
        try {
          const headers = { 'idempotency-key': idempotencyKey() };
          await post(`${V}/crm/merges/${encodeURIComponent(m.uuid)}/undo`, undefined, { headers });
          announce(`Undid the merge of ${who} into ${refName(m.primary)}`, 'success');
          navigate(`#/customers/${encodeURIComponent(c.uuid)}`, true);
          document.querySelector('#main h1')?.focus(); // the page was drawn again: focus would fall to the body
        } catch (err) {
          failure?.remove();
          failure = errorBox(err, err instanceof ApiError && err.status === 409 ? 'The undo was refused' : 'The undo failed');
          out.append(failure);
        }
      });
    });
  }

  return h('section', { class: 'card', 'aria-labelledby': 'history-h' }, h('h2', { id: 'history-h' }, 'Merge history'), historyBox, out);
}
