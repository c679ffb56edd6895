// Integrations → Webhooks → Replay (API 2026-11): on a subscription, replay a window of events (since, until, event
// types) and watch the replay's progress (status, events queued) until it finishes, with Cancel meanwhile; the
// subscription's recent replays below.
import { get, idempotencyKey, post } from '../api.js';
import { announce, badge, busy, clear, errorBox, field, fromLocalInput, h, load, openDialog, table, time, toLocalInput, uid, zoneHint } from '../dom.js';

const FINISHED = new Set(['completed', 'cancelled', 'failed']);
const statusBadge = (s) => badge(s, s === 'completed' ? 'ok' : s === 'failed' ? 'bad' : 'muted');
/** Kinds of event the events API does not keep: they cannot be replayed. */
const replayable = (t) => !t.startsWith('webhook');

function progressView(r) {
  return h('div', { class: 'replay-progress' },
    h('p', null, 'Status: ', statusBadge(r.status)),
    h('p', { dataset: { testid: 'replay-queued' } }, `${r.eventsQueued} event${r.eventsQueued === 1 ? '' : 's'} queued`),
    h('p', { class: 'muted' }, 'Window ', time(r.since), ' to ', time(r.until), ` · ${r.eventTypes.join(', ')}`),
    r.finishedAt ? h('p', { class: 'muted' }, 'Finished ', time(r.finishedAt)) : null,
    r.error ? h('p', { role: 'alert' }, r.error) : null);
}

/** Shows r in box, refreshed every 500 ms until it finishes (with Cancel meanwhile); then onFinished. */
async function watchReplay(box, r, signal, onFinished) {
  for (;;) {
    const cancel = FINISHED.has(r.status) ? null : h('button', { type: 'button', class: 'btn' }, 'Cancel replay');
    cancel?.addEventListener('click', () => busy(cancel, async () => {
      try {
        await post(`/integrations/webhooks/replays/${r.uuid}/cancel`);
        announce('Replay cancelled: the deliveries queued so far stay');
      } catch (err) {
        announce(err.message, 'error');
      }
    }));
    clear(box, progressView(r), cancel);
    if (FINISHED.has(r.status)) break;
    await new Promise((res) => setTimeout(res, 500));
    if (signal.aborted) return;
    try {
      r = await get(`/integrations/webhooks/replays/${r.uuid}`, undefined, { signal });
    } catch (err) {
      if (err.name !== 'AbortError') box.append(errorBox(err, 'Could not read the replay'));
      return;
    }
  }
  announce(`Replay ${r.status}: ${r.eventsQueued} events queued`, r.status === 'failed' ? 'error' : 'success');
  onFinished?.(r);
}

function recentTable(list) {
  if (list.length === 0) return h('p', { class: 'muted' }, 'No replays yet.');
  return table({
    caption: 'Recent replays', stack: true,
    columns: ['Started', 'Window', 'Event types', 'Status', 'Queued'],
    rows: list.map((r) => h('tr', null,
      h('td', null, time(r.createdAt)), h('td', null, time(r.since), ' – ', time(r.until)),
      h('td', null, r.eventTypes.join(', ')), h('td', null, statusBadge(r.status)), h('td', null, String(r.eventsQueued)))),
  });
}

/** The replay dialog of one subscription. */
export function replayDialog(sub) {
  const ctl = new AbortController();
  const { signal } = ctl;
  const since = h('input', { type: 'datetime-local', name: 'since', required: true, value: toLocalInput(new Date(Date.now() - 24 * 3600_000).toISOString()) });
  const until = h('input', { type: 'datetime-local', name: 'until' });
  const types = sub.eventTypes.filter(replayable);
  const boxes = types.map((t) => {
    const id = uid('rtype');
    const input = h('input', { type: 'checkbox', name: 'eventTypes', value: t, id, checked: true });
    return { t, input, el: h('div', { class: 'check' }, input, h('label', { for: id }, h('code', null, t))) };
  });
  const skipped = sub.eventTypes.filter((t) => !replayable(t));
  const msg = h('div');
  const start = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Start replay');
  const progress = h('section', { 'aria-label': 'Replay progress', 'aria-live': 'polite', hidden: true, tabindex: '-1' });
  const recent = h('div');
  const form = h('form', { class: 'form-stack', novalidate: true, 'aria-label': 'Replay events' },
    h('p', null, 'Sends every event of the window again, one new delivery each, whether or not it was delivered before (events from before the subscription existed included, as long as they are kept). Live deliveries go first.'),
    field('Since', since, zoneHint()),
    field('Until (optional)', until, 'Leave blank for now.'),
    h('fieldset', { class: 'event-types' }, h('legend', null, 'Event types'), boxes.map((b) => b.el),
      skipped.length ? h('p', { class: 'muted' }, `${skipped.join(', ')}: not kept as events, not replayed.`) : null),
    msg, h('div', { class: 'dialog-actions' }, start));
  openDialog({ title: `Replay events to ${sub.url}`, wide: true, content: [form, progress, h('h3', null, 'Recent replays'), recent], onClose: () => ctl.abort() });
  const loadRecent = () => load(recent, 'replays', async () => (await get(`/integrations/webhooks/subscriptions/${sub.uuid}/replays`, { limit: 10 }, { signal })).data, (list) => recent.append(recentTable(list)));
  loadRecent();
  // One key per dialog: a second click, or a retry after a lost answer, never starts a second replay.
  const key = idempotencyKey();
  form.addEventListener('input', () => msg.firstChild && clear(msg));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(msg);
    const body = { since: fromLocalInput(since.value) };
    if (until.value) body.until = fromLocalInput(until.value);
    const picked = boxes.filter((b) => b.input.checked).map((b) => b.t);
    const problems = [];
    if (!since.value) problems.push('Enter the start of the window.');
    if (picked.length === 0) problems.push('Choose at least one event type.');
    if (problems.length) return msg.append(errorBox({ errors: problems.map((message) => ({ message, errorCode: '', moreInfo: '' })) }, 'Check the form'));
    if (picked.length < types.length) body.eventTypes = picked;
    await busy(start, async () => {
      try {
        const r = await post(`/integrations/webhooks/subscriptions/${sub.uuid}/replay`, body, { headers: { 'Idempotency-Key': key } });
        form.hidden = true;
        progress.hidden = false;
        progress.focus(); // the form that held the focus is hidden (it fell to the body; found by a probe)
        watchReplay(progress, r, signal, () => loadRecent());
      } catch (err) {
        msg.append(errorBox(err, 'Could not start the replay'));
      }
    });
  });
}
