// SQL of possible duplicates: the dirty queue, normalised profiles, blocking keys (candidates meet on a
// shared key by one btree join) and the pairs table the routes read. Every statement is set-based.
import type { Queryable } from '../../db/db.ts';
import { looksLikeUuid, type CustomerRow } from '../customers/store.ts';
import { rowColumns } from '../customers/wire.ts';
import type { CustomerSignals, Profile } from './normalize.ts';
import { NAME_PREFILTER, type Reason } from './score.ts';

/**
 * Takes the refresher's lock for this transaction, and plans its statements for what they are: index lookups
 * for one batch. During a large build the tables' statistics lag far behind (empty when last analyzed), and
 * the planner then estimated the candidate search at millions of rows: hash joins over whole tables and
 * about a second of JIT compilation per batch for 1,500 rows found by 3,000 index probes (EXPLAINed at 20k).
 * Its commit does not wait for the WAL flush (synchronous_commit off): a crash can lose only whole refresher
 * transactions, whose customers then are still on the queue and are refreshed again.
 */
export async function lockRefresher(tx: Queryable, key: number): Promise<void> {
  await tx.query(
    `SELECT set_config('jit', 'off', true), set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
       set_config('enable_seqscan', 'off', true), set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock($1)`,
    [key],
  );
}

/**
 * Takes up to `limit` customers off the dirty queue (in this transaction), each once (the queue may hold one more than
 * once: migration 087). A queue row locked by a write in progress (the update trigger locks it) is left for a later
 * batch, read once that write has committed. Only the rows locked here are deleted (by ctid): a row of the same
 * customer that a write holds or inserted meanwhile stays, so the customer comes back after that write; and nothing
 * here waits for a writer.
 */
export async function claimDirty(tx: Queryable, limit: number): Promise<string[]> {
  // The batch taken once (an InitPlan), then deleted by ctid. As `IN (subquery)`, a queue never analysed
  // (PostgreSQL without autovacuum, after a big import) was planned under lockRefresher's settings as a nested loop
  // running the locking LIMIT once per queued row: past the statement deadline every time, holding the queue rows
  // that writers wait for (a probe, 2026-11-29: PATCHes waited 40–55 s).
  const r = await tx.query<{ customer_id: string }>(
    `DELETE FROM duplicate_dirty WHERE ctid = ANY (ARRAY(SELECT ctid FROM duplicate_dirty ORDER BY customer_id LIMIT $1 FOR UPDATE SKIP LOCKED))
     RETURNING customer_id`,
    [limit],
  );
  return [...new Set(r.rows.map((x) => String(x.customer_id)))];
}

/**
 * How many customers wait on the queue, counted up to PENDING_COUNTED (a read stays bounded whatever the backlog:
 * the queue's index read up to there; a customer queued twice, which a write during the refresher's batch leaves, once).
 */
export const PENDING_COUNTED = 10_000;
const PENDING = `SELECT count(DISTINCT customer_id)::int AS pending FROM (SELECT customer_id FROM duplicate_dirty LIMIT ${PENDING_COUNTED}) q`;

export async function pendingCustomers(db: Queryable): Promise<number> {
  return (await db.query<{ pending: number }>(PENDING, [], 'duplicates_pending')).rows[0].pending;
}

/** Whether customers wait on the queue, and whether an import is being applied (a worker holds its lease). */
const QUEUE_STATE = `SELECT EXISTS (SELECT 1 FROM duplicate_dirty) AS dirty,
  EXISTS (SELECT 1 FROM imports WHERE status = 'running' AND locked_until > clock_timestamp()) AS importing`;

export interface QueueState {
  dirty: boolean;
  importing: boolean;
}

export async function queueState(db: Queryable): Promise<QueueState> {
  return (await db.query<QueueState>(QUEUE_STATE, [], 'duplicates_queue_state')).rows[0];
}

/** The fields scoring reads, for the active ones among these customers. */
export async function activeSignals(tx: Queryable, ids: string[]): Promise<CustomerSignals[]> {
  const r = await tx.query<CustomerSignals>(
    `SELECT id, first_name, last_name, emails, phones, addresses FROM customers WHERE id = ANY($1::bigint[]) AND status = 'active'`,
    [ids],
  );
  return r.rows;
}

export interface StoredState {
  /** The stored profiles of these customers (name, emails, phones, postal codes, cities). */
  profiles: Omit<Profile, 'streets'>[];
  /** Their stored blocking and word keys, each with the name it was written with. */
  keys: StoredKey[];
}

/** A row of duplicate_keys: a key of a customer, with the customer's folded name (migration 063). */
export interface StoredKey {
  key: string;
  customerId: string;
  name: string;
}

/** What the refresher stored for these customers last time: their profiles and their keys. */
export async function storedState(tx: Queryable, ids: string[]): Promise<StoredState> {
  const profiles = await tx.query<{ customerId: string; name: string; emails: string[]; phones: string[]; postalCodes: string[]; cities: string[] }>(
    `SELECT customer_id AS "customerId", name, emails, phones, postal_codes AS "postalCodes", cities FROM duplicate_profiles WHERE customer_id = ANY($1::bigint[])`,
    [ids],
  );
  const keys = await tx.query<StoredKey>(
    `SELECT key, customer_id AS "customerId", name FROM duplicate_keys WHERE customer_id = ANY($1::bigint[])`,
    [ids],
  );
  return { profiles: profiles.rows, keys: keys.rows };
}

/**
 * Drops the pairs of these customers and writes what changed of their profiles and keys: a profile or key
 * stored as it is computed now is left alone (a customer re-queued because its name changed step keeps them),
 * so neither the indexes nor the counts (triggers) churn for nothing.
 */
export async function writeProfiles(tx: Queryable, ids: string[], change: { dropProfiles: string[]; addProfiles: Profile[]; dropKeys: StoredKey[]; addKeys: StoredKey[] }): Promise<void> {
  await tx.query('DELETE FROM duplicate_pairs WHERE a = ANY($1::bigint[]) OR b = ANY($1::bigint[])', [ids]);
  if (change.dropKeys.length > 0) {
    await tx.query(
      'DELETE FROM duplicate_keys WHERE (key, customer_id) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))',
      [change.dropKeys.map((k) => k.key), change.dropKeys.map((k) => k.customerId)],
    );
  }
  if (change.dropProfiles.length > 0) await tx.query('DELETE FROM duplicate_profiles WHERE customer_id = ANY($1::bigint[])', [change.dropProfiles]);
  if (change.addProfiles.length > 0) {
    await tx.query(
      `INSERT INTO duplicate_profiles (customer_id, name, emails, phones, postal_codes, cities)
       SELECT x.id, x.name, ARRAY(SELECT jsonb_array_elements_text(x.emails)), ARRAY(SELECT jsonb_array_elements_text(x.phones)),
         ARRAY(SELECT jsonb_array_elements_text(x.postal)), ARRAY(SELECT jsonb_array_elements_text(x.cities))
       FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, name text, emails jsonb, phones jsonb, postal jsonb, cities jsonb)`,
      [JSON.stringify(change.addProfiles.map((p) => ({ id: p.customerId, name: p.name, emails: p.emails, phones: p.phones, postal: p.postalCodes, cities: p.cities })))],
    );
  }
  if (change.addKeys.length > 0) {
    await tx.query(
      'INSERT INTO duplicate_keys (key, customer_id, name) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])',
      [change.addKeys.map((k) => k.key), change.addKeys.map((k) => k.customerId), change.addKeys.map((k) => k.name)],
    );
  }
}

/** How many customers bear each of these counting keys ('f:' and a name, 'w:' and a word; kept by triggers): one index probe each. */
export async function counted(tx: Queryable, keys: string[]): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const r = await tx.query<{ key: string; bearers: number }>('SELECT key, bearers FROM duplicate_key_counts WHERE key = ANY($1::text[])', [keys]);
  return new Map(r.rows.map((x) => [x.key, x.bearers]));
}

/**
 * How many customers bear each of these blocking keys, counted on duplicate_keys' index up to `upTo` of each (a
 * key's count is exact below it, and `upTo` when at least that many bear it): a cap needs no more, and the probe
 * reads at most that many entries, on the leaf the key's insert touches anyway (migration 061).
 */
export async function bearersUpTo(tx: Queryable, keys: string[], upTo: number[]): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const r = await tx.query<{ key: string; bearers: number }>(
    `SELECT k.key, (SELECT count(*) FROM (SELECT 1 FROM duplicate_keys d WHERE d.key = k.key LIMIT k.up_to) b)::int AS bearers
     FROM unnest($1::text[], $2::int[]) AS k(key, up_to)`,
    [keys, upTo],
  );
  return new Map(r.rows.map((x) => [x.key, x.bearers]));
}

/**
 * Puts back on the queue the bearers of these names, except the given customers (being refreshed now). One queued
 * already (committed) is left as it is, not inserted again. Nothing waits: the queue has no unique key (migration 087;
 * with one, this insert waited for a write's uncommitted queue row while the write waited for a row this batch had
 * claimed, a deadlock bulk upserts met every few seconds).
 */
export async function requeueBearers(tx: Queryable, names: string[], except: string[]): Promise<number> {
  const r = await tx.query(
    `INSERT INTO duplicate_dirty (customer_id)
     SELECT customer_id FROM duplicate_profiles p WHERE name = ANY($1::text[]) AND customer_id <> ALL($2::bigint[])
       AND NOT EXISTS (SELECT 1 FROM duplicate_dirty q WHERE q.customer_id = p.customer_id)`,
    [names, except],
  );
  return r.rowCount ?? 0;
}

/** Puts back on the queue the bearers of these keys, except the given customers (being refreshed now), as requeueBearers. */
export async function requeueKeyBearers(tx: Queryable, keys: string[], except: string[]): Promise<number> {
  const r = await tx.query(
    `INSERT INTO duplicate_dirty (customer_id)
     SELECT customer_id FROM duplicate_keys k WHERE key = ANY($1::text[]) AND customer_id <> ALL($2::bigint[])
       AND NOT EXISTS (SELECT 1 FROM duplicate_dirty q WHERE q.customer_id = k.customer_id)`,
    [keys, except],
  );
  return r.rowCount ?? 0;
}

/**
 * SQL of the intersection (sorted) of a feature's arrays of the pair f.x, f.y (f.<col>_x, f.<col>_y), less the
 * values of `except` (an array expression) when given; computed only where the arrays overlap at all: most
 * candidates share no email, no phone.
 */
const inter = (col: string, except?: string) =>
  `CASE WHEN f.${col}_x && f.${col}_y THEN ARRAY(SELECT unnest(f.${col}_x) INTERSECT SELECT unnest(f.${col}_y)${except ? ` EXCEPT SELECT unnest(${except}::text[])` : ''} ORDER BY 1) ELSE '{}' END`;

/** SQL of the number of words of a folded name. */
const wordCount = (name: string) => `array_length(string_to_array(${name}, ' '), 1)`;

export interface CandidateRow {
  x: string;
  y: string;
  emails: string[];
  phones: string[];
  sim: number;
  name_x: string;
  name_y: string;
  postal: string[];
  cities: string[];
}

/**
 * Every customer sharing a blocking key with one of these (given as the batch's keys), with the features the
 * score needs, for the pairs that can reach STORED_MIN only (see NAME_PREFILTER). `common`: the emails and
 * phones too many customers share (COMMON_CONTACT): no blocking key and no match. `hopeless`: names so common
 * that two bearers of one of them reach STORED_MIN only with an email or a phone in common: such pairs without
 * one are left out before their features are computed (k bearers of one name at one place are k² candidates).
 */
export async function candidates(tx: Queryable, keys: StoredKey[], common: { emails: string[]; phones: string[] } = { emails: [], phones: [] }, hopeless: string[] = []): Promise<CandidateRow[]> {
  // c: the candidates with their names, from the keys' primary key alone (it carries the bearer's name, migration
  // 063), and whether one of the keys they share is an email or a phone (a contact past its cap is no key here,
  // and no match). n: those kept because a contact is shared, the names are similar enough, or they may be one
  // typo apart (as many words, all shared but one, and that one the same first letter, 4+ letters, lengths at most
  // one apart: what typoWords checks but the edit itself). f: the whole profiles of those only. Before 061 every
  // candidate's profile was read whole, 53 per customer at 5M (60% of them kept by the looser typo shape of
  // before, lengths alone); before 063 its name was probed in the profiles' primary key: random reads that grew
  // with the base.
  const r = await tx.query<CandidateRow>(
    `WITH c AS MATERIALIZED (
       SELECT k.x, min(k.name) AS name_x, o.customer_id AS y, min(o.name) AS name_y, bool_or(k.key LIKE 'e:%' OR k.key LIKE 'p:%') AS contact
       FROM unnest($1::text[], $2::bigint[], $7::text[]) AS k(key, x, name) JOIN duplicate_keys o ON o.key = k.key AND o.customer_id <> k.x
       GROUP BY k.x, o.customer_id
     ), n AS MATERIALIZED (
       SELECT c.x, c.y, s.sim::float8 AS sim
       FROM c CROSS JOIN LATERAL (SELECT similarity(c.name_x, c.name_y) AS sim) s
       WHERE c.contact OR s.sim >= $3
         OR (${wordCount('c.name_x')} = ${wordCount('c.name_y')} AND abs(length(c.name_x) - length(c.name_y)) <= 1
           AND EXISTS (SELECT 1 FROM (SELECT unnest(string_to_array(c.name_x, ' ')) EXCEPT ALL SELECT unnest(string_to_array(c.name_y, ' '))) l(w),
               (SELECT unnest(string_to_array(c.name_y, ' ')) EXCEPT ALL SELECT unnest(string_to_array(c.name_x, ' '))) r(w)
             WHERE left(l.w, 1) = left(r.w, 1) AND least(length(l.w), length(r.w)) >= 4 AND abs(length(l.w) - length(r.w)) <= 1 HAVING count(*) = 1))
     ), f AS MATERIALIZED (
       SELECT n.x, n.y, p.name AS name_x, q.name AS name_y, n.sim,
         p.emails AS emails_x, q.emails AS emails_y, p.phones AS phones_x, q.phones AS phones_y,
         p.postal_codes AS postal_x, q.postal_codes AS postal_y, p.cities AS cities_x, q.cities AS cities_y
       FROM n JOIN duplicate_profiles p ON p.customer_id = n.x JOIN duplicate_profiles q ON q.customer_id = n.y
       WHERE NOT (p.name = q.name AND p.name = ANY($6::text[])
         AND NOT (p.emails && q.emails AND ARRAY(SELECT unnest(p.emails) INTERSECT SELECT unnest(q.emails) EXCEPT SELECT unnest($4::text[])) <> '{}')
         AND NOT (p.phones && q.phones AND ARRAY(SELECT unnest(p.phones) INTERSECT SELECT unnest(q.phones) EXCEPT SELECT unnest($5::text[])) <> '{}'))
     )
     SELECT f.x, f.y, ${inter('emails', '$4')} AS emails, ${inter('phones', '$5')} AS phones, f.sim, f.name_x, f.name_y,
       ${inter('postal', "'{}'")} AS postal, ${inter('cities', "'{}'")} AS cities
     FROM f`,
    [keys.map((k) => k.key), keys.map((k) => k.customerId), NAME_PREFILTER, common.emails, common.phones, hopeless, keys.map((k) => k.name)],
  );
  return r.rows;
}

/**
 * The stored pairs of two bearers of one of these names (except pairs of the given customers, being refreshed
 * now), with the features the score needs: a name that became more common lowers their scores, and only theirs
 * (the name's weight counts only between equal names). `common`: emails and phones past their cap, no match.
 * Reads the name's pairs by their same_name (migration 062), however many customers bear the name (it walked
 * every bearer before: thousands of profiles for the few pairs among them).
 */
export async function pairsOfNames(tx: Queryable, names: string[], except: string[], common: { emails: string[]; phones: string[] }): Promise<CandidateRow[]> {
  const r = await tx.query<CandidateRow>(
    `WITH f AS MATERIALIZED (
       SELECT p.a AS x, p.b AS y, pa.name AS name_x, pb.name AS name_y, similarity(pa.name, pb.name)::float8 AS sim,
         pa.emails AS emails_x, pb.emails AS emails_y, pa.phones AS phones_x, pb.phones AS phones_y,
         pa.postal_codes AS postal_x, pb.postal_codes AS postal_y, pa.cities AS cities_x, pb.cities AS cities_y
       FROM duplicate_pairs p JOIN duplicate_profiles pa ON pa.customer_id = p.a
       JOIN duplicate_profiles pb ON pb.customer_id = p.b AND pb.name = pa.name
       WHERE p.same_name = ANY($1::text[]) AND p.a <> ALL($2::bigint[]) AND p.b <> ALL($2::bigint[])
     )
     SELECT f.x, f.y, ${inter('emails', '$3')} AS emails, ${inter('phones', '$4')} AS phones, f.sim, f.name_x, f.name_y,
       ${inter('postal', "'{}'")} AS postal, ${inter('cities', "'{}'")} AS cities
     FROM f`,
    [names, except, common.emails, common.phones],
  );
  return r.rows;
}

/**
 * The stored pairs of a bearer of one of these words ('w:' keys, walked by index) whose names may be one typo
 * apart (as many words, lengths at most one apart, not equal; the refresher checks the typo), except pairs of
 * the given customers (being refreshed now), with the features the score needs: a word that became more
 * common lowers the scores of typos through it, and only theirs (the caller drops contacts past their cap).
 */
export async function typoPairsOfWords(tx: Queryable, words: string[], except: string[]): Promise<CandidateRow[]> {
  const r = await tx.query<CandidateRow>(
    `WITH w AS MATERIALIZED (
       SELECT DISTINCT customer_id FROM duplicate_keys WHERE key = ANY($1::text[]) AND customer_id <> ALL($2::bigint[])
     ), p AS MATERIALIZED (
       SELECT d.a, d.b FROM w JOIN duplicate_pairs d ON d.a = w.customer_id
       UNION
       SELECT d.a, d.b FROM w JOIN duplicate_pairs d ON d.b = w.customer_id
     ), f AS MATERIALIZED (
       SELECT p.a AS x, p.b AS y, pa.name AS name_x, pb.name AS name_y, similarity(pa.name, pb.name)::float8 AS sim,
         pa.emails AS emails_x, pb.emails AS emails_y, pa.phones AS phones_x, pb.phones AS phones_y,
         pa.postal_codes AS postal_x, pb.postal_codes AS postal_y, pa.cities AS cities_x, pb.cities AS cities_y
       FROM p JOIN duplicate_profiles pa ON pa.customer_id = p.a JOIN duplicate_profiles pb ON pb.customer_id = p.b
       WHERE p.a <> ALL($2::bigint[]) AND p.b <> ALL($2::bigint[]) AND pa.name <> pb.name
         AND ${wordCount('pa.name')} = ${wordCount('pb.name')} AND abs(length(pa.name) - length(pb.name)) <= 1
     )
     SELECT f.x, f.y, ${inter('emails')} AS emails, ${inter('phones')} AS phones, f.sim, f.name_x, f.name_y,
       ${inter('postal')} AS postal, ${inter('cities')} AS cities
     FROM f`,
    [words, except],
  );
  return r.rows;
}

export async function deletePairs(tx: Queryable, pairs: { a: string; b: string }[]): Promise<void> {
  if (pairs.length === 0) return;
  await tx.query('DELETE FROM duplicate_pairs WHERE (a, b) IN (SELECT * FROM unnest($1::bigint[], $2::bigint[]))', [pairs.map((p) => p.a), pairs.map((p) => p.b)]);
}

export interface NewPair {
  a: string;
  b: string;
  score: number;
  reasons: Reason[];
  /** The name both bear, when they bear the same (its count weighs the pair: pairsOfNames finds it by this). */
  sameName: string | null;
}

export async function insertPairs(tx: Queryable, pairs: NewPair[]): Promise<void> {
  if (pairs.length === 0) return;
  await tx.query(
    `INSERT INTO duplicate_pairs (a, b, score, reasons, same_name)
     SELECT a, b, s, r::jsonb, n FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], $5::text[]) AS t(a, b, s, r, n)
     ON CONFLICT (a, b) DO UPDATE SET score = excluded.score, reasons = excluded.reasons, same_name = excluded.same_name`,
    [pairs.map((p) => p.a), pairs.map((p) => p.b), pairs.map((p) => Math.round(p.score * 1000)), pairs.map((p) => JSON.stringify(p.reasons)), pairs.map((p) => p.sameName)],
  );
}

const CUSTOMER_COLS = `${rowColumns('c')}, NULL::uuid AS merged_into_uuid, NULL::text AS merged_into_external_id`;

export interface DuplicateRow extends CustomerRow {
  pair_score: number;
  reasons: Reason[];
}

/**
 * One customer's possible duplicates (the active customers paired with it, best first; none when it is not
 * active) and how many customers wait on the refresher's queue, in one statement: the customer by uuid (when
 * the id looks like one), else by externalId. Undefined when there is no such customer.
 */
export async function duplicatesOf(db: Queryable, id: string, limit: number): Promise<{ pending: number; rows: DuplicateRow[] } | undefined> {
  const r = await db.query<DuplicateRow & { pending: number; pair_score: number | null }>(
    `WITH me AS (
       SELECT id, status FROM (
         SELECT id, status, 0 AS rank FROM customers WHERE uuid = $1::uuid
         UNION ALL
         SELECT id, status, 1 FROM customers WHERE external_id = $2
       ) m ORDER BY rank LIMIT 1
     ), queue AS (${PENDING})
     SELECT queue.pending, d.* FROM me CROSS JOIN queue LEFT JOIN LATERAL (
       SELECT ${CUSTOMER_COLS}, d.score AS pair_score, d.reasons FROM (
         SELECT b AS other, score, reasons FROM duplicate_pairs WHERE a = me.id
         UNION ALL
         SELECT a, score, reasons FROM duplicate_pairs WHERE b = me.id
       ) d JOIN customers c ON c.id = d.other AND c.status = 'active'
       WHERE me.status = 'active'
       ORDER BY d.score DESC, d.other LIMIT $3
     ) d ON true`,
    [looksLikeUuid(id) ? id : null, id, limit],
    'duplicates_of',
  );
  if (r.rows.length === 0) return undefined;
  return { pending: r.rows[0].pending, rows: r.rows.filter((x) => x.pair_score !== null) };
}

export interface PairRow {
  a: string;
  b: string;
  score: number;
  reasons: Reason[];
}

/** Pairs scoring at least minScore (thousandths), best first, after the cursor (score, a, b). */
export async function listPairs(db: Queryable, minScore: number, after: [number, string, string] | null, limit: number): Promise<PairRow[]> {
  const r = await db.query<PairRow>(
    `SELECT p.a, p.b, p.score, p.reasons FROM duplicate_pairs p
     JOIN customers ca ON ca.id = p.a AND ca.status = 'active' JOIN customers cb ON cb.id = p.b AND cb.status = 'active'
     WHERE p.score >= $1 AND ($2::int IS NULL OR (p.score, $3::bigint, $4::bigint) < ($2::int, p.a, p.b))
     ORDER BY p.score DESC, p.a, p.b LIMIT $5`,
    [minScore, after?.[0] ?? null, after?.[1] ?? null, after?.[2] ?? null, limit + 1],
  );
  return r.rows;
}

/**
 * The active customers among `ids`, for shaping pairs: read after the pairs, in a statement of its own, so a customer
 * merged away or deactivated in between is left out here (its pair with it), never shown disabled with no mergedInto.
 */
export async function activeCustomersById(db: Queryable, ids: string[]): Promise<Map<string, CustomerRow>> {
  const r = await db.query<CustomerRow>(`SELECT ${CUSTOMER_COLS} FROM customers c WHERE c.id = ANY($1::bigint[]) AND c.status = 'active'`, [ids]);
  return new Map(r.rows.map((c) => [c.id, c]));
}
