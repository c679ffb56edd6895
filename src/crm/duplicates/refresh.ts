// Keeps the possible-duplicate pairs current: takes changed customers off the dirty queue (filled by
// triggers on customers, whoever wrote them), recomputes their normalised profiles and their pairs.
// Work is proportional to what changed, never to the size of the base. One refresher at a time (an
// advisory lock), so two changed customers never score each other against stale profiles. A name that
// becomes more or less common (a step of commonNameFloor) puts its other bearers back on the queue, so every
// pair is scored with the name's current count, whatever the order customers arrived in. While an import
// is being applied the refresher defers (it would compete with the import for the same tables and the
// same cores): what the import changes stays queued and is folded in once the import is done.
import type { Db, Queryable } from '../../db/db.ts';
import { keysOf, profileOf, type Profile } from './normalize.ts';
import { COMMON_CONTACT, STORED_MIN, commonNameFloor, scorePair, type PairFeatures } from './score.ts';
import * as store from './store.ts';
import { startLoop } from '../../loop.ts';

const LOCK_KEY = 740_213_517; // pg_advisory_xact_lock key of the refresher
export const BATCH = 500;
/** A drained backlog this large (more than requests drain: they stop at a few batches) is settled at once. */
const SETTLE_AFTER = 10 * BATCH;

/** Processes one batch; returns how many customers it took off the queue and how many it put back. */
export async function refreshBatch(db: Db, region: string, batch = BATCH): Promise<{ taken: number; requeued: number }> {
  return db.transaction(async (tx) => {
    await store.lockRefresher(tx, LOCK_KEY);
    const ids = await store.claimDirty(tx, batch);
    if (ids.length === 0) return { taken: 0, requeued: 0 };
    const profiles = (await store.activeSignals(tx, ids)).map((c) => profileOf(c, region));
    const keys = profiles.flatMap((p) => keysOf(p).map((key) => ({ key, customerId: p.customerId })));
    const counts = await store.nameCounts(tx, ids, profiles.map((p) => p.name));
    const contacts = await commonContacts(tx, ids, keys);
    await store.replaceProfiles(tx, ids, profiles, keys);
    const requeued = (await requeueChangedNames(tx, ids, profiles, counts)) + contacts.requeued;
    // How many bear each of the batch's names now (the x side of every candidate is one of the batch), counted
    // once per name: counted per candidate row, a name borne by k customers (k walk-in "Guest Customer"s of one
    // shop) cost k² candidates × k, 72 s for one read at k = 1,000.
    const addedNames = new Map<string, number>();
    for (const p of profiles) addedNames.set(p.name, (addedNames.get(p.name) ?? 0) + 1);
    const nameCount = new Map(counts.map((c) => [c.name, c.others + (addedNames.get(c.name) ?? 0)]));
    const pairs = new Map<string, store.NewPair>();
    const common = { emails: [...contacts.common].filter((k) => k.startsWith('e:')).map((k) => k.slice(2)), phones: [...contacts.common].filter((k) => k.startsWith('p:')).map((k) => k.slice(2)) };
    // Names whose bearers pair only with a contact in common (the best place weighed at the name's rarity stays below STORED_MIN).
    const lone = { emails: [], phones: [], nameSimilarity: 1, postalCodes: ['-'], cities: [] };
    const hopeless = [...nameCount].filter(([name, n]) => name === '' || scorePair({ ...lone, names: [name, name], nameCount: n }).score < STORED_MIN).map(([name]) => name);
    for (const row of await store.candidates(tx, keys.filter((k) => !contacts.common.has(k.key)), common, hopeless)) {
      const [a, b] = BigInt(row.x) < BigInt(row.y) ? [row.x, row.y] : [row.y, row.x];
      const key = `${a}/${b}`;
      if (pairs.has(key)) continue;
      const f: PairFeatures = { names: [row.name_x, row.name_y], nameCount: row.name_x === row.name_y ? nameCount.get(row.name_x) : undefined, emails: row.emails, phones: row.phones, nameSimilarity: Number(row.sim), postalCodes: row.postal, cities: row.cities };
      const { score, reasons } = scorePair(f);
      if (score >= STORED_MIN) pairs.set(key, { a, b, score, reasons });
    }
    await store.insertPairs(tx, [...pairs.values()]);
    return { taken: ids.length, requeued };
  });
}

/**
 * The batch's email and phone keys borne by more than COMMON_CONTACT active customers once it is refreshed; the
 * other bearers of a key this batch makes common or rare again are re-queued (at most COMMON_CONTACT + 1 of
 * them), so that their pairs through it go or come back. Runs before the batch's keys are replaced.
 */
async function commonContacts(tx: Queryable, ids: string[], keys: { key: string; customerId: string }[]): Promise<{ common: Set<string>; requeued: number }> {
  const added = new Map<string, number>();
  for (const k of keys) if (k.key.startsWith('e:') || k.key.startsWith('p:')) added.set(k.key, (added.get(k.key) ?? 0) + 1);
  const counts = await store.contactCounts(tx, ids, [...added.keys()], COMMON_CONTACT + 1);
  const isCommon = (n: number) => n > COMMON_CONTACT;
  const common = new Set(counts.filter((c) => isCommon(c.others + (added.get(c.key) ?? 0))).map((c) => c.key));
  const flipped = counts.filter((c) => isCommon(c.others + c.mine) !== isCommon(c.others + (added.get(c.key) ?? 0))).map((c) => c.key);
  return { common, requeued: flipped.length === 0 ? 0 : await store.requeueKeyBearers(tx, flipped, ids) };
}

/** Re-queues the other bearers of each name whose commonNameFloor step this batch changed (in or out). */
async function requeueChangedNames(tx: Queryable, ids: string[], profiles: Profile[], counts: store.NameCount[]): Promise<number> {
  const added = new Map<string, number>();
  for (const p of profiles) added.set(p.name, (added.get(p.name) ?? 0) + 1);
  const changed = counts.filter((c) => commonNameFloor(c.count) !== commonNameFloor(c.others + (added.get(c.name) ?? 0))).map((c) => c.name);
  return changed.length === 0 ? 0 : store.requeueBearers(tx, changed, ids);
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
