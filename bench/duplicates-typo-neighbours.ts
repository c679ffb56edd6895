// Counts, on the generated data of bench/duplicates-gen.ts, the non-planted pairs of customers in one postal code whose
// names are one typo apart (scored 0.9 by the typo rule) or equal, at 100k and 1M: the first grow as the square of the
// base and are most of the false positives at 1M (docs/duplicates.md). Run: node --import tsx bench/duplicates-typo-neighbours.ts
import { generate } from './duplicates-gen.ts';
import { oneTypoApart } from '../src/crm/duplicates/score.ts';
for (const n of [100_000, 1_000_000]) {
  const g = generate(n);
  const truth = new Set(g.truth.map((t) => [...t].sort().join('|')));
  const groups = new Map<string, { id: string; name: string; phone: string }[]>();
  for (const c of g.customers) {
    const z = c.addresses[0]?.postCode; if (!z) continue;
    const f = (c.firstName ?? '').trim().toLowerCase(), l = (c.lastName ?? '').trim().toLowerCase();
    for (const k of [`${z}|L${l}`, `${z}|F${f}`]) { const a = groups.get(k) ?? []; a.push({ id: c.externalId, name: `${f} ${l}`, phone: c.phones[0]?.number ?? '' }); groups.set(k, a); }
  }
  const seen = new Set<string>(); let typoFp = 0; let sameFp = 0;
  for (const a of groups.values()) for (let i = 0; i < a.length; i++) for (let j = i + 1; j < a.length; j++) {
    const key = [a[i].id, a[j].id].sort().join('|'); if (seen.has(key) || truth.has(key)) continue; seen.add(key);
    if (a[i].name !== a[j].name && oneTypoApart(a[i].name, a[j].name)) typoFp++;
    else if (a[i].name === a[j].name) sameFp++;
  }
  console.log(n, 'non-planted pairs in one postal code: names one typo apart', typoFp, '; same name', sameFp);
}
