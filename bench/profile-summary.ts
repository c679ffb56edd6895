// Summarises a .cpuprofile (node --cpu-prof): self time by function and by package/file, top N.
// `node --import tsx bench/profile-summary.ts file.cpuprofile [N]`
import fs from 'node:fs';

const file = process.argv[2];
const top = Number(process.argv[3] ?? 25);
const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map<number, any>(prof.nodes.map((n: any) => [n.id, n]));
const self = new Map<number, number>();
const dt: number[] = prof.timeDeltas;
prof.samples.forEach((id: number, i: number) => self.set(id, (self.get(id) ?? 0) + (dt[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fn = new Map<string, number>();
const where = new Map<string, number>();
for (const [id, t] of self) {
  const cf = byId.get(id).callFrame;
  const url = String(cf.url).replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/work\/main\//, '');
  const k = `${cf.functionName || '(anon)'} ${url}:${cf.lineNumber}`;
  fn.set(k, (fn.get(k) ?? 0) + t);
  const pkg = url.startsWith('nm/') ? url.split('/').slice(0, url.startsWith('nm/@') ? 3 : 2).join('/') : url || cf.functionName;
  where.set(pkg, (where.get(pkg) ?? 0) + t);
}
const show = (m: Map<string, number>) =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, top).forEach(([k, t]) => console.log(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${k}`));
console.log(`total ${(total / 1e6).toFixed(1)} s sampled`);
console.log('--- by package/file');
show(where);
console.log('--- by function');
show(fn);
