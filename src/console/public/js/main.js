// Console entry: sign-in, the page shell (banner, navigation, main), and the hash router.
// Routes live after "#/" so that the admin key never appears in a URL and no server routes are needed.
import { ApiError, get, session } from './api.js';
import { announce, clear, errorBox, field, h } from './dom.js';
import { customersPage } from './pages/customers.js';
import { customerPage } from './pages/customer.js';
import { duplicatePairsPage } from './pages/duplicate-pairs.js';
import { webhooksPage } from './pages/webhooks.js';
import { logsPage } from './pages/logs.js';
import { eventTypesPage } from './pages/event-types.js';
import { importPage, importsPage } from './pages/imports.js';
import { apiKeysPage, authClientsPage } from './pages/credentials.js';
import { auditPage } from './pages/audit.js';

const NAV = [
  { href: '#/customers', text: 'Customers', key: 'customers' },
  { href: '#/duplicates', text: 'Possible duplicates', key: 'duplicates' },
  { href: '#/imports', text: 'Imports', key: 'imports' },
  {
    text: 'Integrations',
    children: [
      { href: '#/integrations/webhooks', text: 'Webhooks', key: 'webhooks' },
      { href: '#/integrations/webhooks/logs', text: 'Webhooks Logs', key: 'logs' },
      { href: '#/integrations/webhooks/event-types', text: 'Webhook Event Types', key: 'eventTypes' },
      { href: '#/integrations/api-keys', text: 'API Keys', key: 'apiKeys' },
      { href: '#/integrations/auth-clients', text: 'Auth Clients', key: 'authClients' },
      { href: '#/integrations/audit-log', text: 'Audit log', key: 'audit' },
    ],
  },
];

const ROUTES = [
  { re: /^\/customers$/, nav: 'customers', page: customersPage },
  { re: /^\/customers\/([^/]+)$/, nav: 'customers', page: customerPage },
  { re: /^\/duplicates$/, nav: 'duplicates', page: duplicatePairsPage },
  { re: /^\/imports$/, nav: 'imports', page: importsPage },
  { re: /^\/imports\/([^/]+)$/, nav: 'imports', page: importPage },
  { re: /^\/integrations\/webhooks$/, nav: 'webhooks', page: webhooksPage },
  { re: /^\/integrations\/webhooks\/logs$/, nav: 'logs', page: logsPage },
  { re: /^\/integrations\/webhooks\/event-types$/, nav: 'eventTypes', page: eventTypesPage },
  { re: /^\/integrations\/api-keys$/, nav: 'apiKeys', page: apiKeysPage },
  { re: /^\/integrations\/auth-clients$/, nav: 'authClients', page: authClientsPage },
  { re: /^\/integrations\/audit-log$/, nav: 'audit', page: auditPage },
];
const DEFAULT_ROUTE = '#/customers';

const app = document.getElementById('app');
let current; // AbortController of the page on screen

// ---------- sign-in ----------

function renderSignIn(reason) {
  current?.abort();
  // Open dialogs live outside #app: closed with the session, or a log's payload or a revealed secret stayed on screen
  // over the sign-in page (a dialog closed is removed: dom.js openDialog).
  for (const d of document.querySelectorAll('dialog')) {
    if (d.open) d.close();
    else d.remove();
  }
  document.title = 'Sign in · Bulb console';
  const input = h('input', { type: 'password', name: 'key', required: true, autocomplete: 'off', spellcheck: 'false', class: 'mono' });
  const message = h('div', { class: 'signin-message' });
  const button = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Sign in');
  const form = h('form', { class: 'signin-form', novalidate: true },
    field('Admin API key', input, 'An API key with the admin scope. It is kept in this tab only, until you sign out or close it.'),
    message, button);
  if (reason) message.append(errorBox(reason, 'You have been signed out'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    clear(message);
    if (!key) {
      message.append(errorBox({ errors: [{ message: 'Enter an admin API key.', errorCode: '', moreInfo: '' }] }, 'Sign-in refused'));
      input.focus();
      return;
    }
    button.disabled = true;
    button.textContent = 'Signing in…';
    try {
      // Any admin-only call proves the key: 401 unknown/revoked, 403 lacks the admin scope.
      await get('/integrations/apiKeys', { limit: 1 }, { key });
      session.set(key);
      if (!location.hash.startsWith('#/')) location.hash = DEFAULT_ROUTE;
      renderShell(true); // focus goes to the first page's heading
    } catch (err) {
      const title = err instanceof ApiError && err.status === 403 ? 'This key has no admin scope' : err instanceof ApiError && err.status === 401 ? 'Sign-in refused: the key was not accepted' : 'Sign-in failed';
      message.append(errorBox(err, title));
      input.focus();
      input.select();
    } finally {
      button.disabled = false;
      button.textContent = 'Sign in';
    }
  });
  clear(app,
    h('main', { id: 'main', class: 'signin', tabindex: '-1' },
      h('div', { class: 'signin-card' },
        h('p', { class: 'brand brand-large' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'Bulb'),
        h('h1', null, 'Sign in to the console'),
        form)),
    h('div', { id: 'toasts', class: 'toasts', role: 'status', 'aria-live': 'polite' }));
  input.focus();
}

window.addEventListener('bulb:unauthorized', (ev) => {
  if (!session.key) return;
  session.clear();
  renderSignIn(ev.detail);
});

// ---------- shell ----------

let shellMain;
let navLinks = [];

function renderShell(moveFocus = false) {
  navLinks = [];
  const link = (item) => {
    const a = h('a', { href: item.href, dataset: { nav: item.key } }, item.text);
    navLinks.push(a);
    return h('li', null, a);
  };
  const nav = h('nav', { class: 'sidenav', 'aria-label': 'Console sections' },
    h('ul', null, NAV.map((item) => {
      if (!item.children) return link(item);
      const id = `nav-${item.text.toLowerCase()}`;
      return h('li', null, h('span', { class: 'nav-group', id }, item.text), h('ul', { 'aria-labelledby': id }, item.children.map(link)));
    })));
  const signOut = h('button', { type: 'button', class: 'btn btn-quiet' }, 'Sign out');
  signOut.addEventListener('click', () => {
    session.clear();
    renderSignIn();
    announce('Signed out');
  });
  shellMain = h('main', { id: 'main', class: 'main', tabindex: '-1' });
  clear(app,
    h('a', { class: 'skip-link', href: '#main' }, 'Skip to content'),
    h('header', { class: 'topbar' },
      h('a', { class: 'brand', href: DEFAULT_ROUTE }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'Bulb console'),
      h('div', { class: 'topbar-right' }, h('span', { class: 'muted' }, 'Signed in with an admin key'), signOut)),
    h('div', { class: 'layout' }, nav, shellMain),
    h('div', { id: 'toasts', class: 'toasts', role: 'status', 'aria-live': 'polite' }));
  route(moveFocus);
}

function parseHash() {
  const raw = location.hash.slice(1) || DEFAULT_ROUTE.slice(1);
  const [path, qs = ''] = raw.split('?');
  return { path, query: Object.fromEntries(new URLSearchParams(qs)) };
}

/** The route's decoded path parameters; null when one is not a valid percent-encoding (URIError). */
function decodeParams(m) {
  try {
    return m.slice(1).map(decodeURIComponent);
  } catch {
    return null;
  }
}

function route(moveFocus = true) {
  if (!session.key || !shellMain) return;
  if (!location.hash.startsWith('#/')) {
    if (location.hash === '#main') return; // the skip link
    location.replace(DEFAULT_ROUTE);
    return;
  }
  const { path, query } = parseHash();
  const found = ROUTES.map((r) => ({ r, m: r.re.exec(path) })).find((x) => x.m);
  const params = found && decodeParams(found.m);
  const match = params ? found : undefined; // a bad percent-escape is no page either
  current?.abort();
  current = new AbortController();
  for (const a of navLinks) {
    if (match && a.dataset.nav === match.r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  clear(shellMain);
  if (!match) {
    shellMain.append(h('h1', { tabindex: '-1' }, 'Page not found'), h('p', null, 'No console page at this address. ', h('a', { href: DEFAULT_ROUTE }, 'Go to Customers')));
  } else {
    try {
      match.r.page({ main: shellMain, params, query, signal: current.signal, navigate });
    } catch (err) {
      shellMain.append(errorBox(err, 'This page failed to open'));
    }
  }
  const h1 = shellMain.querySelector('h1');
  if (h1) {
    h1.setAttribute('tabindex', '-1');
    document.title = `${h1.textContent} · Bulb console`;
    if (moveFocus) h1.focus({ preventScroll: false });
  }
}

/** Changes the hash route; replace=true does not add a history entry (filters). */
export function navigate(hash, replace = false) {
  if (replace) {
    history.replaceState(null, '', hash);
    route(false);
  } else {
    location.hash = hash;
  }
}

window.addEventListener('hashchange', () => route(true));

if (session.key) renderShell();
else renderSignIn();
