// Several lines of one chunk naming one customer are folded into one write (store.applyChunk). When the fold is refused
// (an address's zoneCode outside its country once every line's list is applied), the lines are applied as one after
// another would be instead: a line refused at its turn is, and the others are applied (docs/imports.md, "Duplicates in
// one request"; bulk does the same, bulk.ts sequentialGroup). Until 2026-11-29 a valid line was refused with the bad
// one, and its change lost. Rare, so found after the fact: the chunk runs under a savepoint, and only when a folded
// group was refused are the lines refused at their turn found (while the first run's locks, taken in id order, are
// held: the refused customers were left unwritten), the chunk rolled back to the savepoint, those lines recorded, and
// the chunk applied again, its customers locked in id order again. (Found in review: the lines' customers locked one
// by one between the rollback and the re-run deadlocked with a bulk write locking in id order.)
import type { Queryable } from '../db/db.ts';
import * as store from './store.ts';

export async function applyCustomerChunk(tx: Queryable, imp: Parameters<typeof store.applyChunk>[1], span: number): Promise<store.ChunkResult> {
  await tx.query('SAVEPOINT bulb_fold');
  const r = await store.applyChunk(tx, imp, span);
  const folded = (r.errors ?? []).filter((e) => e.folded).map((e) => e.line);
  if (folded.length === 0) {
    await tx.query('RELEASE SAVEPOINT bulb_fold');
    return r;
  }
  const refused = await refusedInTurn(tx, imp, span, folded);
  await tx.query('ROLLBACK TO SAVEPOINT bulb_fold');
  await store.recordErrors(tx, imp.id, refused);
  return store.applyChunk(tx, imp, span);
}

/** The lines that, applied one after another onto their customer (in line order), are refused at their turn. */
async function refusedInTurn(tx: Queryable, imp: Parameters<typeof store.linesToFold>[1], span: number, lines: string[]): Promise<{ line: string; errors: unknown[] }[]> {
  const byCustomer = new Map<string, Awaited<ReturnType<typeof store.linesToFold>>>();
  for (const l of await store.linesToFold(tx, imp, span, lines)) byCustomer.set(l.key, [...(byCustomer.get(l.key) ?? []), l]);
  const refused: { line: string; errors: unknown[] }[] = [];
  for (const [key, group] of byCustomer) {
    let current = key.startsWith('l:') ? null : await store.currentAddresses(tx, key);
    for (const l of group) {
      if (!l.has_addresses) continue;
      const next = await store.patchedAddresses(tx, l.addresses, current);
      if (next.error) refused.push({ line: l.line, errors: [next.error] });
      else current = next.addresses;
    }
  }
  return refused;
}
