// One customer: its fields, the data attached to it (counts and lists), its merge history, and the merge
// history with Undo (merge-history.js), its possible duplicates (duplicates.js) and the merge form (preview
// with ?dryRun=true, then confirm). A disabled customer links to the customer it was merged into.
// #/customers/{id}?merge={uuids, one per line} opens with that merge previewed (the duplicates page links so). Merges name
// this customer and the duplicates' by uuid: a reference is "uuid or externalId, a uuid match wins", and an externalId
// may look like another customer's uuid; typed references are shown as the dry run resolved them.
import { ApiError, get, idempotencyKey, post } from '../api.js';
import { announce, badge, busy, clear, closeBidi, confirmDialog, dl, empty, errorBox, field, h, load, loading, moreButton, table, time } from '../dom.js';
import { displayName, refName, statusBadge } from './customers.js';
import { historySection } from './merge-history.js';
import { duplicatesSection } from './duplicates.js';

const PAGE = 250; // rows of attached data per request (the API's largest page)
const text = (v) => (v === null || v === undefined || v === '' ? '—' : String(v));
const short = (s, n = 80) => (s && s.length > n ? `${s.slice(0, n - 1)}…` : text(s));
/** The values given, joined, each closed where it ends (an override in one reversed the ones after it). */
const joined = (values, sep) => values.filter(Boolean).map(closeBidi).join(sep);

/** The attached-data kinds (SPEC §4), their list route segment, and the columns shown for each row. */
export const KINDS = [
  { key: 'orders', title: 'Orders', cols: ['External ID', 'Ordered', 'Total', 'Items'], row: (o) => [h('code', null, text(o.externalId)), time(o.orderedAt), `${text(o.total)} ${o.currency ?? ''}`.trim(), String((o.lineItems || []).length)] },
  { key: 'followUps', title: 'Follow-ups', cols: ['Subject', 'Due', 'Status', 'Associate'], row: (f) => [short(f.subject), time(f.dueAt), text(f.status), f.associateUuid ? h('code', null, f.associateUuid) : '—'] },
  { key: 'notes', title: 'Notes', cols: ['Type', 'Note', 'Created'], row: (n) => [text(n.type), short(n.comments, 120), time(n.createdAt)] },
  { key: 'messages', title: 'Messages', cols: ['Channel', 'Direction', 'Message', 'Sent'], row: (m) => [text(m.channel), text(m.direction), short(m.body, 100), time(m.sentAt)] },
  { key: 'preferences', title: 'Preferences', cols: ['Category', 'Value'], row: (p) => [text(p.category), text(p.value)] },
  { key: 'productShares', title: 'Product shares', cols: ['SKU', 'Shared', 'Message'], row: (p) => [h('code', null, text(p.sku)), time(p.sharedAt), short(p.message)] },
  { key: 'associates', title: 'Associates', cols: ['Associate', 'Role', 'Since'], row: (a) => [h('code', null, text(a.associateUuid)), text(a.role), time(a.createdAt)] },
];

const customerLink = (ref) => {
  if (!ref) return '—';
  if (typeof ref === 'string') return h('a', { href: `#/customers/${encodeURIComponent(ref)}` }, ref);
  return h('a', { href: `#/customers/${encodeURIComponent(ref.uuid || ref.externalId)}` }, refName(ref));
};

function list(items, render) {
  if (!items || items.length === 0) return '—';
  return h('ul', { class: 'plain' }, items.map((i) => h('li', null, render(i))));
}

/** How many rows are shown: "250+" while there are more to load. */
const countOf = (n, more) => `${n}${more ? '+' : ''}`;

/**
 * One kind of attached data in a disclosure, from its first page; *Load more* fetches the next pages (a first page
 * alone left the rows past 250 out of reach), and the counts (here and countEl, in the Counts list) follow.
 */
function kindList(k, path, page, countEl, signal) {
  const summary = h('summary', null);
  let n = page.data.length;
  const count = (more) => {
    countEl.textContent = countOf(n, more);
    summary.textContent = `${k.title} (${countOf(n, more)})`;
  };
  count(!!page.nextCursor);
  if (n === 0) return h('details', { class: 'kind' }, summary, empty(`No ${k.title.toLowerCase()}.`));
  const rowOf = (r) => h('tr', null, k.row(r).map((cell, i) => (i === 0 ? h('th', { scope: 'row' }, cell) : h('td', null, cell))));
  const tbl = table({ caption: k.title, columns: k.cols, rows: page.data.map(rowOf) });
  const more = moreButton({
    label: `Load more ${k.title.toLowerCase()}`, cursor: page.nextCursor, what: `more ${k.title.toLowerCase()}`,
    fetchPage: (cursor) => get(path, { limit: PAGE, cursor }, { signal }),
    onPage: (rows, left) => {
      tbl.querySelector('tbody').append(...rows.map(rowOf));
      n += rows.length;
      count(left);
    },
  });
  return h('details', { class: 'kind' }, summary, tbl, more);
}

function movedTable(moved, duplicates, caption) {
  const rows = KINDS.map((k) => h('tr', null, h('th', { scope: 'row' }, k.title), h('td', { class: 'num' }, String(moved?.[k.key] ?? 0))));
  rows.push(h('tr', null, h('th', { scope: 'row' }, 'Duplicate associate links removed'), h('td', { class: 'num' }, String(duplicates ?? 0))));
  return table({ caption, hideCaption: false, columns: ['Data', 'Rows'], rows, className: 'table-compact' });
}

export function customerPage({ main, params, query, signal, navigate }) {
  const id = params[0];
  const heading = h('h1', null, 'Customer');
  const body = h('div');
  main.append(h('p', { class: 'crumbs' }, h('a', { href: '#/customers' }, 'Customers'), ' / ', h('span', { 'aria-current': 'page' }, id)), heading, body);

  load(body, 'the customer', () => get(`/crm/customers/${encodeURIComponent(id)}`, undefined, { signal }), (c) => {
    heading.textContent = displayName(c);
    document.title = `${heading.textContent} · Bulb console`;
    main.querySelector('.crumbs span').textContent = refName(c);
    render(c);
  });

  function render(c) {
    const cid = encodeURIComponent(c.uuid);
    if (c.status === 'disabled' && c.mergedInto) {
      body.append(h('div', { class: 'notice notice-disabled', role: 'note' },
        h('p', null, h('strong', null, 'This customer is disabled.'), ' It was merged into ',
          customerLink(c.mergedInto),
          '; its orders, notes and other attached data now belong to that customer. Its own emails, phones and addresses stay here.')));
    } else if (c.status === 'disabled') {
      body.append(h('div', { class: 'notice notice-disabled', role: 'note' },
        h('p', null, h('strong', null, 'This customer is disabled.'), ' It was deactivated (disabled: true), not merged; writing disabled: false re-activates it.')));
    }

    // ---- profile ----
    body.append(h('section', { class: 'card', 'aria-labelledby': 'profile-h' },
      h('h2', { id: 'profile-h' }, 'Profile'),
      dl([
        ['Status', statusBadge(c.status)],
        c.mergedInto ? ['Merged into', customerLink(c.mergedInto)] : null,
        ['External ID', c.externalId === null ? h('span', { class: 'muted' }, 'none') : h('code', null, c.externalId)],
        ['UUID', h('code', null, c.uuid)],
        ['ID', h('code', null, String(c.id))],
        ['Prefix', text(c.prefix)],
        ['First name', text(c.firstName)],
        ['Last name', text(c.lastName)],
        ['Suffix', text(c.suffix)],
        ['Loyalty tier', text(c.loyaltyTier)],
        ['Excluded from campaigns', c.excludeFromCampaigns ? 'yes' : 'no'],
        // A link only to a web address: the API stores any text as the image, and a javascript: or data: URL is no picture.
        ['Image', c.image && /^https?:\/\//i.test(c.image) ? h('a', { href: c.image, rel: 'noopener noreferrer', target: '_blank' }, c.image) : text(c.image)],
        ['Emails', list(c.emails, (e) => [e.email, e.type ? ` (${e.type})` : '', e.isPrimary ? [' ', badge('primary', 'info')] : ''])],
        ['Phones', list(c.phones, (p) => [p.number, p.type ? ` (${p.type})` : '', p.isPrimary ? [' ', badge('primary', 'info')] : ''])],
        ['Addresses', list(c.addresses, (a) => [
          joined([joined([a.firstName, a.lastName], ' '), a.address1, a.address2, a.city, a.zoneCode, a.postCode, a.countryCode], ', ') || '—',
          a.phone || a.emailAddress ? ` · ${joined([a.phone, a.emailAddress], ' · ')}` : '',
          a.type ? ` (${a.type})` : '', a.isPrimary ? [' ', badge('primary', 'info')] : '', a.disabled ? [' ', badge('disabled', 'warn')] : ''])],
        ['Social profiles', list(c.socialProfiles, (s) => `${closeBidi(s.network)}: ${s.handle}`)],
        ['Attributes', list(c.attributes, (v) => [h('code', null, v.attributeExternalId), `: ${v.value}`, v.languageExternalId ? ` (${v.languageExternalId})` : ''])],
        ['Created', time(c.createdAt)],
        ['Updated', time(c.updatedAt)],
      ])));

    // ---- attached data ----
    const countsBox = h('div', { class: 'counts' });
    const kindsBox = h('div', { class: 'kinds' });
    body.append(h('section', { class: 'card', 'aria-labelledby': 'attached-h' }, h('h2', { id: 'attached-h' }, 'Attached data'), countsBox, kindsBox));
    countsBox.append(loading('attached data'));
    const kindPath = (k) => `/crm/customers/${cid}/${k.key}`;
    Promise.all(KINDS.map((k) => get(kindPath(k), { limit: PAGE }, { signal }).then((page) => ({ k, page }), (err) => ({ k, err }))))
      .then((results) => {
        const countEls = results.map(({ err }) => h('span', { class: 'count-n' }, err ? '?' : ''));
        clear(countsBox, h('ul', { class: 'count-list', 'aria-label': 'Counts' }, results.map(({ k }, i) =>
          h('li', null, countEls[i], h('span', { class: 'count-label' }, k.title)))));
        results.forEach(({ k, page, err }, i) => kindsBox.append(err
          ? h('details', { class: 'kind' }, h('summary', null, `${k.title} (error)`), errorBox(err, `Could not load ${k.title.toLowerCase()}`))
          : kindList(k, kindPath(k), page, countEls[i], signal)));
      })
      .catch((err) => err.name !== 'AbortError' && clear(countsBox, errorBox(err, 'Could not load attached data')));

    // ---- merge history (with undo), possible duplicates, merge ----
    body.append(historySection({ c, kinds: KINDS, signal, navigate, customerLink, list }));
    if (c.status === 'active') {
      const merge = mergeSection(c, navigate);
      body.append(duplicatesSection({ c, signal, customerLink, previewMerge: merge.preview }), merge.section);
      if (query.merge) merge.preview(parseIds(query.merge));
    }
  }
}

/** One reference per line: an external ID may hold spaces, commas and semicolons. */
function parseIds(value) {
  return [...new Set(value.split(/\r?\n/).map((s) => s.trim()).filter(Boolean))];
}

function mergeSection(c, navigate) {
  const ids = h('textarea', { name: 'mergeWithCustomerIds', rows: '2', spellcheck: 'false', autocomplete: 'off', class: 'mono' });
  const preview = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Preview merge');
  const out = h('div', { class: 'merge-out', tabindex: '-1' });
  const form = h('form', { class: 'form-inline' },
    field('External IDs of the customers to merge into this one', ids, 'One per line: an external ID, or a uuid (a uuid match wins). Their orders, follow-ups, notes, messages, preferences, product shares and associates move here; they are then disabled.'),
    h('div', { class: 'actions' }, preview));
  const path = `/crm/customers/${encodeURIComponent(c.uuid)}/merge`;
  ids.addEventListener('input', () => out.querySelector('.preview') && clear(out)); // a preview is of what was typed then

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await runPreview(parseIds(ids.value));
  });

  /** Previews merging these externalIds into this customer (also the duplicates panel's one click). */
  async function runPreview(list) {
    clear(out);
    if (list.length === 0) {
      out.append(errorBox({ errors: [{ message: 'Enter at least one external ID.', errorCode: '', moreInfo: '' }] }, 'Nothing to preview'));
      return ids.focus();
    }
    await busy(preview, async () => {
      try {
        // The references as customers now, by uuid: the preview and the merge name the same customers even if an
        // externalId is renamed or reused in between (the confirm re-sent what was typed, and merged whichever customer
        // held that externalId by then). A reference that names none: the dry run of what was typed reports them all.
        const uuids = await resolveCustomers(list);
        const dry = await post(path, { mergeWithCustomerIds: uuids ?? list }, { query: { dryRun: 'true' } });
        showPreview(uuids ?? list, dry);
      } catch (err) {
        out.append(errorBox(err, 'The merge cannot be done'));
        out.focus();
      }
    });
  }

  /** Each reference's customer uuid, or null when one names no customer. */
  async function resolveCustomers(list) {
    const found = await Promise.all(list.map((ref) => get(`/crm/customers/${encodeURIComponent(ref)}`).catch((err) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    })));
    return found.every(Boolean) ? found.map((c) => c.uuid) : null;
  }

  function showPreview(list, dry) {
    const confirm = h('button', { type: 'button', class: 'btn btn-danger' }, 'Confirm merge');
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    // The customers as the dry run resolved the references (what the merge will take), not as typed.
    const names = (dry.mergedCustomerIds || list).map(closeBidi);
    const into = refName(dry.primary ?? c);
    clear(out, h('div', { class: 'preview', role: 'region', 'aria-labelledby': 'preview-h' },
      h('h3', { id: 'preview-h' }, 'Merge preview (nothing has changed yet)'),
      h('p', null, `Merging ${names.join(', ')} into ${into} would move:`),
      movedTable(dry.moved, dry.duplicateAssociatesRemoved, 'What moves to this customer'),
      h('p', { class: 'muted' }, `Then ${list.length === 1 ? 'that customer is disabled and points' : `those ${list.length} customers are disabled and point`} here. Emails, phones, addresses, social profiles and loyalty tier stay where they are.`),
      h('div', { class: 'actions' }, confirm, cancel)));
    out.focus();
    cancel.addEventListener('click', () => {
      clear(out);
      ids.focus();
    });
    let failure = null; // the last failure's box: a new one replaces it (they stacked up; found by a probe)
    confirm.addEventListener('click', async () => {
      const ok = await confirmDialog({
        title: `Merge ${list.length} customer${list.length === 1 ? '' : 's'} into ${into}?`,
        message: `${names.join(', ')} will be disabled and their attached data moved to ${into}. It can be undone from the merge history.`,
        confirmLabel: 'Merge',
        danger: true,
      });
      if (!ok) return confirm.focus();
      await busy(confirm, async () => {
        try {
          // An Idempotency-Key makes a repeated click or a retried request replay the first answer.
          const headers = { 'idempotency-key': idempotencyKey() };
          const result = await post(path, { mergeWithCustomerIds: list }, { headers });
          announce(`Merged ${(result?.mergedCustomerIds?.map(closeBidi) || names).join(', ')} into ${result?.primary ? refName(result.primary) : into}`, 'success');
          navigate(`#/customers/${encodeURIComponent(result?.primary?.uuid || c.uuid)}`, true);
          document.querySelector('#main h1')?.focus(); // the page was drawn again: focus would fall to the body
        } catch (err) {
          failure?.remove();
          failure = errorBox(err, err instanceof ApiError && (err.status === 403 || err.status === 409) ? 'The merge was refused' : 'The merge failed');
          out.append(failure);
        }
      });
    });
  }

  const section = h('section', { class: 'card', 'aria-labelledby': 'merge-h' },
    h('h2', { id: 'merge-h' }, 'Merge customers into this one'),
    h('p', { class: 'muted' }, 'Use this when other records are the same person. Preview first: it shows what would move and changes nothing.'),
    form, out);
  const previewFor = (list) => {
    ids.value = list.join('\n');
    section.scrollIntoView({ block: 'start' });
    return runPreview(list);
  };
  return { section, preview: previewFor };
}
