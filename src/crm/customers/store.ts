// SQL for customers.
import { statementName, type Queryable } from '../../db/db.ts';
import { writeHorizon } from '../../db/write-horizon.ts';
import { walked, walkSql, type Walked } from '../../db/budgeted-walk.ts';
import { outboxCtes } from '../../events/emit.ts';
import type { CustomerInput, ListQueryT } from './schema.ts';
import { DATA_COLUMNS, JSON_COLUMNS, mergedIntoColumns, normalInput, rowColumns, sqlType, WRITABLE, type CustomerRow } from './wire.ts';
import { UUID } from '../../http/formats.ts';

export type { CustomerRow } from './wire.ts';

const SELECT = `SELECT ${rowColumns('c')}, m.uuid AS merged_into_uuid, m.external_id AS merged_into_external_id
  FROM customers c LEFT JOIN customers m ON m.id = c.merged_into`;
/** A look-up that locks: whom the customer was merged into read from the locked row itself (wire.ts mergedIntoColumns). */
const SELECT_LOCKED = `SELECT ${rowColumns('c')}, ${mergedIntoColumns('c')} FROM customers c`;
const selectFor = (lock: Lock) => (lock ? SELECT_LOCKED : SELECT);

export const looksLikeUuid = (s: string) => UUID.test(s);

/**
 * A write's full values: every writable field (absent ones empty) in the stored form, and the status it asks for;
 * externalId null (or omitted) for a customer without one.
 */
export type CustomerValues = Omit<CustomerInput, 'externalId'> & { externalId?: string | null };

/**
 * Parameters $1… of a write: externalId, the WRITABLE columns in order (addresses and attributes normalised), email
 * keys, disabled (null: status unchanged, active for a new customer).
 */
export function columnsOf(input: CustomerValues): unknown[] {
  const n = normalInput(input) as Record<string, any>;
  const emails: { email: string }[] = n.emails ?? [];
  return [
    input.externalId ?? null,
    ...WRITABLE.map(([key, col, empty]) => (JSON_COLUMNS.has(col) ? JSON.stringify(n[key] ?? empty) : (n[key] ?? empty))),
    [...new Set(emails.map((e) => e.email.toLowerCase()))],
    input.disabled ?? null,
  ];
}
const N = WRITABLE.length;
/** $n of a column in columnsOf's parameters, after `shift` leading ones. */
const param = (col: string, shift = 0) => `$${shift + 2 + DATA_COLUMNS.indexOf(col as any)}`;
const KEYS_PARAM = (shift = 0) => `$${shift + 2 + N}`;
const DISABLED_PARAM = (shift = 0) => `$${shift + 3 + N}`;
/** A column's new value: addresses get their uuids (bulb_address_uuids, migration 027) against `current`. */
const valueOf = (col: string, shift: number, current: string) =>
  col === 'addresses' ? `bulb_address_uuids(${param(col, shift)}::jsonb, ${current})` : `${param(col, shift)}::${sqlType(col)}`;

/**
 * Row lock of a lookup: true = FOR NO KEY UPDATE (to change it), 'share' = FOR SHARE (to attach data to it). A write
 * changes no key another table references, and FOR UPDATE also blocked every foreign-key check on the customer (the
 * duplicates refresher's profile insert), which deadlocked with the refresher under ordinary load
 * (test/crm/write-locks.test.ts). Writers still queue behind one another, and attachers (FOR SHARE) behind writers.
 */
type Lock = boolean | 'share';
const lockClause = (lock: Lock) => (lock === 'share' ? ' FOR SHARE OF c' : lock ? ' FOR NO KEY UPDATE OF c' : '');
/** Names of the prepared look-ups (one per lock kind: one name, one SQL text). */
const lockName = (lock: Lock) => (lock === 'share' ? 'share' : lock ? 'update' : 'read');

/** Finds by uuid or externalId (a uuid match wins). `lock` takes a row lock for an update. */
export async function findCustomer(db: Queryable, id: string, lock: Lock = false): Promise<CustomerRow | undefined> {
  const forUpdate = lockClause(lock);
  if (looksLikeUuid(id)) {
    const r = await db.query<CustomerRow>(`${selectFor(lock)} WHERE c.uuid = $1${forUpdate}`, [id], `customer_by_uuid_${lockName(lock)}`);
    if (r.rows[0]) return r.rows[0];
  }
  return findByExternalId(db, id, lock);
}

export async function findByExternalId(db: Queryable, externalId: string, lock: Lock = false): Promise<CustomerRow | undefined> {
  const r = await db.query<CustomerRow>(`${selectFor(lock)} WHERE c.external_id = $1${lockClause(lock)}`, [externalId], `customer_by_external_id_${lockName(lock)}`);
  return r.rows[0];
}

/**
 * A customer (by uuid or externalId, a uuid match winning) and the ids of the customers merged into it, in id order,
 * unlocked: what a write that renames it locks first (service.ts lockForWrite).
 */
export async function findWithMergedIn(db: Queryable, ref: string): Promise<{ id: string; uuid: string; external_id: string | null; merged: string[] } | undefined> {
  const sql = (by: string) => `SELECT c.id::text AS id, c.uuid::text AS uuid, c.external_id,
      ARRAY(SELECT m.id::text FROM customers m WHERE m.merged_into = c.id ORDER BY m.id) AS merged
    FROM customers c WHERE c.${by} = $1`;
  if (looksLikeUuid(ref)) {
    const r = await db.query<any>(sql('uuid'), [ref]);
    if (r.rows[0]) return r.rows[0];
  }
  return (await db.query<any>(sql('external_id'), [ref])).rows[0];
}

/** Locks customers FOR NO KEY UPDATE in id order, the order a merge locks them in (merge/store.ts lockCustomers). */
export async function lockIds(tx: Queryable, ids: string[]): Promise<void> {
  await tx.query('SELECT 1 FROM customers WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE', [ids]);
}

export async function findCustomerById(db: Queryable, internalId: string): Promise<CustomerRow> {
  const r = await db.query<CustomerRow>(`${SELECT} WHERE c.id = $1`, [internalId]);
  return r.rows[0];
}

const INSERT_CUSTOMER = `INSERT INTO customers (external_id, ${DATA_COLUMNS.join(', ')}, email_keys, status)
     VALUES ($1, ${DATA_COLUMNS.map((c) => valueOf(c, 0, 'NULL')).join(', ')}, ${KEYS_PARAM()},
       CASE WHEN ${DISABLED_PARAM()}::boolean THEN 'disabled' ELSE 'active' END) ON CONFLICT (external_id) DO NOTHING
     RETURNING ${rowColumns('customers')}, NULL::uuid AS merged_into_uuid, NULL::text AS merged_into_external_id`;

/** Inserts; returns undefined when the externalId is taken (never without one: customers without one are distinct). */
export async function insertCustomer(db: Queryable, input: CustomerValues): Promise<CustomerRow | undefined> {
  // A new customer is merged into nobody: RETURNING gives the whole row without a second round trip.
  const r = await db.query<CustomerRow>(INSERT_CUSTOMER, columnsOf(input), 'customer_insert');
  return r.rows[0];
}

// The customer, its customerCreate event and the deliveries (whose trigger NOTIFYs): one statement, one round trip.
const CREATE_CUSTOMER = `WITH c AS (${INSERT_CUSTOMER}),
     ${outboxCtes(`SELECT 'customerCreate', 'Customer', c.uuid, c.external_id, $${N + 4}::text FROM c`)}
     SELECT c.* FROM c`;

/**
 * Inserts a customer and emits its customerCreate event (with deliveries) in one statement, so that on its
 * own (autocommit) it is one round trip and one transaction. Returns undefined (and writes nothing) when
 * the externalId is taken.
 */
export async function insertCustomerWithEvent(db: Queryable, input: CustomerValues, source: string): Promise<CustomerRow | undefined> {
  const r = await db.query<CustomerRow>(CREATE_CUSTOMER, [...columnsOf(input), source], 'customer_create');
  return r.rows[0];
}

/**
 * Replaces every writable column of one customer, and its status when `disabled` is given (only for one that is
 * not merged away: the caller checks). Returns false when nothing differed (no write, no event).
 * Throws a unique violation (23505) when the new externalId is taken.
 */
export async function replaceCustomer(db: Queryable, internalId: string, input: CustomerValues): Promise<boolean> {
  const values = DATA_COLUMNS.map((c) => valueOf(c, 1, 'c.addresses'));
  const status = `CASE WHEN ${DISABLED_PARAM(1)}::boolean IS NULL THEN c.status WHEN ${DISABLED_PARAM(1)}::boolean THEN 'disabled' ELSE 'active' END`;
  const r = await db.query(
    `UPDATE customers c SET external_id = $2, ${DATA_COLUMNS.map((col, i) => `${col} = ${values[i]}`).join(', ')},
       email_keys = ${KEYS_PARAM(1)}, status = ${status}, updated_at = clock_timestamp()
     WHERE id = $1 AND (c.external_id, ${DATA_COLUMNS.map((col) => `c.${col}`).join(', ')}, c.status)
       IS DISTINCT FROM ($2, ${values.join(', ')}, ${status})`,
    [internalId, ...columnsOf(input)],
  );
  return r.rowCount > 0;
}

/**
 * The customers merged into `internalId`, marked changed (updated_at) because the survivor's externalId, which they
 * show as `mergedInto.externalId`, changed: a sync by updatedSince, the export's resume and the events then carry it
 * (it changed with no trace until 2026-11-29; found by a probe). Their uuid and externalId, for their events.
 * The caller locked them before the survivor (service.ts lockForWrite), so their locks are held already; one merged
 * into it since that look-up is locked without waiting (NOWAIT: it would be taken out of id order, and a merge holding
 * it could be waiting for the survivor): SQLSTATE 55P03 when another transaction holds it.
 */
export async function touchMergedInto(db: Queryable, internalId: string): Promise<{ uuid: string; external_id: string | null }[]> {
  const r = await db.query<{ uuid: string; external_id: string | null }>(
    `WITH locked AS (SELECT id FROM customers WHERE merged_into = $1 ORDER BY id FOR NO KEY UPDATE NOWAIT)
     UPDATE customers c SET updated_at = clock_timestamp() FROM locked l WHERE c.id = l.id RETURNING c.uuid::text AS uuid, c.external_id`,
    [internalId],
  );
  return r.rows;
}

/**
 * Where a walk of the customers changed since a time stands: the last one served, by its updated_at (exact to
 * the microsecond, in UTC: SYNC_AT) and id. Such a walk is in (updated_at, id) order, read from that index
 * (customers_updated) whatever the number changed (see docs/scaling.md "updatedSince").
 */
const SYNC_AT = `to_char(c.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
export interface SyncAfter {
  at: string;
  id: string;
}

/** How many customers a page of a search by a term without a trigram reads at most (listCustomers). */
export const SCAN_BUDGET = 10_000;

/**
 * Whether pg_trgm finds a trigram in a LIKE '%term%' pattern: a run of at least three letters or digits (its word
 * characters; anything else separates words, and a pattern's ends are not word ends).
 */
export const hasTrigram = (term: string) => /[\p{L}\p{N}]{3}/u.test(term);

/**
 * How many candidates the trigram index may answer for a term before the term is looked for by a budgeted walk instead
 * (listCustomers). Each is read from the table and rechecked, wherever its row is: 2,000 rows, up to as many pages; the
 * walk's page reads SCAN_BUDGET rows in id order (~330 pages) and stops at a page of matches.
 */
export const INDEX_CANDIDATES = 2_000;

/**
 * About how many entries of a trigram's posting list the index reads per page (searchPlan): 'example', five trigrams
 * every one of 1,000,000 customers holds, read ~2,400 pages (test/crm/search-scale.test.ts).
 */
const POSTINGS_PER_PAGE = 2_000;

/**
 * How a search term is looked for, from how often each of its trigrams occurs (the statistics
 * customers_search_trigrams, migration 079: the 1,000 most common with their share of the customers, made by ANALYZE).
 *
 * `candidates`: how many customers the trigram index answers for the term, estimated: per word of the term (a run of
 * three or more letters or digits), the share of its rarest trigram (a word's trigrams come together: every customer
 * at gmail.com has gma, mai and ail), or, for a run of digits (an id, a number), the product of the shares of its
 * trigrams three digits apart (and of its last), when smaller (digits of numbers are about independent); the term's is
 * the product of its words' (the candidates hold every word: taken as independent, as a person's first and last name
 * are; words that always come together, gmail and com, are then under-estimated, by at most the commoner word's share,
 * which is large for such terms anyway), times the customers. (The rarest word's share alone sent a full name or email
 * of common words, each held by 1% of the customers, to the budgeted walk, its one match pages away.) A trigram not
 * among the most common counts as rare. Undefined without statistics (none made yet).
 *
 * `patterns`: per form, the LIKE pattern the index is asked with when the term goes to it: the words worth their
 * posting lists, in the term's order (`%marisol%tenbrook%`), or undefined for the whole term. The index reads the
 * posting list of every trigram it is asked for, and a word most customers hold beside rare ones (an email's domain)
 * read that word's lists, which grow with the table: ~2,500 pages at 1M customers for a full email at a domain all of
 * them share. So the words are taken rarest first, each only while its lists (its trigrams × its share of the
 * customers ÷ POSTINGS_PER_PAGE) cost fewer pages than the candidates it would save a recheck of (each a row read):
 * the rarest always, a common word beside rare ones never. Here a trigram not among the most common counts at the
 * least common listed share (an upper bound). A row the narrowed pattern answers is rechecked by the whole term.
 * `terms`: the term's forms looked for (composed and decomposed), whose candidates add up.
 */
export async function searchPlan(db: Queryable, terms: string[]): Promise<{ candidates?: number; patterns: (string | undefined)[] }> {
  // The trigram of a run of three letters or digits is pg_trgm's own (show_trgm: a multibyte one is a hash), found as
  // the one its two pairs do not give (theirs are padded with the spaces of a word's ends). `least`: the least common
  // listed share (most_common_elem_freqs holds the elements' shares, then their minimum, maximum and nulls' share).
  const r = await db.query<{ customers: number; stats: string; least: number | null; k: string; n: string; word: string; f: number; listed: boolean }>(
    `WITH st AS MATERIALIZED (
       SELECT s.most_common_elems::text::text[] AS e, s.most_common_elem_freqs AS f FROM pg_stats_ext_exprs s
       WHERE s.statistics_schemaname = current_schema() AND s.statistics_name = 'customers_search_trigrams' AND NOT s.inherited),
     w AS (
       SELECT t.k, m.n, m.w[1] AS word FROM unnest($1::text[]) WITH ORDINALITY t(term, k),
         regexp_matches(customer_search_key(t.term), '[[:alnum:]]{3,}', 'g') WITH ORDINALITY m(w, n))
     SELECT (SELECT c.reltuples FROM pg_class c WHERE c.oid = 'customers'::regclass) AS customers, (SELECT count(*) FROM st) AS stats,
       (SELECT min(st.f[cardinality(st.e) + 1]) FROM st) AS least, w.k, w.n, w.word, g.f, g.listed
     FROM w, generate_series(1, length(w.word) - 2) i,
       LATERAL (SELECT coalesce(max(st.f[p.p]), 0) AS f, bool_and(p.p IS NOT NULL) AS listed FROM st,
          (SELECT unnest(show_trgm(substr(w.word, i, 3))) EXCEPT SELECT unnest(show_trgm(substr(w.word, i, 2)) || show_trgm(substr(w.word, i + 1, 2)))) x(x),
          LATERAL array_position(st.e, x.x) p(p)) g
     ORDER BY w.k, w.n, i`,
    [terms],
    'customer_search_plan',
  );
  const customers = Number(r.rows[0]?.customers ?? -1);
  if (!r.rows.length || r.rows[0].stats === '0' || customers < 0) return { patterns: terms.map(() => undefined) };
  const least = Number(r.rows[0].least ?? 0);
  // Each word's trigrams in order (the rows come by form k, word n, trigram i): shares, and upper bounds of them.
  const byWord = new Map<string, { form: string; word: string; f: number[]; b: number[] }>();
  for (const row of r.rows) {
    const key = `${row.k}/${row.n}`;
    const w = byWord.get(key) ?? byWord.set(key, { form: String(row.k), word: row.word, f: [], b: [] }).get(key)!;
    w.f.push(Number(row.f));
    w.b.push(row.listed ? Number(row.f) : least);
  }
  // Per form, its words in the term's order: the estimated share, and the share's upper bound.
  const forms = new Map<string, { word: string; share: number; bound: number; trigrams: number }[]>();
  for (const { form, word, f, b } of byWord.values()) {
    let share = Math.min(...f);
    let bound = Math.min(...b);
    for (const run of word.matchAll(/\p{Nd}{3,}/gu)) {
      const at = [...word.slice(0, run.index)].length;
      const end = at + [...run[0]].length - 3; // the run's last trigram, taken too when the steps of three miss it
      const steps = [...new Set([...Array.from({ length: Math.floor((end - at) / 3) + 1 }, (_, j) => at + 3 * j), end])];
      share = Math.min(share, steps.reduce((a, i) => a * f[i], 1));
      bound = Math.min(bound, steps.reduce((a, i) => a * b[i], 1));
    }
    (forms.get(form) ?? forms.set(form, []).get(form)!).push({ word, share, bound, trigrams: f.length });
  }
  let candidates = 0;
  const patterns = terms.map((_, i) => {
    const words = forms.get(String(i + 1)) ?? [];
    candidates += words.reduce((a, w) => a * w.share, 1) * customers;
    const kept = new Set<number>();
    let left = 1; // the share of the customers the kept words leave as candidates (an upper bound)
    for (const j of words.map((_, j) => j).sort((a, b) => words[a].bound - words[b].bound)) {
      const { trigrams, bound } = words[j];
      if (kept.size && (trigrams * bound) / POSTINGS_PER_PAGE >= left * (1 - bound)) continue;
      kept.add(j);
      left *= bound;
    }
    return kept.size < words.length ? `%${words.filter((_, j) => kept.has(j)).map((w) => w.word).join('%')}%` : undefined;
  });
  return { candidates, patterns };
}

/**
 * A page of customers and, when a search read its whole budget, where it stopped (the last customer it read: its id,
 * or in a sync its position): the page goes on after it.
 */
export type CustomerPage = (CustomerRow & { sync_at?: string })[] & { scanEnd?: string | SyncAfter };

/**
 * A search page by a term the trigram index would answer most customers for (or none: a term without a trigram): the
 * first SCAN_BUDGET customers after the cursor (its other filters applied), in id order, or in a sync (`sync`) in
 * (updated_at, id) order, and those of them the term matches, up to the page's size (a budgeted walk: walkSql). When the
 * budget is read whole, the page carries `scanEnd`, the last one read: the page goes on from there (a page may hold
 * fewer customers than its limit, none even, with a next cursor). `params`' last is the page's size + 1; `where` and
 * `hit` use the rest.
 */
async function scanPage(db: Queryable, where: string[], hit: string, params: unknown[], sync: boolean): Promise<CustomerPage> {
  const sql = walkSql({
    table: 'customers', alias: 'c', where, order: sync ? 'c.updated_at, c.id' : 'c.id', hit, budget: SCAN_BUDGET, limit: `$${params.length}`,
    columns: `${rowColumns('c')}, m.uuid AS merged_into_uuid, m.external_id AS merged_into_external_id${sync ? `, ${SYNC_AT} AS sync_at` : ''}`,
    joins: 'LEFT JOIN customers m ON m.id = c.merged_into',
  });
  const { page, edge } = walked((await db.query<Walked<CustomerRow & { sync_at?: string }>>(sql, params)).rows);
  const out: CustomerPage = page;
  if (edge) out.scanEnd = sync ? { at: edge.sync_at!, id: String(edge.id) } : String(edge.id);
  return out;
}

/**
 * A page of customers: in id order after `after` (an id), or, with updatedSince, in (updated_at, id) order after
 * `after` (a SyncAfter); each row of the latter carries its sync_at (the position to go on from).
 */
export async function listCustomers(db: Queryable, q: ListQueryT, after: string | SyncAfter | null): Promise<CustomerPage> {
  // A walk (the whole list, by status, a sync since a time, or a search term's pages) serves only rows written before
  // the write horizon (src/db/write-horizon.ts), so it never passes one still uncommitted. A lookup (an externalId, an
  // email) finds the few customers that match as they stand: no walk, and the horizon's statement was a third of the
  // cost of an email lookup (bench/lookups.ts: 1.26 → 0.86 × the floor). A term matches many (`q=ann`), and its pages
  // missed customers created beside the walk (2–6 in a probe, 2026-11-28).
  // With updatedSince it is a sync whatever else it filters by: its client resumes from the latest updatedAt it saw.
  const lookup = (q.externalId !== undefined || q.email !== undefined) && q.updatedSince === undefined;
  const horizon = lookup ? null : await writeHorizon(db, 'customers');
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, v: unknown) => {
    params.push(v);
    where.push(sql.replaceAll('?', `$${params.length}`));
  };
  const sync = q.updatedSince !== undefined;
  if (after !== null && sync !== (typeof after === 'object')) throw new Error('listCustomers: the cursor does not fit the order');
  if (typeof after === 'string') add('c.id > ?', after);
  // 'disabled' is written into the text, so the planner knows from the statistics that few customers are (and
  // reads customers_status_id): as a parameter, the cached generic plan assumed half of them and walked the
  // primary key for a page of disabled ones, the whole table when a handful are. 'active' stays a parameter
  // (the shapes every lookup uses keep their plans).
  if (q.status === 'disabled') where.push(`c.status = 'disabled'`);
  else if (q.status !== 'all') add('c.status = ?', 'active');
  if (q.externalId !== undefined) add('c.external_id = ?', q.externalId);
  // Email selects few customers, which an index finds; the query then takes them by id from the primary key, in
  // order. Written as a plain filter, the planner (which cannot tell how many customers share an email: 0.5% of the
  // table assumed) walked the primary key in id order for a page of matches, reading the whole table for one.
  if (q.email !== undefined) add('c.id = ANY (ARRAY(SELECT e.id FROM customers e WHERE e.email_keys @> ARRAY[?]::text[]))', q.email.toLowerCase());
  // q: the trigram index customers_search_keys (migrations 038, 074, 075) finds the rows whose name, externalId and emails hold the
  // term; the three exact conditions then keep those where one of them does. Planned for the term's value (not
  // prepared: see below), so a rare term reads the index and a common one walks the primary key for a page.
  // The term is lower-cased by the database, as the stored text is (lower() in JavaScript made 'İ' 'i̇' and a final 'Σ'
  // 'ς', where PostgreSQL's are 'i' and 'σ': a name typed as stored was not found), and a final 'ς' folded into 'σ', a
  // dotless 'ı' into 'i' and 'ß' into 'ss' on both sides (customer_search_key, migrations 074 and 075: 'ΝΙΚΌΛΑΟΣ' did not
  // find 'Νικόλαος', 'IŞIK' 'Işık', 'GROSSMANN' 'Großmann'). A term whose composed and
  // decomposed forms differ (é as one code point or two) is looked for in both, as names are stored as sent.
  // Emails are joined by a newline in the exact condition, so a term never matches across two of them.
  // A term with no run of three letters or digits gives the trigram index nothing to look up: it answered every row,
  // each rechecked, the whole table read for a rare one (`q=xq`, `q=%`: 6–13 s at 315,000 customers; a probe,
  // 2026-11-29). Such a term is looked for in at most SCAN_BUDGET customers per page, in id order (scanned, below).
  // A term whose trigrams are each held by many customers (`mail.gm`, `gmail.com`, `ail.co`: an email domain, a common
  // name) made the index answer most of the table, every candidate rechecked for a page (13,500 pages and 1.6 s at
  // 400,000 customers for `mail.gm`, which matches none; a bitmap and a sort of all 160,000 matches of `gmail.com`):
  // the planner's estimate is of the term, not of the candidates. Such a term is looked for as one without a
  // trigram is; a term with a rare trigram, through the index (searchPlan).
  const forms = q.q === undefined ? [] : [...new Set([q.q.normalize('NFC'), q.q.normalize('NFD')])];
  const plan = q.q !== undefined && hasTrigram(q.q) ? await searchPlan(db, forms) : undefined;
  const scanned = q.q !== undefined && (plan === undefined || (plan.candidates ?? 0) > INDEX_CANDIDATES);
  let hit: string | undefined;
  if (q.q !== undefined) {
    const like = (t: string) => '%' + t.replace(/[\\%_]/g, (ch) => '\\' + ch) + '%';
    const exact = `(customer_search_key(coalesce(c.first_name, '') || ' ' || coalesce(c.last_name, '')) LIKE customer_search_key(?)
      OR customer_search_key(c.external_id) LIKE customer_search_key(?) OR customer_search_key(array_to_string(c.email_keys, E'\\n')) LIKE customer_search_key(?))`;
    // Through the index: its condition asks for the term's rarer words only when they are enough (searchPlan), and
    // the exact conditions recheck the whole term.
    const index = (pattern: string | undefined, t: string) =>
      `customer_search_keys(c.first_name, c.last_name, c.external_id, c.email_keys) LIKE customer_search_key(${pattern === undefined ? t : (params.push(pattern), `$${params.length}`)}) AND `;
    const arm = (form: string, k: number) => {
      params.push(like(form));
      const t = `$${params.length}`;
      return `(${scanned ? '' : index(plan?.patterns[k], t)}${exact.replaceAll('?', t)})`;
    };
    const sql = `(${forms.map(arm).join(' OR ')})`;
    if (scanned) hit = sql;
    else where.push(sql);
  }
  // updatedSince (an incremental sync): served in (updated_at, id) order from the customers_updated index, so a
  // page reads about a page whether 10 or 5 million customers changed (in id order, once thousands had changed,
  // the planner walked the primary key and filtered: a page read limit × customers / changed rows).
  if (sync) {
    add('c.updated_at >= ?', q.updatedSince);
    if (after !== null) {
      const a = after as SyncAfter;
      params.push(a.at, a.id);
      where.push(`(c.updated_at, c.id) > ($${params.length - 1}::timestamptz, $${params.length}::bigint)`);
    }
  }
  if (horizon !== null) add(sync ? 'c.updated_at < ?::timestamptz' : 'c.created_at < ?::timestamptz', horizon);
  params.push((q.limit ?? 50) + 1);
  if (hit !== undefined) return scanPage(db, where, hit, params, sync);
  // The text depends only on which filters are present (a handful of shapes), each prepared under its own name;
  // but a search: a generic plan cannot tell a rare term from a common one (it read the trigram index for every term,
  // all of the table's rows for a term most customers hold, to sort them for one page).
  const select = sync ? SELECT.replace(' FROM customers c', `, ${SYNC_AT} AS sync_at FROM customers c`) : SELECT;
  const order = sync ? 'c.updated_at, c.id' : 'c.id';
  const sql = `${select} ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY ${order} LIMIT $${params.length}`;
  const r = await db.query<CustomerRow>(sql, params, q.q === undefined ? statementName('customer_list', sql) : undefined);
  return r.rows;
}
