// Integrations → Webhooks (API 2026-11): subscriptions with their event types, endpoint health (and why one
// was disabled) and a 24 h chart of attempts and success rate, per subscription and overall, from ONE stats
// request; create, edit (with its delivery policy: retry schedule, jitter, rate cap), activate / re-activate or
// deactivate, delete (confirmed), reveal and rotate the signing secret, send a test event, replay a window of
// events (webhook-replay.js). The form sets OAuth2 client credentials and mutual TLS (docs/receiver-auth.md): the
// client secret and the private key are write-only (blank keeps the stored one).
import { del, get, getPages, patch, post } from '../api.js';
import { announce, appendRows, badge, busy, clear, closeBidi, confirmDialog, empty, errorBox, field, h, load, moreButton, openDialog, secretField, select, table, time, uid, zoneOf } from '../dom.js';
import { fitChart, hourlyChart, summary } from '../chart.js';
import { replayDialog } from './webhook-replay.js';

const AUTH_METHODS = [['NONE', 'None'], ['BEARER', 'Bearer token'], ['BASIC', 'Basic (username and password)'], ['OAUTH2_CLIENT_CREDENTIALS', 'OAuth2 client credentials']];
const HOURS = 24; // the charts' window
export const SUBS = '/integrations/webhooks/subscriptions';
// Subscriptions a page, oldest first as the API lists them, then "Load more subscriptions". A row holds a chart and
// seven controls: every subscription at once took 43 requests, 19 s and ~960,000 DOM nodes for 10,000 (a probe).
const PAGE = 50;

let metaCache;
/** Event types (from the API) and webhook versions (from /api/versions), fetched once per page view. */
function meta(signal) {
  metaCache ??= Promise.all([
    get('/integrations/webhooks/eventTypes', undefined, { signal }),
    fetch('/api/versions').then((r) => r.json()).catch(() => ({ versions: [] })),
  ]).then(([types, versions]) => ({
    eventTypes: (Array.isArray(types) ? types : types.data ?? types.eventTypes ?? []).map((t) => (typeof t === 'string' ? t : t.eventType ?? t.name)),
    versions: (versions.versions || []).map((v) => v.version).sort().reverse(),
  }));
  metaCache.catch(() => (metaCache = undefined));
  return metaCache;
}

/** The create/edit form in a dialog. existing: the subscription being edited, or undefined to create. */
async function subscriptionDialog(existing, onSaved, signal) {
  let m;
  try {
    m = await meta(signal);
  } catch (err) {
    announce(`Could not load event types: ${err.message}`, 'error');
    return;
  }
  const url = h('input', { type: 'url', name: 'url', required: true, maxlength: '2048', value: existing?.url ?? '', placeholder: 'https://example.com/webhooks/bulb', spellcheck: 'false', autocomplete: 'off' });
  // Several event types (1–20): one checkbox each; the order kept is the existing one, then new ones as listed.
  const chosen = new Set(existing?.eventTypes ?? [m.eventTypes[0]]);
  const boxes = m.eventTypes.map((t) => {
    const id = uid('type');
    const input = h('input', { type: 'checkbox', name: 'eventTypes', value: t, id, checked: chosen.has(t) });
    return { t, input, el: h('div', { class: 'check' }, input, h('label', { for: id }, h('code', null, t))) };
  });
  const typesBox = h('fieldset', { class: 'event-types' }, h('legend', null, 'Event types'), boxes.map((b) => b.el));
  const pickedTypes = () => {
    const on = boxes.filter((b) => b.input.checked).map((b) => b.t);
    const kept = (existing?.eventTypes ?? []).filter((t) => on.includes(t));
    return [...kept, ...on.filter((t) => !kept.includes(t))];
  };
  const authMethod = select('authMethod', AUTH_METHODS, existing?.authMethod ?? 'NONE');
  const versions = m.versions.length ? m.versions : ['2022-08'];
  const version = select('webhookVersion', versions, existing?.webhookVersion ?? (versions.includes('2022-08') ? '2022-08' : versions[0]));
  const active = h('input', { type: 'checkbox', name: 'isActive', id: 'sub-active', checked: existing ? existing.isActive : true });
  const keep = existing ? 'Leave blank to keep the current value.' : undefined;
  const token = h('input', { type: 'password', name: 'bearerToken', autocomplete: 'off', spellcheck: 'false' });
  const user = h('input', { type: 'text', name: 'basicUsername', autocomplete: 'off', spellcheck: 'false' });
  const pass = h('input', { type: 'password', name: 'basicPassword', autocomplete: 'off' });
  const bearerBox = h('div', { class: 'cred' }, field('Bearer token', token, keep ?? 'Sent as Authorization: Bearer <token>.'));
  const basicBox = h('div', { class: 'cred' }, field('Username', user, keep), field('Password', pass, keep));
  const o = existing?.oauth2;
  const text = (name, value, type = 'text') => h('input', { type, name, value: value ?? '', autocomplete: 'off', spellcheck: 'false' });
  const tokenUrl = text('oauth2.tokenUrl', o?.tokenUrl, 'url');
  const clientId = text('oauth2.clientId', o?.clientId);
  const clientSecret = text('oauth2.clientSecret', '', 'password');
  const scope = text('oauth2.scope', o?.scope);
  const audience = text('oauth2.audience', o?.audience);
  const oauth2Box = h('div', { class: 'cred' },
    field('Token URL', tokenUrl, 'https address of the token endpoint; Bulb fetches a token with the client credentials grant and sends it as a bearer token.'),
    field('Client ID', clientId), field('Client secret', clientSecret, o ? 'Leave blank to keep the current value.' : undefined),
    field('Scope (optional)', scope, 'Space-separated.'), field('Audience (optional)', audience));
  const t = existing?.tls;
  const pem = (name, value) => h('textarea', { name, rows: '4', spellcheck: 'false', autocomplete: 'off', value: value ?? '', placeholder: '-----BEGIN …-----' });
  const useTls = h('input', { type: 'checkbox', name: 'mtls', id: uid('mtls'), checked: Boolean(t) });
  const clientCert = pem('tls.clientCertificate', t?.clientCertificate);
  const clientKey = pem('tls.clientKey', '');
  const caCert = pem('tls.caCertificate', t?.caCertificate);
  const tlsBox = h('div', { class: 'cred' },
    field('Client certificate (PEM)', clientCert),
    field('Private key (PEM, unencrypted)', clientKey, t ? 'Write-only. Leave blank to keep the current key.' : 'Write-only: stored encrypted, never shown again.'),
    field('CA certificate (PEM, optional)', caCert, 'Trusted for the receiver\'s certificate instead of the public roots.'));
  const showCreds = () => {
    bearerBox.hidden = authMethod.value !== 'BEARER';
    basicBox.hidden = authMethod.value !== 'BASIC';
    oauth2Box.hidden = authMethod.value !== 'OAUTH2_CLIENT_CREDENTIALS';
    tlsBox.hidden = !useTls.checked;
  };
  authMethod.addEventListener('change', showCreds);
  useTls.addEventListener('change', showCreds);
  showCreds();

  // Delivery policy (docs/delivery-policies.md): the retry schedule in seconds (blank: the service's), jitter, rate cap.
  const schedule = h('input', { type: 'text', name: 'retrySchedule', value: existing?.retrySchedule?.join(', ') ?? '', placeholder: '5, 20, 125', spellcheck: 'false', autocomplete: 'off', inputmode: 'numeric' });
  const jitter = h('input', { type: 'number', name: 'retryJitter', min: '0', max: '50', step: '1', value: String(existing?.retryJitter ?? 0) });
  const rate = h('input', { type: 'number', name: 'maxPerSecond', min: '1', max: '10000', step: '1', value: existing?.maxPerSecond == null ? '' : String(existing.maxPerSecond), placeholder: 'no cap' });
  const policyBox = h('fieldset', { class: 'delivery-policy' }, h('legend', null, 'Delivery policy'),
    field('Retry schedule (seconds)', schedule, "Delays before each retry, comma-separated: 1–20 of them, each 1 s to 24 h, at most 7 days in all. Blank: the service's schedule."),
    field('Retry jitter (%)', jitter, 'Each delay is drawn at random within ± this percent (0–50).'),
    field('Rate cap (requests per second)', rate, 'Most attempts per second to this endpoint, across every worker (1–10,000). Blank: no cap.'));

  const msg = h('div');
  const save = h('button', { type: 'submit', class: 'btn btn-primary' }, existing ? 'Save changes' : 'Create subscription');
  const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
  const form = h('form', { class: 'form-stack', novalidate: true },
    field('Webhook URL', url, 'http(s) address of your endpoint: events are POSTed there as JSON. Or a message broker: amqp(s)://user:password@host/vhost?exchange=…&routingKey=… (RabbitMQ) or nats://host:4222?subject=… (NATS JetStream).'),
    typesBox,
    field('Authentication', authMethod),
    bearerBox, basicBox, oauth2Box,
    h('div', { class: 'check' }, useTls, h('label', { for: useTls.id }, 'Mutual TLS (present a client certificate)')),
    tlsBox,
    field('Webhook version', version, 'Sent as the X-Webhook-Version header.'),
    policyBox,
    h('div', { class: 'check' }, active, h('label', { for: active.id }, 'Active (deliver events)')),
    msg,
    h('div', { class: 'dialog-actions' }, cancel, save));
  const { close } = openDialog({ title: existing ? 'Edit subscription' : 'New webhook subscription', content: [form] });
  form.addEventListener('input', () => msg.firstChild && clear(msg)); // a stale complaint goes once the user edits
  cancel.addEventListener('click', close);
  url.focus();

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(msg);
    const problems = [];
    if (!/^(https?|amqps?|nats):\/\/.+/i.test(url.value.trim())) problems.push('Enter an http:// or https:// URL, or a broker\'s amqp://, amqps:// or nats:// URL.');
    const eventTypes = pickedTypes();
    if (eventTypes.length === 0) problems.push('Choose at least one event type.');
    const method = authMethod.value;
    const methodChanged = !existing || existing.authMethod !== method;
    if (method === 'BEARER' && methodChanged && !token.value) problems.push('Enter the bearer token.');
    if (method === 'BASIC' && methodChanged && (!user.value || !pass.value)) problems.push('Enter the username and password.');
    const steps = schedule.value.split(',').map((x) => x.trim()).filter((x) => x !== '');
    // Left as shown: not sent (the service's own schedule may have fractions, which a subscription's may not).
    const scheduleKept = existing && steps.join() === existing.retrySchedule.map(String).join();
    if (!scheduleKept && steps.some((x) => !/^\d+$/.test(x))) problems.push('Write the retry schedule as whole seconds separated by commas, e.g. 5, 20, 125.');
    if (!/^\d+$/.test(jitter.value.trim())) problems.push('Enter the retry jitter as a whole percent from 0 to 50.');
    if (rate.value.trim() !== '' && !/^\d+$/.test(rate.value.trim())) problems.push('Enter the rate cap as a whole number of requests per second, or leave it blank.');
    if (method === 'OAUTH2_CLIENT_CREDENTIALS' && (!tokenUrl.value.trim() || !clientId.value.trim() || (!o && !clientSecret.value))) {
      problems.push('Enter the token URL, client ID and client secret.');
    }
    if (useTls.checked && (!clientCert.value.trim() || (!t && !clientKey.value.trim()))) problems.push('Paste the client certificate and its private key.');
    if (problems.length) {
      msg.append(errorBox({ errors: problems.map((message) => ({ message, errorCode: '', moreInfo: '' })) }, 'Check the form'));
      return;
    }
    const body = { url: url.value.trim(), eventTypes, authMethod: method, webhookVersion: version.value, isActive: active.checked };
    if (method === 'BEARER' && token.value) body.bearerToken = token.value;
    // Each credential only when typed: left blank it is kept (the API never shows the username, so it cannot be re-filled).
    if (method === 'BASIC' && user.value) body.basicUsername = user.value;
    if (method === 'BASIC' && pass.value) body.basicPassword = pass.value;
    // The server checks the bounds (400 naming the field, shown below).
    body.retrySchedule = steps.length ? steps.map(Number) : null;
    body.retryJitter = Number(jitter.value.trim());
    body.maxPerSecond = rate.value.trim() === '' ? null : Number(rate.value.trim());
    if (method === 'OAUTH2_CLIENT_CREDENTIALS') {
      const next = { tokenUrl: tokenUrl.value.trim(), clientId: clientId.value.trim(), scope: scope.value.trim() || null, audience: audience.value.trim() || null };
      const same = o && ['tokenUrl', 'clientId', 'scope', 'audience'].every((k) => next[k] === o[k]);
      if (!same || clientSecret.value) body.oauth2 = clientSecret.value ? { ...next, clientSecret: clientSecret.value } : next;
    }
    if (useTls.checked) {
      const next = { clientCertificate: clientCert.value.trim() + '\n', caCertificate: caCert.value.trim() ? caCert.value.trim() + '\n' : null };
      const same = t && next.clientCertificate.trim() === t.clientCertificate.trim() && (next.caCertificate ?? '').trim() === (t.caCertificate ?? '').trim();
      if (!same || clientKey.value.trim()) body.tls = clientKey.value.trim() ? { ...next, clientKey: clientKey.value.trim() + '\n' } : next;
    } else if (t) body.tls = null;
    if (existing) {
      // PATCH only what changed (credentials are write-only: sent when typed).
      for (const k of ['url', 'authMethod', 'webhookVersion', 'isActive', 'retryJitter', 'maxPerSecond']) if (body[k] === existing[k]) delete body[k];
      if (scheduleKept) delete body.retrySchedule;
    } else {
      if (body.retrySchedule === null) delete body.retrySchedule;
      if (body.maxPerSecond === null) delete body.maxPerSecond;
    }
    if (existing) {
      if (eventTypes.join() === existing.eventTypes.join()) delete body.eventTypes;
      if (Object.keys(body).length === 0) return close();
    }
    await busy(save, async () => {
      try {
        const saved = existing
          ? await patch(`/integrations/webhooks/subscriptions/${existing.uuid}`, body)
          : await post('/integrations/webhooks/subscriptions', body);
        close();
        onSaved(saved, !existing);
      } catch (err) {
        msg.append(errorBox(err, existing ? 'Could not save the subscription' : 'Could not create the subscription'));
      }
    });
  });
}

const graceNote = (until) => (until ? h('p', { class: 'muted' }, 'The previous secret also signs until ', time(until), '.') : null);

function secretDialog(sub, secret, { created = false, previousUntil } = {}) {
  const box = h('div', null, secretField('Signing secret', secret), graceNote(previousUntil));
  const rotate = h('button', { type: 'button', class: 'btn' }, 'Rotate secret');
  const done = h('button', { type: 'button', class: 'btn btn-primary' }, 'Done');
  const { close } = openDialog({
    title: created ? 'Subscription created' : 'Signing secret',
    content: [
      created ? h('p', null, 'Deliveries are signed with this secret. Give it to the receiver so that it can verify them; you can reveal it again later.') : h('p', null, `For ${sub.url}`),
      box,
      h('p', { class: 'muted' }, 'Signatures: X-…-Hmac-256 (hex HMAC-SHA256 of the body) and webhook-signature (Standard Webhooks). Rotating makes a new secret; the old one keeps signing for 24 hours.'),
    ],
    actions: [rotate, done],
  });
  done.addEventListener('click', close);
  rotate.addEventListener('click', async () => {
    const ok = await confirmDialog({
      title: 'Rotate the signing secret?',
      message: 'A new secret signs deliveries from now on. The current one also keeps signing for 24 hours, so receivers have time to switch.',
      confirmLabel: 'Rotate',
    });
    if (!ok) return;
    await busy(rotate, async () => {
      try {
        const r = await post(`/integrations/webhooks/subscriptions/${sub.uuid}/rotateSecret`);
        const fresh = r?.signingSecret ?? (await get(`/integrations/webhooks/subscriptions/${sub.uuid}/secret`)).signingSecret;
        clear(box, secretField('New signing secret', fresh), graceNote(r?.previousSecretExpiresAt));
        announce('Signing secret rotated; the previous one keeps signing for 24 hours', 'success');
      } catch (err) {
        box.append(errorBox(err, 'Could not rotate the secret'));
      }
    });
  });
}

export function webhooksPage({ main, signal }) {
  const listBox = h('div', { class: 'list' });
  const overallBox = h('div', { class: 'overall' }, h('p', { class: 'muted' }, 'Loading…'));
  const create = h('button', { type: 'button', class: 'btn btn-primary' }, 'New subscription');
  create.addEventListener('click', () => subscriptionDialog(undefined, async (sub) => {
    announce(`Subscription to ${closeBidi(sub.url)} created`, 'success');
    created.push(sub.uuid);
    refresh();
    const secret = sub.signingSecret ?? (await get(`/integrations/webhooks/subscriptions/${sub.uuid}/secret`).catch(() => ({}))).signingSecret;
    if (secret) secretDialog(sub, secret, { created: true });
  }, signal));

  main.append(
    h('div', { class: 'page-head' }, h('h1', null, 'Webhooks'), create),
    h('p', { class: 'lead' }, 'Each subscription receives the event types it lists, signed, by POST to its URL. Failed attempts are retried on a schedule; an endpoint that keeps failing is disabled automatically. See ', h('a', { href: '#/integrations/webhooks/logs' }, 'Webhooks Logs'), '.'),
    h('section', { 'aria-labelledby': 'overall-h', class: 'card' }, h('h2', { id: 'overall-h' }, `All subscriptions, last ${HOURS} hours`), overallBox),
    h('section', { 'aria-labelledby': 'subs-h' }, h('h2', { id: 'subs-h', class: 'visually-hidden' }, 'Subscriptions'), listBox));

  function actionButton(text, label, onclick, cls = 'btn btn-small', act = text.toLowerCase()) {
    const b = h('button', { type: 'button', class: cls, 'aria-label': label, 'data-act': act }, text);
    b.addEventListener('click', () => onclick(b));
    return b;
  }

  /** The state cell: active or not, then health: since when it fails, or why Bulb disabled it. */
  function stateCell(sub) {
    const hl = sub.health;
    const active = sub.isActive ? badge('Active', 'ok') : badge('Inactive', 'muted');
    if (hl.state === 'disabled') {
      return h('td', null, active, badge('Disabled', 'bad'), h('span', { class: 'health-note' }, hl.disabledReason));
    }
    if (hl.state === 'failing') {
      return h('td', null, active, badge('Failing', 'warn'),
        h('span', { class: 'health-note' }, `${hl.consecutiveFailures} failed attempt${hl.consecutiveFailures === 1 ? '' : 's'} in a row since `, time(hl.failingSince)));
    }
    return h('td', null, active, badge('Healthy', 'ok'), hl.lastSuccessAt ? h('span', { class: 'health-note' }, 'Last success ', time(hl.lastSuccessAt)) : null);
  }

  function chartCell(sub) {
    const buckets = stats?.bySub.get(sub.uuid) ?? stats?.empty;
    if (!buckets) return h('td', { class: 'rate' }, h('span', { class: 'muted' }, 'unavailable'));
    const label = `${sub.url}: ${summary(buckets, HOURS)}`;
    return h('td', { class: 'rate' }, hourlyChart(buckets, { label }), h('span', { class: 'muted health-note' }, summary(buckets, HOURS).replace(`Last ${HOURS} hours: `, '')));
  }

  function row(sub) {
    const target = sub.url;
    const disabled = sub.health.state === 'disabled';
    const toggle = sub.isActive ? 'Deactivate' : disabled ? 'Re-activate' : 'Activate';
    return h('tr', { 'data-sub': sub.uuid },
      h('th', { scope: 'row', class: 'url' }, h('span', { class: 'mono break' }, sub.url)),
      h('td', null, h('span', { class: 'types-list' }, sub.eventTypes.map((t) => h('code', null, t)))),
      stateCell(sub),
      h('td', null, AUTH_METHODS.find(([v]) => v === sub.authMethod)?.[1] ?? sub.authMethod, h('span', { class: 'health-note' }, `Version ${sub.webhookVersion}`)),
      chartCell(sub),
      h('td', { class: 'row-actions row-actions-wide' },
        actionButton('Edit', `Edit ${target}`, () => subscriptionDialog(sub, () => {
          announce('Subscription saved', 'success');
          refresh({ uuid: sub.uuid, act: 'edit' });
        }, signal)),
        actionButton(toggle, `${toggle} ${target}`, (b) => busy(b, async () => {
          try {
            await patch(`/integrations/webhooks/subscriptions/${sub.uuid}`, { isActive: !sub.isActive });
            announce(sub.isActive ? 'Subscription deactivated: its pending deliveries wait'
              : disabled ? 'Subscription re-activated: its waiting deliveries go out now' : 'Subscription activated', 'success');
            refresh({ uuid: sub.uuid, act: 'toggle' });
          } catch (err) {
            announce(`Could not change the state: ${err.message}`, 'error');
          }
        }), 'btn btn-small', 'toggle'),
        actionButton('Send test', `Send test to ${target}`, (b) => busy(b, async () => {
          try {
            await post(`/integrations/webhooks/subscriptions/${sub.uuid}/test`);
            announce('Test event queued: see Webhooks Logs for the attempt', 'success');
            setTimeout(() => refresh({ uuid: sub.uuid, act: 'send test' }), 1500);
          } catch (err) {
            announce(`Could not send a test event: ${err.message}`, 'error');
          }
        })),
        actionButton('Replay', `Replay events to ${target}`, () => replayDialog(sub)),
        actionButton('Reveal secret', `Reveal secret of ${target}`, (b) => busy(b, async () => {
          try {
            const r = await get(`/integrations/webhooks/subscriptions/${sub.uuid}/secret`);
            secretDialog(sub, r.signingSecret, { previousUntil: r.previousSecretExpiresAt });
          } catch (err) {
            announce(`Could not reveal the secret: ${err.message}`, 'error');
          }
        })),
        h('a', { class: 'btn btn-small', href: `#/integrations/webhooks/logs?subscription=${sub.uuid}`, 'aria-label': `Logs of ${target}` }, 'Logs'),
        actionButton('Delete', `Delete ${target}`, async (b) => {
          const ok = await confirmDialog({
            title: 'Delete this subscription?',
            message: [h('p', null, h('span', { class: 'mono break' }, sub.url)), h('p', null, 'It stops receiving events and its pending deliveries are cancelled. Past attempts stay in the logs.')],
            confirmLabel: 'Delete subscription',
            danger: true,
          });
          if (!ok) return b.focus();
          await busy(b, async () => {
            try {
              await del(`/integrations/webhooks/subscriptions/${sub.uuid}`);
              announce('Subscription deleted', 'success');
              refresh();
              main.querySelector('h1')?.focus();
            } catch (err) {
              announce(`Could not delete: ${err.message}`, 'error');
            }
          });
        }, 'btn btn-small btn-danger-quiet')));
  }

  /** One request for every chart: hourly attempts and successes per subscription and overall. */
  let stats;
  async function loadStats() {
    try {
      const r = await get('/integrations/webhooks/stats', { hours: HOURS }, { signal });
      stats = { bySub: new Map(r.subscriptions.map((x) => [x.subscriptionUuid, x.buckets])), empty: r.overall.map((b) => ({ ...b, attempts: 0, successes: 0 })) };
      const chartBox = h('div', { class: 'chart-box' });
      clear(overallBox, chartBox,
        h('p', { class: 'chart-legend' },
          h('span', null, h('span', { class: 'key key-ok', 'aria-hidden': 'true' }), 'successful attempts'),
          h('span', null, h('span', { class: 'key key-fail', 'aria-hidden': 'true' }), 'failed attempts'),
          h('span', null, h('span', { class: 'key key-rate', 'aria-hidden': 'true' }), 'success rate'),
          h('span', null, summary(r.overall, HOURS)),
          h('span', null, `Hours in ${zoneOf()}`)));
      fitChart(chartBox, (width) => hourlyChart(r.overall, { width, height: 150, axis: true, label: `All subscriptions: ${summary(r.overall, HOURS)}` }), signal);
    } catch (err) {
      stats = undefined;
      if (err.name !== 'AbortError') clear(overallBox, errorBox(err, 'Could not load the delivery statistics'));
    }
  }

  let pages = 1; // pages of the list shown: a refresh reads as many again, so that the row acted on is still there
  const created = []; // made in this view: the newest, past the pages shown, are shown after them (read one by one)

  /** The pages shown, and the subscriptions created here that they do not hold (while more pages follow). */
  async function readList() {
    const [list] = await Promise.all([getPages(SUBS, { limit: PAGE }, pages, { signal }), loadStats()]);
    const inPages = new Set(list.data.map((x) => x.uuid));
    const missing = list.cursor ? created.filter((u) => !inPages.has(u)) : [];
    const extra = await Promise.all(missing.map((u) => get(`${SUBS}/${u}`, undefined, { signal }).catch((err) => (err.status === 404 ? null : Promise.reject(err)))));
    return { subs: list.data.concat(extra.filter(Boolean)), cursor: list.cursor };
  }

  /**
   * Loads the list again. The list is drawn anew, so a control focused in it is gone and focus falls to the page's
   * body: `then` names the row's control to focus instead ({ uuid, act }: the one the act started from), or the
   * page's heading when that row is gone. Focus elsewhere (a dialog, another field) is left where it is.
   */
  async function refresh(then) {
    await load(listBox, 'subscriptions', readList, ({ subs, cursor }) => {
      if (subs.length === 0) {
        listBox.append(empty('No webhook subscriptions yet.', h('p', null, 'Create one to have events POSTed to your endpoint.')));
        return;
      }
      const shown = new Set(subs.map((x) => x.uuid));
      const tbl = table({
        caption: 'Webhook subscriptions',
        stack: true,
        columns: ['URL', 'Event types', 'State and health', 'Authentication', `Last ${HOURS} hours`, h('span', { class: 'visually-hidden' }, 'Actions')],
        rows: subs.map(row),
      });
      listBox.append(tbl);
      const more = moreButton({
        label: 'Load more subscriptions', cursor, what: 'more subscriptions',
        fetchPage: (at) => get(SUBS, { limit: PAGE, cursor: at }, { signal }),
        onPage: (data) => {
          pages++;
          // One created here is shown already (after the pages); it is not listed twice.
          const fresh = data.filter((x) => !shown.has(x.uuid));
          for (const x of fresh) shown.add(x.uuid);
          appendRows(tbl, fresh.map(row));
        },
      });
      if (more) listBox.append(h('p', { class: 'muted' }, `Oldest first, ${PAGE} at a time.`), more);
    });
    if (!then || (document.activeElement && document.activeElement !== document.body)) return;
    (listBox.querySelector(`tr[data-sub="${then.uuid}"] [data-act="${then.act}"]`) ?? main.querySelector('h1'))?.focus();
  }
  refresh();
}
