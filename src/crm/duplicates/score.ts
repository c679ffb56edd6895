// The duplicate score (SPEC §14): independent signals combined like independent pieces of evidence,
// score = 1 − Π(1 − wᵢ), each wᵢ in 0..1. The weights are tuned on the generated set of bench/duplicates.ts
// (precision/recall in BENCHMARKS.md) and explained in the README.
export const WEIGHTS = {
  /** The same email (trimmed, lower case): people rarely share one. */
  email: 0.9,
  /** The same phone (E.164): households share landlines, so alone it stays below the default minScore. */
  phone: 0.6,
  /** Name similarity (pg_trgm) together with a shared postal code / a shared city only. */
  namePostal: 0.9,
  nameCity: 0.8,
  /** Name similarity with no shared place: weak on its own, it tips email or phone matches. */
  nameOnly: 0.4,
};
/** Name similarity below this adds nothing; at 1 (same words, any order) it adds its full weight. */
export const NAME_FLOOR = 0.35;
/** Pairs below this are not kept (so minScore below it lists nothing more). */
export const STORED_MIN = 0.5;
export const DEFAULT_MIN_SCORE = 0.8;

export interface PairFeatures {
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
  const sim = Math.max(0, Math.min(1, (f.nameSimilarity - NAME_FLOOR) / (1 - NAME_FLOOR)));
  if (sim > 0) {
    const place = f.postalCodes.length > 0 ? 'postal' : f.cities.length > 0 ? 'city' : null;
    const w = place === 'postal' ? WEIGHTS.namePostal : place === 'city' ? WEIGHTS.nameCity : WEIGHTS.nameOnly;
    miss *= 1 - w * sim;
    reasons.push({ field: 'name', detail: `name similarity ${f.nameSimilarity.toFixed(2)}` });
    if (place === 'postal') reasons.push({ field: 'address', detail: `same postal code ${f.postalCodes[0]}` });
    else if (place === 'city') reasons.push({ field: 'address', detail: `same city ${f.cities[0]}` });
  }
  return { score: Math.round((1 - miss) * 1000) / 1000, reasons };
}
