// Integrations → API Keys and Auth Clients: create (the secret is shown once, with a copy button), list, revoke.
import { del, get, post, session } from '../api.js';
import { announce, badge, busy, clear, closeBidi, confirmDialog, empty, errorBox, field, h, load, secretField, table, time } from '../dom.js';

const SCOPES = [
  ['read', 'read — GET only'],
  ['write', 'write — read, and change CRM data'],
  ['admin', 'admin — everything, including integrations'],
];

function credentialsPage(kind) {
  return ({ main, signal }) => {
    const listBox = h('div', { class: 'list' });
    const createdBox = h('div', { class: 'created', tabindex: '-1' });
    const formMsg = h('div');

    // ---- create form ----
    const name = h('input', { type: 'text', name: 'name', required: true, maxlength: '200', autocomplete: 'off' });
    const scopeBoxes = SCOPES.map(([value, text]) => {
      const box = h('input', { type: 'checkbox', name: 'scopes', value, id: `${kind.id}-scope-${value}`, checked: value === kind.defaultScope });
      return h('div', { class: 'check' }, box, h('label', { for: box.id }, text));
    });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, kind.createLabel);
    const form = h('form', { class: 'card form-inline', novalidate: true, 'aria-labelledby': `${kind.id}-create-h` },
      h('h2', { id: `${kind.id}-create-h` }, kind.createHeading),
      field('Name', name, kind.nameHint),
      h('fieldset', { class: 'checks' }, h('legend', null, 'Scopes'), scopeBoxes),
      formMsg,
      h('div', { class: 'actions' }, submit));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(formMsg);
      const scopes = scopeBoxes.map((d) => d.querySelector('input')).filter((b) => b.checked).map((b) => b.value);
      const problems = [];
      if (!name.value.trim()) problems.push('Enter a name.');
      if (scopes.length === 0) problems.push('Choose at least one scope.');
      if (problems.length) {
        formMsg.append(errorBox({ errors: problems.map((message) => ({ message, errorCode: '', moreInfo: '' })) }, `Could not create the ${kind.noun}`));
        (name.value.trim() ? scopeBoxes[0].querySelector('input') : name).focus();
        return;
      }
      await busy(submit, async () => {
        try {
          const created = await post(kind.path, { name: name.value.trim(), scopes });
          name.value = '';
          showCreated(created);
          refresh();
        } catch (err) {
          formMsg.append(errorBox(err, `Could not create the ${kind.noun}`));
        }
      });
    });

    function showCreated(created) {
      clear(createdBox,
        h('div', { class: 'card card-success', role: 'region', 'aria-labelledby': `${kind.id}-created-h` },
          h('h2', { id: `${kind.id}-created-h` }, `${kind.Noun} “${closeBidi(created.name)}” created`),
          h('p', { class: 'warning' }, `Copy the secret now: it is shown only this once and cannot be recovered. Anyone with it has the ${created.scopes.join(', ')} scope.`),
          kind.secrets(created).map(([label, value]) => secretField(label, value)),
          h('div', { class: 'actions' }, h('button', { type: 'button', class: 'btn', onclick: () => {
            clear(createdBox);
            // The button went with the box: focus goes to the list, where the new one is (it fell to the page's body).
            main.querySelector(`#${kind.id}-list-h`)?.focus();
          } }, 'Done, hide it'))));
      createdBox.focus();
      announce(`${kind.Noun} created. Copy its secret now.`, 'success');
    }

    // ---- list ----
    const rowsOf = (items) =>
      items.map((item) => {
        const revoke = h('button', { type: 'button', class: 'btn btn-danger-quiet', 'aria-label': `Revoke ${closeBidi(item.name)}` }, 'Revoke');
        revoke.addEventListener('click', async () => {
          const ok = await confirmDialog({
            title: `Revoke ${kind.noun} “${closeBidi(item.name)}”?`,
            message: kind.revokeWarning(item),
            confirmLabel: 'Revoke',
            danger: true,
          });
          if (!ok) return revoke.focus();
          await busy(revoke, async () => {
            try {
              await del(`${kind.path}/${item.uuid}`);
              announce(`${kind.Noun} “${closeBidi(item.name)}” revoked`, 'success');
              refresh(true);
            } catch (err) {
              announce(`Could not revoke: ${err.message}`, 'error');
            }
          });
        });
        return h('tr', null,
          h('th', { scope: 'row' }, item.name, kind.isMine?.(item) ? [' ', badge('this session', 'info')] : null),
          kind.idCell(item),
          h('td', null, item.scopes.map((s) => badge(s, s === 'admin' ? 'warn' : 'neutral'))),
          h('td', null, time(item.createdAt)),
          kind.hasLastUsed ? h('td', null, item.lastUsedAt ? time(item.lastUsedAt) : 'never') : null,
          h('td', { class: 'row-actions' }, revoke));
      });

    let cursor = null;
    let items = [];
    function renderList(more) {
      clear(listBox);
      if (items.length === 0) {
        listBox.append(empty(kind.emptyText));
        return;
      }
      listBox.append(table({ caption: kind.listHeading, columns: kind.columns, rows: rowsOf(items) }));
      if (more) {
        const btn = h('button', { type: 'button', class: 'btn' }, 'Load more');
        btn.addEventListener('click', () => busy(btn, async () => {
          try {
            const page = await get(kind.path, { limit: 100, cursor }, { signal });
            items = items.concat(page.data);
            cursor = page.nextCursor;
            // Redrawn: focus on the new Load more, or on the list's heading once all is in (it fell to the body).
            (renderList(!!cursor) ?? main.querySelector(`#${kind.id}-list-h`))?.focus();
          } catch (err) {
            listBox.append(errorBox(err, 'Could not load more'));
          }
        }));
        listBox.append(h('div', { class: 'actions' }, btn));
        return btn;
      }
      return null;
    }
    function refresh(focusHeading = false) {
      return load(listBox, kind.listHeading.toLowerCase(), () => get(kind.path, { limit: 100 }, { signal }), (page) => {
        items = page.data;
        cursor = page.nextCursor;
        renderList(!!cursor);
        if (focusHeading) main.querySelector(`#${kind.id}-list-h`)?.focus();
      });
    }

    main.append(
      h('h1', null, kind.title),
      h('p', { class: 'lead' }, kind.lead),
      form,
      createdBox,
      h('section', { 'aria-labelledby': `${kind.id}-list-h` }, h('h2', { id: `${kind.id}-list-h`, tabindex: '-1' }, kind.listHeading), listBox));
    refresh();
  };
}

export const apiKeysPage = credentialsPage({
  id: 'apikeys',
  title: 'API Keys',
  lead: 'Keys authenticate integrations with Authorization: Bearer <key>. A key is stored only as a hash: it is shown once, when created.',
  path: '/integrations/apiKeys',
  noun: 'API key',
  Noun: 'API key',
  createHeading: 'Create an API key',
  createLabel: 'Create API key',
  nameHint: 'What uses it, e.g. “POS integration”.',
  defaultScope: 'read',
  listHeading: 'Active API keys',
  emptyText: 'No active API keys.',
  columns: ['Name', 'Prefix', 'Scopes', 'Created', 'Last used', h('span', { class: 'visually-hidden' }, 'Actions')],
  hasLastUsed: true,
  idCell: (k) => h('td', null, h('code', null, k.prefix)),
  secrets: (c) => [['New API key', c.key]],
  isMine: (k) => {
    const key = session.key || '';
    // A prefix no longer than `bulb_key_` says nothing (BULB_ADMIN_KEY's stored prefix is its first 4 characters):
    // it marked that key as this session whichever key signed in.
    const prefix = (k.prefix || '').replace(/…$/, '');
    return prefix.length > 'bulb_key_'.length && key.startsWith(prefix);
  },
  revokeWarning: (k) => [
    h('p', null, `Requests with this key will be refused from now on (401). This cannot be undone.`),
    k.scopes.includes('admin') ? h('p', { class: 'warning' }, 'If this is the key you signed in with, you will be signed out.') : null,
  ],
});

export const authClientsPage = credentialsPage({
  id: 'authclients',
  title: 'Auth Clients',
  lead: 'OAuth 2.0 clients get access tokens from POST /auth/oauth2/token (client credentials grant). The client secret is shown once, when created.',
  path: '/integrations/authClients',
  noun: 'auth client',
  Noun: 'Auth client',
  createHeading: 'Create an auth client',
  createLabel: 'Create auth client',
  nameHint: 'What uses it, e.g. “Data warehouse sync”.',
  defaultScope: 'read',
  listHeading: 'Active auth clients',
  emptyText: 'No active auth clients.',
  columns: ['Name', 'Client ID', 'Scopes', 'Created', h('span', { class: 'visually-hidden' }, 'Actions')],
  hasLastUsed: false,
  idCell: (c) => h('td', null, h('code', null, c.clientId)),
  secrets: (c) => [['Client ID', c.clientId], ['Client secret', c.clientSecret]],
  revokeWarning: () => [h('p', null, 'The client and every access token issued to it stop working now. This cannot be undone.')],
});
