// Counts, on the generated data of bench/duplicates-gen.ts, the non-planted pairs of customers in one postal code whose
// names are one typo apart or equal, at 100k and 1M: the first grow as the square of the base and were most of the
// false positives at 1M (docs/duplicates.md). Of the typo pairs, how many the typo rule still takes for a slip (the rarer
// differing word borne by fewer customers than the first slipFloor step, score.ts) and how many planted typo
// duplicates it no longer does. Run: node --import tsx bench/duplicates-typo-neighbours.ts
import { generate } from './duplicates-gen.ts';
import { slipFloor, typoWords } from '../src/crm/duplicates/score.ts';
const nameOf = (c: { firstName: string | null; lastName: string | null }) => `${(c.firstName ?? '').trim().toLowerCase()} ${(c.lastName ?? '').trim().toLowerCase()}`;
for (const n of [100_000, 1_000_000]) {
  const g = generate(n);
  const truth = new Set(g.truth.map((t) => [...t].sort().join('|')));
  const words = new Map<string, number>();
  for (const c of g.customers) for (const w of new Set(nameOf(c).split(' '))) words.set(w, (words.get(w) ?? 0) + 1);
  const slip = (x: string, y: string) => {
    const t = typoWords(x, y);
    return t !== null && slipFloor(Math.min(words.get(t[0]) ?? 0, words.get(t[1]) ?? 0)) === 0;
  };
  const groups = new Map<string, { id: string; name: string }[]>();
  for (const c of g.customers) {
    const z = c.addresses[0]?.postCode; if (!z) continue;
    const f = (c.firstName ?? '').trim().toLowerCase(), l = (c.lastName ?? '').trim().toLowerCase();
    for (const k of [`${z}|L${l}`, `${z}|F${f}`]) { const a = groups.get(k) ?? []; a.push({ id: c.externalId, name: nameOf(c) }); groups.set(k, a); }
  }
  const seen = new Set<string>(); let typoFp = 0; let typoFpSlip = 0; let sameFp = 0;
  for (const a of groups.values()) for (let i = 0; i < a.length; i++) for (let j = i + 1; j < a.length; j++) {
    const key = [a[i].id, a[j].id].sort().join('|'); if (seen.has(key) || truth.has(key)) continue; seen.add(key);
    if (a[i].name !== a[j].name && typoWords(a[i].name, a[j].name)) { typoFp++; if (slip(a[i].name, a[j].name)) typoFpSlip++; }
    else if (a[i].name === a[j].name) sameFp++;
  }
  const byId = new Map(g.customers.map((c) => [c.externalId, c]));
  let planted = 0; let plantedSlip = 0;
  for (const [o, d] of g.truth) {
    const [x, y] = [nameOf(byId.get(o)!), nameOf(byId.get(d)!)];
    if (x !== y && typoWords(x, y)) { planted++; if (slip(x, y)) plantedSlip++; }
  }
  console.log(n, `non-planted pairs in one postal code: names one typo apart ${typoFp} (still taken for a slip: ${typoFpSlip}); same name ${sameFp}; planted duplicates one typo apart ${planted} (still taken for a slip: ${plantedSlip})`);
}
