// Keeps the possible-duplicate pairs current: takes changed customers off the dirty queue (filled by
// triggers on customers, whoever wrote them), recomputes their normalised profiles and their pairs.
// Work is proportional to what changed, never to the size of the base: a blocking key borne by more than its
// cap brings nobody together (keyCap), and every count is one index probe. One refresher at a time (an
// advisory lock), so two changed customers never score each other against stale profiles. A name that
// becomes more or less common (a step of commonNameFloor) puts its other bearers back on the queue, so every
// pair is scored with the name's current count, whatever the order customers arrived in; so does a word of a name
// changing step past SLIP_COMMON for the pairs one typo apart through it. While an import
// is being applied the refresher defers (it would compete with the import for the same tables and the
// same cores): what the import changes stays queued and is folded in once the import is done.
import { withRetry, type Db, type Queryable } from '../../db/db.ts';
import { keysOf, profileOf, wordKeysOf } from './normalize.ts';
import { COMMON_CONTACT, NAME_KEY_CAP, STORED_MIN, commonNameFloor, scorePair, slipFloor, typoWords, type PairFeatures } from './score.ts';
import * as store from './store.ts';
import { startLoop } from '../../loop.ts';

const LOCK_KEY = 740_213_517; // pg_advisory_xact_lock key of the refresher
export const BATCH = 500;
/** A drained backlog this large (more than requests drain: they stop at a few batches) is settled at once. */
const SETTLE_AFTER = 10 * BATCH;

/** Processes one batch; returns how many customers it took off the queue and how many it put back. */
export async function refreshBatch(db: Db, region: string, batch = BATCH): Promise<{ taken: number; requeued: number }> {
  // Retried when chosen as a deadlock's victim (customer writes beside it: a probe's 4 writers made 20 in a few
  // minutes, each logged as an ERROR with its stack, the batch left for the next second).
  return withRetry(db, async (tx) => {
    await store.lockRefresher(tx, LOCK_KEY);
    const ids = await store.claimDirty(tx, batch);
    if (ids.length === 0) return { taken: 0, requeued: 0 };
    const profiles = (await store.activeSignals(tx, ids)).map((c) => profileOf(c, region));
    // Blocking keys and the counting keys of the name's words ('w:', no blocking key: see wordKeysOf).
    // Each carries the customer's name (the candidate search reads it from the key: migration 063).
    const keys = profiles.flatMap((p) => [...keysOf(p), ...wordKeysOf(p.name)].map((key) => ({ key, customerId: p.customerId, name: p.name })));
    // What changed since the last refresh: a customer re-queued because its name changed step keeps its profile and
    // keys; one whose name changed has every key written again (an email's key with the new name).
    const stored = await store.storedState(tx, ids);
    const pairKey = (k: store.StoredKey) => `${k.customerId}\u0000${k.key}\u0000${k.name}`;
    const storedKeys = new Set(stored.keys.map(pairKey));
    const newKeys = new Set(keys.map(pairKey));
    const byId = new Map(profiles.map((p) => [p.customerId, p]));
    const sameProfile = new Set(stored.profiles.filter((o) => {
      const p = byId.get(o.customerId);
      return p !== undefined && JSON.stringify([o.name, o.emails, o.phones, o.postalCodes, o.cities]) === JSON.stringify([p.name, p.emails, p.phones, p.postalCodes, p.cities]);
    }).map((o) => o.customerId));
    // How many bear each key and each name now and once the batch is refreshed, one index probe each: names and
    // words from their counts (kept by triggers), blocking keys on their own index up to what their cap needs (its
    // cap + 1, + as many as this batch takes away, so that "past the cap" before and after is exact). Counted once
    // per name: counted per candidate row, a name borne by k customers (k walk-in "Guest Customer"s of one shop)
    // cost k² candidates × k, 72 s for one read at k = 1,000.
    const delta = new Map<string, number>();
    const add = (key: string, d: number) => delta.set(key, (delta.get(key) ?? 0) + d);
    for (const k of keys) add(k.key, 1);
    for (const p of profiles) add(`f:${p.name}`, 1);
    const removed = new Map<string, number>();
    for (const k of stored.keys) {
      add(k.key, -1);
      removed.set(k.key, (removed.get(k.key) ?? 0) + 1);
    }
    for (const o of stored.profiles) add(`f:${o.name}`, -1);
    const capKeys = [...delta.keys()].filter(blocking);
    const now = new Map([
      ...(await store.counted(tx, [...delta.keys()].filter((k) => !blocking(k)))),
      ...(await store.bearersUpTo(tx, capKeys, capKeys.map((k) => keyCap(k) + 1 + (removed.get(k) ?? 0)))),
    ]);
    const counts = [...delta].map(([key, d]) => ({ key, before: now.get(key) ?? 0, after: (now.get(key) ?? 0) + d }));
    await store.writeProfiles(tx, ids, {
      dropProfiles: stored.profiles.filter((o) => !sameProfile.has(o.customerId)).map((o) => o.customerId),
      addProfiles: profiles.filter((p) => !sameProfile.has(p.customerId)),
      dropKeys: stored.keys.filter((k) => !newKeys.has(pairKey(k))),
      addKeys: keys.filter((k) => !storedKeys.has(pairKey(k))),
    });
    const capped = new Set(counts.filter((c) => blocking(c.key) && c.after > keyCap(c.key)).map((c) => c.key));
    const requeued = await requeueFlipped(tx, ids, counts);
    await rescoreCommoner(tx, ids, counts);
    const nameCount = new Map(counts.filter((c) => c.key.startsWith('f:')).map((c) => [c.key.slice(2), c.after]));
    // Emails and phones past their cap are placeholders: no match either. Names past theirs still count in the score.
    const common = { emails: [...capped].filter((k) => k.startsWith('e:')).map((k) => k.slice(2)), phones: [...capped].filter((k) => k.startsWith('p:')).map((k) => k.slice(2)) };
    // Names whose bearers pair only with a contact in common (the best place weighed at the name's rarity stays below STORED_MIN).
    const lone = { emails: [], phones: [], nameSimilarity: 1, postalCodes: ['-'], cities: [] };
    const hopeless = [...nameCount].filter(([name, n]) => name === '' || scorePair({ ...lone, names: [name, name], nameCount: n }).score < STORED_MIN).map(([name]) => name);
    const found = new Map<string, store.CandidateRow>();
    for (const row of await store.candidates(tx, keys.filter((k) => blocking(k.key) && !capped.has(k.key)), common, hopeless)) {
      const [a, b] = BigInt(row.x) < BigInt(row.y) ? [row.x, row.y] : [row.y, row.x];
      if (!found.has(`${a}/${b}`)) found.set(`${a}/${b}`, { ...row, x: a, y: b });
    }
    const pairs = (await scoreRows(tx, [...found.values()], new Map(counts.map((c) => [c.key, c.after])))).filter((p) => p.score >= STORED_MIN);
    await store.insertPairs(tx, pairs);
    return { taken: ids.length, requeued };
  }, 3);
}

/**
 * The most customers a blocking key brings together: an email or phone borne by more is a placeholder
 * (COMMON_CONTACT); a word of the name with a city, postal code or street borne by more is no signal alone
 * (NAME_KEY_CAP). Past its cap a key brings nobody together, so a customer's candidates are bounded by
 * its keys × their caps, whatever the size of the base.
 */
export function keyCap(key: string): number {
  return key.startsWith('e:') || key.startsWith('p:') ? COMMON_CONTACT : NAME_KEY_CAP;
}

/** Whether a key brings customers together (an email, a phone, a word of the name with a place), not only counts ('f:', 'w:'). */
function blocking(key: string): boolean {
  return !key.startsWith('f:') && !key.startsWith('w:');
}

/**
 * Re-queues the other bearers of each key this batch took past its cap or back under it (at most cap + 1 of
 * them), so their pairs through it go or come back, of each name that this batch made rarer by a
 * commonNameFloor step, and of each word of a name that it made rarer by a slipFloor step (pairs may come
 * back: a typo through a rarer spelling weighs more). Either way the pairs do not depend on the order customers arrived in.
 */
async function requeueFlipped(tx: Queryable, ids: string[], counts: Count[]): Promise<number> {
  const keys = counts.filter((c) => blocking(c.key) && c.before > keyCap(c.key) !== c.after > keyCap(c.key)).map((c) => c.key);
  const words = counts.filter((c) => c.key.startsWith('w:') && slipFloor(c.after) < slipFloor(c.before)).map((c) => c.key);
  const names = counts.filter((c) => c.key.startsWith('f:') && commonNameFloor(c.after) < commonNameFloor(c.before)).map((c) => c.key.slice(2));
  return (keys.length + words.length === 0 ? 0 : await store.requeueKeyBearers(tx, [...keys, ...words], ids)) + (names.length === 0 ? 0 : await store.requeueBearers(tx, names, ids));
}

/**
 * Re-scores, in place, the stored pairs whose score this batch lowered: of two bearers of each name it made
 * more common by a commonNameFloor step, and of names one typo apart through a word it made more common by a
 * slipFloor step. Their scores can only fall (some below STORED_MIN: dropped), and no other pair changes.
 * Until 2026-11-25 every bearer of such a name was re-queued and refreshed whole instead: an import of
 * 100,000 customers into 500,000 refreshed 202,714 (a name grows a step with every 41% more bearers).
 */
async function rescoreCommoner(tx: Queryable, ids: string[], counts: Count[]): Promise<void> {
  const names = counts.filter((c) => c.key.startsWith('f:') && commonNameFloor(c.after) > commonNameFloor(c.before)).map((c) => c.key.slice(2));
  const words = counts.filter((c) => c.key.startsWith('w:') && slipFloor(c.after) > slipFloor(c.before)).map((c) => c.key);
  if (names.length + words.length === 0) return;
  const found = new Map<string, store.CandidateRow>();
  const rows = [...(names.length === 0 ? [] : await store.pairsOfNames(tx, names, ids, { emails: [], phones: [] })), ...(words.length === 0 ? [] : await store.typoPairsOfWords(tx, words, ids))];
  for (const row of rows) found.set(`${row.x}/${row.y}`, row);
  if (found.size === 0) return;
  // Shared emails and phones past their cap are no match.
  const contacts = [...new Set([...found.values()].flatMap((r) => [...r.emails.map((e) => `e:${e}`), ...r.phones.map((p) => `p:${p}`)]))];
  const now = await store.bearersUpTo(tx, contacts, contacts.map(() => COMMON_CONTACT + 1));
  const open = (key: string) => (now.get(key) ?? 0) <= COMMON_CONTACT;
  const scored = await scoreRows(tx, [...found.values()].map((r) => ({ ...r, emails: r.emails.filter((e) => open(`e:${e}`)), phones: r.phones.filter((p) => open(`p:${p}`)) })), new Map(counts.map((c) => [c.key, c.after])));
  await store.insertPairs(tx, scored.filter((p) => p.score >= STORED_MIN));
  await store.deletePairs(tx, scored.filter((p) => p.score < STORED_MIN));
}

/**
 * Scores pairs with the counts their score depends on, taken now (`known`: this batch's, already probed): the
 * name's when both names are equal (commonNameFloor), the two differing words' when the names are one typo
 * apart (the rarer one's, slipFloor). The others are probed at once, one index probe each.
 */
async function scoreRows(tx: Queryable, rows: store.CandidateRow[], known: Map<string, number>): Promise<store.NewPair[]> {
  const typos = rows.map((r) => (r.name_x === r.name_y ? null : typoWords(r.name_x, r.name_y)));
  const needed = [...new Set(rows.flatMap((r, i) => (r.name_x === r.name_y ? [`f:${r.name_x}`] : (typos[i] ?? []).map((w) => `w:${w}`))))].filter((k) => !known.has(k));
  const counts = needed.length === 0 ? known : new Map([...known, ...(await store.counted(tx, needed))]);
  return rows.map((row, i) => {
    const typo = typos[i];
    const f: PairFeatures = {
      names: [row.name_x, row.name_y], emails: row.emails, phones: row.phones, nameSimilarity: Number(row.sim), postalCodes: row.postal, cities: row.cities,
      nameCount: row.name_x === row.name_y ? counts.get(`f:${row.name_x}`) : undefined,
      typoCount: typo ? Math.min(counts.get(`w:${typo[0]}`) ?? 0, counts.get(`w:${typo[1]}`) ?? 0) : undefined,
    };
    return { a: row.x, b: row.y, ...scorePair(f), sameName: row.name_x === row.name_y ? row.name_x : null };
  });
}

interface Count {
  key: string;
  before: number;
  after: number;
}

/**
 * Drains the queue, up to maxBatches batches or until `stop()` says so between batches (the rest is left to
 * the next call or the background loop) or an import is being applied (see above); a drained backlog of at least settleAfter customers is settled (see settle).
 */
export async function refreshDuplicates(db: Db, region: string, maxBatches = Infinity, stop: () => boolean = () => false, settleAfter = SETTLE_AFTER): Promise<number> {
  // The common case (nothing changed) costs one indexed read, no transaction.
  const state = await store.queueState(db);
  if (!state.dirty || state.importing) return 0;
  let total = 0;
  let drained = false;
  for (let i = 0; i < maxBatches && !stop(); i++) {
    if (i > 0 && (await store.queueState(db)).importing) break; // an import started: the rest waits for it
    const { taken, requeued } = await refreshBatch(db, region);
    total += taken;
    if (taken < BATCH && requeued === 0) {
      drained = true;
      break;
    }
  }
  if (drained && total >= settleAfter) await settle(db);
  return total;
}

/**
 * After a large backlog: until autovacuum comes by (a minute or more later), the empty queue still holds
 * every dead row, so the "anything dirty?" probe every lookup makes reads them all (8–20 ms at 100k), and
 * the pairs table keeps the statistics of before (empty at first), so the planner picks a parallel plan
 * for a one-customer lookup (12–20 ms of worker start-up). Vacuuming the queue and analyzing the pairs
 * now costs the refresher tens of milliseconds once. (Separate statements: VACUUM runs outside any transaction.)
 */
async function settle(db: Db): Promise<void> {
  await db.exec('VACUUM duplicate_dirty');
  await db.exec('ANALYZE duplicate_pairs');
}

/**
 * Background loop for worker processes: drains the queue every `everyMs`. Returns a stop function, which
 * waits for the batch in progress only (a backlog is left for the next start), so SIGTERM drains in time.
 */
export function startDuplicateRefresher(db: Db, region: string, everyMs = 1000, onError: (err: unknown) => void = () => {}): () => Promise<void> {
  return startLoop((stopped) => refreshDuplicates(db, region, Infinity, stopped), everyMs, onError);
}
