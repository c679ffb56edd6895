// Runs one exported bench function in its own process and prints its rows as one JSON line prefixed
// with "ROWS " (bench/run.ts uses it for bench/merge.ts and bench/webhooks.ts: their memory and any
// blocking of the event loop stay out of the other figures, and a time limit can be enforced).
// `node --import tsx bench/run-part.ts merge.ts runMergeBench [--quick]`
const [file, fn, ...rest] = process.argv.slice(2);
if (!file || !fn || !/^[a-z-]+\.ts$/.test(file)) {
  console.error('usage: bench/run-part.ts <file.ts> <exportedFunction> [--quick]');
  process.exit(2);
}
const mod = await import(`./${file}`);
const rows = await mod[fn]({ quick: rest.includes('--quick') });
console.log('ROWS ' + JSON.stringify(rows));
process.exit(0);
