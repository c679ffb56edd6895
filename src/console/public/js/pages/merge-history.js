// A customer's merge history (API 2026-11: undoneAt) with *Undo merge*: a dry run shows what would move
// back and who comes back, then *Confirm undo* (after a confirmation) undoes it with an Idempotency-Key.
import { ApiError, get, idempotencyKey, post } from '../api.js';
import { announce, busy, clear, confirmDialog, empty, errorBox, h, load, table, time } from '../dom.js';
import { refName } from './customers.js';

const V = '/api/2026-11';

/** Rows of moved counts (orders, notes…) and one extra row. */
function countsTable(kinds, counts, extra, caption) {
  const rows = kinds.map((k) => h('tr', null, h('th', { scope: 'row' }, k.title), h('td', { class: 'num' }, String(counts?.[k.key] ?? 0))));
  rows.push(h('tr', null, h('th', { scope: 'row' }, extra[0]), h('td', { class: 'num' }, String(extra[1] ?? 0))));
  return table({ caption, hideCaption: false, columns: ['Data', 'Rows'], rows, className: 'table-compact' });
}

export function historySection({ c, kinds, signal, navigate, customerLink, list }) {
  const cid = encodeURIComponent(c.uuid);
  const historyBox = h('div');
  const out = h('div', { class: 'undo-out', tabindex: '-1' });
  load(historyBox, 'merge history', () => get(`${V}/crm/customers/${cid}/merges`, { limit: 100 }, { signal }), (page) => {
    const merges = page.data ?? [];
    if (merges.length === 0) return historyBox.append(empty('No merges involve this customer.'));
    historyBox.append(table({
      caption: 'Merges',
      columns: ['When', 'Primary', 'Merged customers', 'Moved', 'Undo'],
      rows: merges.map((m) => h('tr', null,
        h('th', { scope: 'row' }, time(m.createdAt)),
        h('td', null, customerLink(m.primary)),
        h('td', null, list(m.secondaries, customerLink)),
        h('td', null, kinds.filter((k) => m.moved[k.key] > 0).map((k) => `${k.title}: ${m.moved[k.key]}`).join(', ') || 'Nothing moved',
          m.duplicateAssociatesRemoved ? `; ${m.duplicateAssociatesRemoved} duplicate associate link${m.duplicateAssociatesRemoved === 1 ? '' : 's'} removed` : ''),
        h('td', null, m.undoneAt ? ['Undone ', time(m.undoneAt)] : undoButton(m)))),
    }));
  });

  function undoButton(m) {
    const label = `Undo merge of ${m.secondaries.map(refName).join(', ')}`;
    const btn = h('button', { type: 'button', class: 'btn', 'aria-label': label }, 'Undo merge');
    btn.addEventListener('click', () => busy(btn, async () => {
      clear(out);
      try {
        const dry = await post(`${V}/crm/merges/${encodeURIComponent(m.uuid)}/undo`, undefined, { query: { dryRun: 'true' } });
        showPreview(m, dry);
      } catch (err) {
        out.append(errorBox(err, 'This merge cannot be undone'));
        out.focus();
      }
    }));
    return btn;
  }

  function showPreview(m, dry) {
    const confirm = h('button', { type: 'button', class: 'btn btn-danger' }, 'Confirm undo');
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    const who = dry.restoredCustomerIds.join(', ');
    clear(out, h('div', { class: 'preview', role: 'region', 'aria-labelledby': 'undo-preview-h' },
      h('h3', { id: 'undo-preview-h' }, 'Undo preview (nothing has changed yet)'),
      h('p', null, `Undoing this merge makes ${who} active again and moves back to them, from ${refName(m.primary)}:`),
      countsTable(kinds, dry.movedBack, ['Associate links restored', dry.associationsRestored], 'What moves back'),
      h('p', { class: 'muted' }, 'Data added to the primary after the merge stays with it.'),
      h('div', { class: 'actions' }, confirm, cancel)));
    out.focus();
    cancel.addEventListener('click', () => clear(out));
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
        } catch (err) {
          out.append(errorBox(err, err instanceof ApiError && err.status === 409 ? 'The undo was refused' : 'The undo failed'));
        }
      });
    });
  }

  return h('section', { class: 'card', 'aria-labelledby': 'history-h' }, h('h2', { id: 'history-h' }, 'Merge history'), historyBox, out);
}
