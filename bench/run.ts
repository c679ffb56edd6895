// `npm run bench`: runs every benchmark and rewrites BENCHMARKS.md (one row per figure, the machine, the date).
// `--quick` shortens everything and writes .cache/BENCHMARKS.quick.md instead; `--only api,scale,chaos,soak,merge,webhooks,ingest,events,replay,attempts,export,notes,duplicates,lookups,pooler,brokers,volume,retention,bodycost`
// runs some parts (also written to the .cache file; with `--write` they replace their sections of BENCHMARKS.md).
// `--seconds N` sets the soak length.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, log, machine, parseArgs, pgAvailable, replaceSection, rowsTable, spawnNode, PG_ADMIN_URL, type Row } from './lib.ts';
import { runApiBench } from './api.ts';
import { API_NOTES, API_NOTES_TITLE } from './api-notes.ts';
import { runScaleBench } from './scale.ts';
import { runChaos, chaosRows } from './chaos.ts';
import { runSoak } from './soak.ts';

const args = parseArgs();
const want = (part: string) => !args.only || args.only.includes(part);
const started = Date.now();

interface Section {
  title: string;
  rows: Row[];
  extra?: string[];
}
const sections: Section[] = [];

async function part(title: string, key: string, fn: () => Promise<Row[] | { rows: Row[]; extra?: string[] }>) {
  if (!want(key)) return;
  log(`== ${title}`);
  const t0 = Date.now();
  try {
    const out = await fn();
    const s = Array.isArray(out) ? { title, rows: out } : { title, ...out };
    sections.push(s);
  } catch (err) {
    console.error(err);
    sections.push({ title, rows: [{ what: `${title}: the benchmark failed`, value: 'error', unit: '', baseline: null, ratio: null, goal: 'run to completion: failed', command: `npm run bench -- --only ${key}`, note: String((err as Error).stack ?? err).split('\n').slice(0, 3).join(' ') }] });
  }
  log(`== ${title}: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

/**
 * Runs another engineer's bench module (when it exists) in a child process with a time limit and takes
 * the rows it prints.
 */
async function optional(file: string, fn: string, key: string, title: string, quick: boolean, limitMin: number) {
  if (!fs.existsSync(path.join(ROOT, 'bench', file))) {
    log(`${file} is not there (yet): skipping ${title}`);
    return;
  }
  await part(title, key, async () => {
    const child = await spawnNode('bench/run-part.ts', [file, fn, ...(quick ? ['--quick'] : [])], {}, /()ROWS /, { timeoutMs: limitMin * 60_000 });
    await child.exited;
    const line = child.output().split('\n').find((l) => l.startsWith('ROWS '));
    if (!line) throw new Error(`${file} printed no rows:\n${child.output().slice(-1500)}`);
    return JSON.parse(line.slice(5)) as Row[];
  });
}

const hasPg = await pgAvailable();
await part('API throughput', 'api', () => runApiBench({ quick: args.quick }));
if (hasPg) {
  await part('Scale-out (PostgreSQL)', 'scale', () => runScaleBench({ quick: args.quick }));
  await part('Fault injection (PostgreSQL)', 'chaos', async () => {
    const seconds = args.quick ? 30 : 90;
    const r = await runChaos({ seconds });
    return { rows: chaosRows(r, seconds), extra: ['```', ...r.report, '```'] };
  });
}
// The merge at 1M rows takes over half an hour on the shared 2-core machine: `npm run bench` runs the
// merge bench's --quick sizes (10k, 100k); `--merge-full` (or `node --import tsx bench/merge.ts`) adds 1M.
// Each size seeds two twin groups per repetition and times merge, floor, undo and undo floor, on both engines:
// about 15 minutes under a load of 10 (the former 15-minute limit cut it off under heavier load).
await optional('merge.ts', 'runMergeBench', 'merge', 'Customer merge', args.quick || !process.argv.includes('--merge-full'), process.argv.includes('--merge-full') ? 90 : 30);
// The full webhooks part writes 1,000 subscriptions × 1,000,000 pending on PostgreSQL and runs the isolation
// scenario twice (before/after): about 4 minutes under a load of 5, far longer under a load of 20 (15 minutes cut it off).
await optional('webhooks.ts', 'runWebhookBench', 'webhooks', 'Webhook delivery', args.quick, args.quick ? 15 : 40);
if (hasPg) await optional('export.ts', 'runExportBench', 'export', 'Customer export (PostgreSQL)', args.quick, 20);
if (hasPg) await optional('events.ts', 'runEventsBench', 'events', 'Events API (PostgreSQL)', args.quick, 10);
// A replay of 1,000,000 events (--quick: 100,000) against one INSERT … SELECT of the same rows, live deliveries meanwhile: ~5 minutes.
if (hasPg) await optional('replay.ts', 'runReplayBench', 'replay', 'Webhook replay (PostgreSQL)', args.quick, 30);
// Attempt row size: the same 100,000 attempts (--quick: 20,000) written as before migration 051 and lean, bytes per row: ~1 minute.
if (hasPg) await optional('attempts.ts', 'runAttemptsBench', 'attempts', 'Attempt rows', args.quick, 10);
// Retention by partition: a day of 1,000,000 events and deliveries (--quick: 100,000) dropped, against a DELETE of an equal day.
if (hasPg) await optional('retention.ts', 'runRetentionBench', 'retention', 'Retention by partition (PostgreSQL)', args.quick, 20);
// Customer lookups by email and updatedSince over 1,000,000 customers: seeding ~1 minute, measuring ~1 minute.
if (hasPg) await optional('lookups.ts', 'runLookupsBench', 'lookups', 'Customer lookups at scale (PostgreSQL)', args.quick, 15);
// Possible duplicates: 1,000,000 customers built by the refresher for precision and recall (~15 minutes), then an
// import of 100,000 folded into bases of 1,250,000 and 5,000,000 seeded in SQL (~20 minutes), then one of 10,000
// into PGlite folders of 100,000 and 400,000, three folds each (~4 minutes).
if (hasPg) await optional('duplicates.ts', 'runDuplicatesBench', 'duplicates', 'Possible duplicates', args.quick, 90);
// Each body shape a probe found holding the event loop, against the JSON.parse of the body (PGlite, in memory): ~3 minutes.
await optional('body-cost.ts', 'runBodyCostBench', 'bodycost', 'Request cost against the JSON.parse of its body', args.quick, 20);
if (hasPg) {
  // Two floors and two imports of 1M customers: about 7 minutes on the shared 2-core machine at a load of 3 (--quick: 100,000 rows).
  await optional('ingest.ts', 'runIngestBench', 'ingest', 'Bulk and imports (PostgreSQL)', args.quick, args.quick ? 30 : 120);
  // A TGEN notes file of 200,000 notes (--quick: 20,000) against its hand-written SQL, then the same notes changed: ~2 minutes.
  await optional('notes-import.ts', 'runNotesImportBench', 'notes', 'TGEN notes imports (PostgreSQL)', args.quick, 20);
  await part('Memory under a soak (PostgreSQL)', 'soak', async () => runSoak({ seconds: args.seconds ?? (args.quick ? 30 : 600) }));
}
// Issue 25's volume run: two databases of N and 4N customers with their notes, events, deliveries and
// attempts (generated in SQL), each operation measured at both and its growth factor (bench/volume.ts). Not part
// of a plain `npm run bench` (run it alone: about 25 minutes at N = 500,000; --quick: N = 50,000, ~4 minutes).
if (hasPg && args.only?.includes('volume')) await optional('volume.ts', 'runVolumeBench', 'volume', 'Volume (PostgreSQL, issue 25)', args.quick, args.quick ? 20 : 90);
// The same on embedded PGlite, N = 100,000 (--quick: 10,000).
if (args.only?.includes('volume')) await optional('volume.ts', 'runVolumePgliteBench', 'volume', 'Volume (PGlite, issue 25)', args.quick, args.quick ? 20 : 90);
// Through a transaction-mode PgBouncer vs direct (GET by id, POST create, the delivery drain): about 3 minutes (--quick: 1.5).
if (hasPg) await part('PgBouncer vs direct (PostgreSQL)', 'pooler', async () => (await import('./pooler.ts')).runPoolerBench({ quick: args.quick }));
// Broker destinations: Bulb's drain to RabbitMQ and to NATS JetStream vs each broker's client publishing directly (docs/destinations.md).
if (hasPg) await part('Broker destinations (PostgreSQL)', 'brokers', async () => (await import('./brokers.ts')).runBrokersBench({ quick: args.quick }));

// ---------------------------------------------------------------- BENCHMARKS.md

const lines: string[] = [
  '# Bulb benchmarks',
  '',
  'Generated by `npm run bench` (`bench/run.ts`); do not edit by hand. Each figure is measured next to a baseline in the',
  'same run (for HTTP: a Fastify hello-world server in its own process, measured in short slices alternating with the figure), so the',
  'ratio is what to compare between machines. Servers under test run in child processes; the load generator',
  '(autocannon) runs in the bench process.',
  '',
  `Date: ${new Date().toISOString()}${args.quick ? ' (--quick: short runs, development only)' : ''}; the whole run took ${((Date.now() - started) / 60000).toFixed(1)} min.`,
  '',
  '## Machine',
  '',
  ...(await machine(hasPg ? PG_ADMIN_URL : undefined)).map((l) => `- ${l}`),
  '',
];
if (!hasPg) lines.push(`PostgreSQL was not reachable at ${PG_ADMIN_URL}: its figures are missing.`, '');
const generated = new Set<string>(['Machine']);
for (const s of sections) {
  generated.add(s.title);
  lines.push(`## ${s.title}`, '', ...rowsTable(s.rows));
  if (s.extra) lines.push('', ...s.extra);
  lines.push('');
}

if (!args.only || args.only.includes('api')) lines.push(`## ${API_NOTES_TITLE}`, '', ...API_NOTES, '');

// `--only X --write`: replace just those sections in BENCHMARKS.md (each row names the command that made it).
if (args.only && !args.quick && process.argv.includes('--write')) {
  if (args.only.includes('api')) replaceSection(API_NOTES_TITLE, API_NOTES);
  for (const sec of sections) replaceSection(sec.title, [`Measured by \`npm run bench -- --only ${args.only.join(',')} --write\` on ${new Date().toISOString()} (${(await machine(hasPg ? PG_ADMIN_URL : undefined)).slice(0, 1).join('')}).`, '', ...rowsTable(sec.rows), ...(sec.extra ? ['', ...sec.extra] : [])]);
  log('replaced those sections of BENCHMARKS.md');
  process.exit(sections.some((s) => s.rows.some((r) => r.value === 'error')) ? 1 : 0);
}

// Keep sections others wrote by hand until a generated section replaces them.
const target = args.quick || args.only ? path.join(ROOT, '.cache', 'BENCHMARKS.quick.md') : path.join(ROOT, 'BENCHMARKS.md');
const existingFile = path.join(ROOT, 'BENCHMARKS.md');
if (fs.existsSync(existingFile)) {
  const old = fs.readFileSync(existingFile, 'utf8');
  const parts = old.split(/^## /m).slice(1);
  const mine = [...generated].map((t) => t.toLowerCase());
  const ownedBefore = /Generated by `npm run bench`/.test(old) ? ['machine', 'api throughput', 'scale-out', 'fault injection', 'memory under a soak', 'customer merge', 'webhook delivery', 'notes'] : ['machine'];
  for (const p of parts) {
    const title = p.split('\n')[0].trim();
    const t = title.toLowerCase();
    const replaced = mine.some((m) => t.startsWith(m) || m.startsWith(t)) || ownedBefore.some((m) => t.startsWith(m)) ||
      (t.includes('merge') && sections.some((s) => s.title === 'Customer merge')) ||
      (t.includes('webhook') && sections.some((s) => s.title === 'Webhook delivery'));
    if (!replaced) lines.push(`## ${p.trimEnd()}`, '');
  }
}
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, lines.join('\n').trimEnd() + '\n');
log(`wrote ${path.relative(ROOT, target)} in ${((Date.now() - started) / 60000).toFixed(1)} min`);
const failed = sections.some((s) => s.rows.some((r) => r.value === 'error' || /lost|failed/i.test(r.goal) && /: missed|failed/.test(r.goal)));
process.exit(failed ? 1 : 0);
