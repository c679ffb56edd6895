// The duplicate score (SPEC §14): independent signals combined like independent pieces of evidence,
// score = 1 − Π(1 − wᵢ), each wᵢ in 0..1. The weights are tuned on the generated set of bench/duplicates.ts
// (precision/recall in BENCHMARKS.md) and explained in docs/duplicates.md.
export const WEIGHTS = {
  /** The same email (trimmed, lower case): people rarely share one. */
  email: 0.9,
  /** The same phone (E.164): households share landlines, so alone it stays below the default minScore. */
  phone: 0.6,
  /** Name similarity (pg_trgm) together with a shared postal code / a shared city only. */
  namePostal: 0.9,
  /** A city holds many people of the same name: alone it stays below the default minScore. */
  nameCity: 0.6,
  /** Name similarity with no shared place: weak on its own, it tips email or phone matches. */
  nameOnly: 0.55,
};
/**
 * An exact name borne by more customers than this counts less: weight × √(COMMON_NAME / n), n the count
 * rounded down to a half-octave (see commonNameFloor).
 */
export const COMMON_NAME = 3;
/** Names equal but for one typo (one letter inserted, deleted, changed or two swapped) count as this similar. */
export const TYPO_SIMILARITY = 0.9;
/**
 * Names one typo apart are two names, not a slip, when the rarer of the two differing words is itself borne by
 * many customers (`alena`/`alina`, `alton`/`alston`): a slip is rare, two spellings each borne by many are two
 * names. Past SLIP_COMMON bearers (counted as a step of commonNameFloor, see slipFloor) the typo weighs
 * √(SLIP_COMMON / n) of its full similarity: from 64 bearers on, a typo with a postal code alone stays below the
 * default minScore. Measured on bench/duplicates-gen.ts at 1M customers: a slip of the commonest first name is
 * borne by ~35 customers (the generator types 1.5% of names with a slip), two generated names by hundreds.
 */
export const SLIP_COMMON = 46;
/** Name similarity below NAME_FLOOR adds nothing; from NAME_FULL on (or one typo apart) it adds its full weight. */
export const NAME_FLOOR = 0.35;
export const NAME_FULL = 0.9;
/**
 * An email or phone borne by more active customers than this is a placeholder or a shop's number, not a
 * person's: it neither brings customers together nor counts as a match (k bearers made k²/2 pairs).
 */
export const COMMON_CONTACT = 20;
/**
 * A word of the name with a city, a postal code or a street borne by more active customers than this brings
 * nobody together (a common first name in a big city is no signal alone; with a street it is): it bounds each
 * customer's candidates whatever the size of the base. Measured on bench/duplicates-gen.ts at 1M customers:
 * 29 candidates per customer at 50 (131 without a cap), the same planted duplicates within reach.
 */
export const NAME_KEY_CAP = 50;
/** Pairs below this are not kept (so minScore below it lists nothing more). */
export const STORED_MIN = 0.5;
export const DEFAULT_MIN_SCORE = 0.8;
/**
 * The lowest name similarity with which a pair sharing no email or phone can still reach STORED_MIN (the
 * name weighed at its heaviest, rounding to thousandths included, a little margin), unless the names are
 * one typo apart: the candidate search leaves the rest out before computing their other features.
 */
export const NAME_PREFILTER = NAME_FLOOR + ((NAME_FULL - NAME_FLOOR) * (STORED_MIN - 0.0005)) / Math.max(WEIGHTS.namePostal, WEIGHTS.nameCity, WEIGHTS.nameOnly) - 0.001;

export interface PairFeatures {
  /** The two folded names (for the typo check). */
  names?: [string, string];
  /** How many active customers bear exactly this name (when both names are equal): common names say less. */
  nameCount?: number;
  /** When the names are one typo apart: how many active customers bear the rarer of the two differing words. */
  typoCount?: number;
  emails: string[];
  phones: string[];
  nameSimilarity: number;
  postalCodes: string[];
  cities: string[];
}

export interface Reason {
  field: 'email' | 'phone' | 'name' | 'address';
  detail: string;
}

export function scorePair(f: PairFeatures): { score: number; reasons: Reason[] } {
  const reasons: Reason[] = [];
  let miss = 1;
  if (f.emails.length > 0) {
    miss *= 1 - WEIGHTS.email;
    reasons.push({ field: 'email', detail: `same email ${f.emails[0]}` });
  }
  if (f.phones.length > 0) {
    miss *= 1 - WEIGHTS.phone;
    reasons.push({ field: 'phone', detail: `same phone ${f.phones[0]}` });
  }
  const plain = nameShare(f.nameSimilarity);
  // A typo weighs as a full match, less when both spellings are common (two names); never less than its trigrams.
  const slip = f.names !== undefined && f.nameSimilarity < TYPO_SIMILARITY && oneTypoApart(f.names[0], f.names[1]) ? slipFloor(f.typoCount ?? 0) : -1;
  const typoShare = slip < 0 ? 0 : nameShare(TYPO_SIMILARITY) * (slip > 0 ? Math.sqrt(SLIP_COMMON / slip) : 1);
  const typo = typoShare > plain;
  const sim = Math.max(plain, typoShare);
  if (sim > 0) {
    const place = f.postalCodes.length > 0 ? 'postal' : f.cities.length > 0 ? 'city' : null;
    const w = place === 'postal' ? WEIGHTS.namePostal : place === 'city' ? WEIGHTS.nameCity : WEIGHTS.nameOnly;
    const common = commonNameFloor(f.nameCount ?? 0);
    const rarity = common > 0 ? Math.sqrt(COMMON_NAME / common) : 1;
    miss *= 1 - w * sim * rarity;
    const commonText = common > 0 ? `, a common name (at least ${common} customers)` : '';
    const typoText = slip > 0 ? `, both spellings common (the rarer borne by at least ${slip} customers)` : '';
    reasons.push({ field: 'name', detail: typo ? `names one typo apart (similarity ${f.nameSimilarity.toFixed(2)})${typoText}` : `name similarity ${f.nameSimilarity.toFixed(2)}${commonText}` });
    if (place === 'postal') reasons.push({ field: 'address', detail: `same postal code ${f.postalCodes[0]}` });
    else if (place === 'city') reasons.push({ field: 'address', detail: `same city ${f.cities[0]}` });
  }
  return { score: Math.round((1 - miss) * 1000) / 1000, reasons };
}

/** The share of a name's weight a trigram similarity earns: 0 at NAME_FLOOR, 1 from NAME_FULL on. */
function nameShare(similarity: number): number {
  return Math.max(0, Math.min(1, (similarity - NAME_FLOOR) / (NAME_FULL - NAME_FLOOR)));
}

/**
 * 0 for a word borne by fewer customers than the first step past SLIP_COMMON (a typo of it may be a slip);
 * else its count's step (commonNameFloor). A typo pair's score depends on this step of its rarer word, so the
 * refresher re-scores such pairs when a word changes step (see refresh.ts), as it does for equal names.
 */
export function slipFloor(count: number): number {
  const step = commonNameFloor(count);
  return step > SLIP_COMMON ? step : 0;
}

/**
 * 0 for a name borne by at most COMMON_NAME customers; else the count rounded down to the sequence
 * 4, 6, 8, 12, 16, 23, 32, 46, 64, … (⌈2^(k/2)⌉, half-octaves). A pair's score depends on this step, not
 * on the exact count, so that the refresher can keep every pair of a name scored with its current count:
 * when a name changes step it re-queues the name's bearers (see refresh.ts), which costs each new bearer
 * about 2.4 re-scorings of others over a name's lifetime instead of one for every bearer on every change.
 */
export function commonNameFloor(count: number): number {
  if (count <= COMMON_NAME) return 0;
  const k = (count * count).toString(2).length - 1; // ⌊log₂ count²⌋, exact
  return Math.ceil(2 ** (k / 2));
}

/** Damerau–Levenshtein distance ≤ 1 (one insertion, deletion, substitution or adjacent swap). */
export function withinOneEdit(a: string, b: string): boolean {
  if (a === b) return true;
  if (Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length === b.length) {
    if (a.slice(i + 1) === b.slice(i + 1)) return true; // substitution
    return a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2); // swap
  }
  const [long, short] = a.length > b.length ? [a, b] : [b, a];
  return long.slice(i + 1) === short.slice(i);
}

/**
 * The same words in any order, except exactly one word of 4+ letters one edit away from its counterpart
 * with the same first letter ("jamees smith" / "smith james"). Short words are left out ("ann"/"anna"
 * are different names), and so are first letters: typing slips rarely hit them, while different names
 * often differ only there ("elina"/"alina").
 */
export function oneTypoApart(a: string, b: string): boolean {
  return typoWords(a, b) !== null;
}

/** The two words in which names one typo apart differ (see oneTypoApart), else null. */
export function typoWords(a: string, b: string): [string, string] | null {
  const wa = a.split(' ').filter(Boolean);
  const wb = b.split(' ').filter(Boolean);
  if (wa.length !== wb.length || wa.length === 0) return null;
  const rest = [...wb];
  const left: string[] = [];
  for (const w of wa) {
    const k = rest.indexOf(w);
    if (k >= 0) rest.splice(k, 1);
    else left.push(w);
  }
  const [x, y] = [left[0], rest[0]];
  return left.length === 1 && rest.length === 1 && Math.min(x.length, y.length) >= 4 && x[0] === y[0] && withinOneEdit(x, y) ? [x, y] : null;
}
