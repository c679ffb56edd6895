// TGEN customer notes imports (PostgreSQL, same run, ratios to hand-written floors):
// - a notes file of N new notes (TGEN_customerNotes_fullupdate, CSV over HTTP to an API process, applied by one worker
//   process, first byte sent → `completed`, events=true, a subscription to customerNoteCreate and customerNoteUpdate)
//   vs the hand-written SQL writing the same rows: COPY of the file into a temporary table, one INSERT … SELECT of
//   the notes joined to their customers by externalId, one of their events and one of the deliveries;
// - the same file again, each note changed (every line an update with its event), vs the import that created them.
// Two notes per customer; the customers are COPYed in first (their possible-duplicates queue emptied, so the worker's
// refresher stays idle on both sides). N = 200,000 (20,000 with --quick).
//   node --import tsx bench/notes-import.ts [--quick] [--rows=N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { from as copyFrom } from 'pg-copy-streams';
import { api, createPgDatabase, hangingReceiver, log, parseArgs, ratioGoal, round, sleep, startBulb, subscribe, uploadNdjson, withPg, type Child, type Row } from './lib.ts';

const COMMAND = 'npm run bench -- --only notes';
const V = '2026-11'; // imports are Bulb's own route (SPEC §16: TGEN files through POST /crm/imports?format=tgen)

export async function runNotesImportBench(o: { quick: boolean; rows?: number }): Promise<Row[]> {
  const n = o.rows ?? (o.quick ? 20_000 : 200_000);
  const sink = await hangingReceiver();
  const db = await createPgDatabase('notes');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-notes-'));
  let apiProc: Child | undefined;
  let worker: Child | undefined;
  try {
    const env = { BULB_WEBHOOK_TIMEOUT_MS: '600000', BULB_WEBHOOK_RETRY_SCHEDULE: '86400' };
    apiProc = await startBulb({ databaseUrl: db.url, role: 'api', env });
    await subscribe(apiProc.url, `http://127.0.0.1:${sink.port}/hook`, ['customerNoteCreate', 'customerNoteUpdate']);
    await seedCustomers(db.url, n / 2);
    const files = writeFiles(dir, n);
    worker = await startBulb({ databaseUrl: db.url, role: 'worker', env });

    const floor = await copyFloor(db.url, files.created);
    log(`notes: floor ${round(floor.seconds, 1)} s (${round(n / floor.seconds, 0)} notes/s), ${floor.deliveries} deliveries`);
    await resetNotes(db.url);
    const created = await importRun(apiProc, files.created, n, 'created');
    log(`notes: import ${round(created.seconds, 1)} s (${round(n / created.seconds, 0)} notes/s)`);
    const updated = await importRun(apiProc, files.changed, n, 'updated');
    log(`notes: re-import ${round(updated.seconds, 1)} s (${round(n / updated.seconds, 0)} notes/s)`);
    const counts = await countRows(db.url);
    const createRate = n / created.seconds;
    const floorRate = n / floor.seconds;
    const updateRate = n / updated.seconds;
    const load = `Load average at the end ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores.`;
    return [
      {
        what: `TGEN notes import of ${n.toLocaleString('en-US')} new notes, events=true, 1 subscription (CSV upload → completed) vs COPY + INSERT … SELECT of the notes, their events and deliveries`,
        value: round(createRate, 0), unit: 'notes/s', baseline: round(floorRate, 0), ratio: round(createRate / floorRate),
        goal: ratioGoal(createRate / floorRate, 0.5), command: COMMAND,
        note: `Notes import: ${round(created.seconds, 1)} s (upload and staging ${round(created.uploadSeconds, 1)} s) vs floor ${round(floor.seconds, 1)} s; ` +
          `${n / 2} customers, two notes each, named by externalId; the floor wrote ${floor.deliveries} deliveries.`,
      },
      {
        what: `TGEN notes import of the same ${n.toLocaleString('en-US')} notes again, each changed (every line an update with its event) vs their import as new notes`,
        value: round(updateRate, 0), unit: 'notes/s', baseline: round(createRate, 0), ratio: round(updateRate / createRate),
        goal: ratioGoal(updateRate / createRate, 0.5), command: COMMAND,
        note: `Re-import: ${round(updated.seconds, 1)} s (upload and staging ${round(updated.uploadSeconds, 1)} s); afterwards ${counts.notes} notes, ${counts.events} events, ${counts.deliveries} deliveries. ${load}`,
      },
    ];
  } finally {
    await worker?.stop();
    await apiProc?.stop();
    sink.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

const customerId = (j: number) => `nb-c-${j}`;

/** `m` customers by COPY (externalId and a name), their possible-duplicates queue emptied: the notes bench's base. */
async function seedCustomers(url: string, m: number): Promise<void> {
  await withPg(url, async (c) => {
    const rows = Readable.from((function* () {
      for (let j = 0; j < m; j += 1000) {
        let t = '';
        for (let k = j; k < Math.min(m, j + 1000); k++) t += `${customerId(k)}\tAda\tLovelace${k % 997}\n`;
        yield t;
      }
    })());
    await pipeline(rows, c.query(copyFrom('COPY customers (external_id, first_name, last_name) FROM STDIN')));
    await c.query('TRUNCATE duplicate_dirty');
    await c.query('VACUUM ANALYZE customers');
  });
}

/** The notes file (two notes per customer) and the same notes each changed. */
function writeFiles(dir: string, n: number): { created: string; changed: string } {
  const header = 'externalId,customer,comments,type,isPrivate,store\n';
  const line = (j: number, changed: boolean) =>
    `nb-n-${j},${customerId(j >> 1)},${changed ? 'Changed: ' : ''}Asked about the ${['blue', 'green', 'red'][j % 3]} coat in size ${j % 14},CUSTOMER_OPTIN_LOG,${j % 5 === 0},s-${j % 40}\n`;
  const out = { created: path.join(dir, 'TGEN_customerNotes_fullupdate_2025-08_bench.csv'), changed: path.join(dir, 'TGEN_customerNotes_fullupdate_2025-08_bench2.csv') };
  for (const [file, changed] of [[out.created, false], [out.changed, true]] as const) {
    const fd = fs.openSync(file, 'w');
    fs.writeSync(fd, header);
    for (let j = 0; j < n; j += 1000) {
      let t = '';
      for (let k = j; k < Math.min(n, j + 1000); k++) t += line(k, changed);
      fs.writeSync(fd, t);
    }
    fs.closeSync(fd);
  }
  return out;
}

/** The hand-written SQL writing the import's rows: the notes by COPY and INSERT … SELECT, their events and deliveries. */
async function copyFloor(url: string, file: string): Promise<{ seconds: number; deliveries: number }> {
  return withPg(url, async (c) => {
    const t0 = performance.now();
    await c.query('BEGIN');
    await c.query(`CREATE TEMP TABLE nb (external_id text, customer text, comments text, type text, is_private boolean, store text) ON COMMIT DROP`);
    await pipeline(fs.createReadStream(file, { highWaterMark: 1 << 20 }), c.query(copyFrom(`COPY nb FROM STDIN (FORMAT csv, HEADER true)`)));
    await c.query(`INSERT INTO notes (customer_id, external_id, comments, type, is_private, store)
      SELECT cu.id, nb.external_id, nb.comments, nb.type, nb.is_private, nb.store FROM nb JOIN customers cu ON cu.external_id = nb.customer`);
    await c.query(`INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
      SELECT 'customerNoteCreate', 'CustomerNote', uuid, external_id, 'FLOOR' FROM notes ORDER BY id`);
    const d = await c.query(`INSERT INTO webhook_deliveries (event_id, event_created_at, subscription_id)
      SELECT e.id, e.created_at, s.id FROM events e JOIN webhook_subscriptions s ON s.event_types @> ARRAY[e.event_type] AND s.is_active AND s.deleted_at IS NULL
      WHERE e.source = 'FLOOR' ORDER BY e.id, s.id`);
    await c.query(`SELECT pg_notify('bulb_webhooks', '')`);
    await c.query('COMMIT');
    return { seconds: (performance.now() - t0) / 1000, deliveries: d.rowCount ?? 0 };
  });
}

async function resetNotes(url: string): Promise<void> {
  await withPg(url, async (c) => {
    await c.query('TRUNCATE webhook_deliveries, events, notes CASCADE');
    await c.query('CHECKPOINT');
  });
}

async function countRows(url: string): Promise<{ notes: number; events: number; deliveries: number }> {
  return withPg(url, async (c) => (await c.query(`SELECT (SELECT count(*) FROM notes)::int AS notes, (SELECT count(*) FROM events)::int AS events,
    (SELECT count(*) FROM webhook_deliveries)::int AS deliveries`)).rows[0]);
}

async function importRun(server: Child, file: string, n: number, expect: 'created' | 'updated'): Promise<{ seconds: number; uploadSeconds: number }> {
  const t0 = Date.now();
  const accepted = await uploadNdjson(`${server.url}/api/${V}/crm/imports?format=tgen&events=true&name=${path.basename(file)}`, file, 'text/csv');
  const uploadSeconds = (Date.now() - t0) / 1000;
  if (accepted.status !== 202) throw new Error(`import refused: ${accepted.status} ${accepted.body.slice(0, 300)}`);
  const uuid = JSON.parse(accepted.body).uuid as string;
  const limit = Date.now() + 3600_000;
  for (;;) {
    const r = await api(server.url, 'GET', `/api/${V}/crm/imports/${uuid}`);
    const s = r.body;
    if (s?.status === 'completed') {
      if (s[expect] !== n) throw new Error(`import completed with ${s[expect]} ${expect} of ${n}: ${JSON.stringify(s)}`);
      return { seconds: (Math.min(Date.now(), Date.parse(s.finishedAt)) - t0) / 1000, uploadSeconds };
    }
    if (r.status !== 200 || ['failed', 'cancelled'].includes(s?.status)) throw new Error(`import ${r.status}: ${JSON.stringify(s).slice(0, 300)}`);
    if (Date.now() > limit) throw new Error(`import not completed after 1 h: ${JSON.stringify(s)}`);
    await sleep(250);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = parseArgs(process.argv.slice(2).filter((a) => !a.startsWith('--rows=')));
  const rowsArg = process.argv.find((a) => a.startsWith('--rows='));
  console.log(JSON.stringify(await runNotesImportBench({ quick: args.quick, rows: rowsArg ? Number(rowsArg.slice(7)) : undefined }), null, 2));
  process.exit(0);
}
