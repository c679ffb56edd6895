// The embedded database's own thread: owns the PGlite instance (WebAssembly PostgreSQL) so that its work
// never runs on the event loop that serves HTTP and delivers webhooks. Message protocol (src/db/pglite.ts
// is the other side): requests {id, op, …} answered by {id, ok, value} or {id, ok: false, error};
// notifications {notify: listenId, payload}. Transactions are named by the id of their 'begin' request.
import './text-decoder-keeps-bom.ts'; // first: before PGlite's parser makes its TextDecoder
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, parse, protocol, type Transaction } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { durableOptions } from './pglite-durable.ts';

export type Request =
  | { id: number; op: 'query'; sql: string; params?: unknown[]; name?: string; tx?: number }
  | { id: number; op: 'exec'; sql: string; tx?: number }
  | { id: number; op: 'begin' }
  | { id: number; op: 'commit' | 'rollback'; tx: number }
  | { id: number; op: 'listen'; channel: string }
  | { id: number; op: 'unlisten'; listen: number }
  | { id: number; op: 'dump' }
  | { id: number; op: 'close' };

export interface WorkerInit {
  dataDir: string;
  /** A snapshot tarball to start from. */
  loadDataDir?: ArrayBuffer;
}

const parsers = {
  1184: (v: string) => v, // timestamptz as text, like the pg backend
  20: (v: string) => v, // int8
  1700: (v: string) => v, // numeric
};

const port = parentPort!;
const init = workerData as WorkerInit;

/** Errors cross the thread boundary as plain objects with every own field (code, detail, constraint…). */
function plainError(err: unknown) {
  if (!(err instanceof Error)) return { message: String(err) };
  const out: Record<string, unknown> = { message: err.message, name: err.name };
  for (const [k, v] of Object.entries(err)) if (typeof v === 'string' || typeof v === 'number') out[k] = v;
  return out;
}

const answer = (id: number, value?: unknown, transfer?: ArrayBuffer[]) => port.postMessage({ id, ok: true, value }, transfer ?? []);
const fail = (id: number, err: unknown) => port.postMessage({ id, ok: false, error: plainError(err) });

const ROLLBACK = Symbol('rollback');
interface OpenTx {
  tx: Transaction;
  end: (commit: boolean, requestId: number) => void;
}
const txs = new Map<number, OpenTx>();
const unlistens = new Map<number, () => Promise<void>>();

const pg = await PGlite.create({
  ...durableOptions(init.dataDir),
  loadDataDir: init.loadDataDir ? new Blob([init.loadDataDir]) : undefined,
  parsers,
  relaxedDurability: false,
  extensions: { pg_trgm },
});

const result = (r: { rows: unknown[]; affectedRows?: number }) => ({ rows: r.rows, rowCount: r.affectedRows ?? r.rows.length });

type Message = Parameters<typeof parse.parseResults>[0][number];
/** A named statement of this session: its text, parameter types and row description (none: no rows). */
interface Prepared {
  sql: string;
  types: number[];
  rowDescription: Message | undefined;
}
const prepared = new Map<string, Prepared>();

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * A named statement (src/db/db.ts: one name, one text), as the pg backend does it: parsed and planned once per
 * session (Parse + Describe), then each call is one Bind + Execute + Sync. PGlite's query() parses, describes
 * and plans every call, in six trips into WebAssembly (about 4× the time of this path for a lookup by uuid).
 * Values are serialised and rows parsed exactly as query() does. Holds PGlite's query lock; outside a
 * transaction also its transaction lock, and syncs to the file system afterwards, as query() does.
 */
async function namedQuery(name: string, sql: string, params: unknown[], inTx: boolean) {
  const run = async () => {
    try {
      let p = prepared.get(name);
      if (!p) {
        const s = protocol.serialize;
        const msgs = await pg.execProtocolStream(concat([s.parse({ name, text: sql }), s.describe({ type: 'S', name }), s.sync()]), { syncToFs: false });
        p = { sql, types: parse.parseDescribeStatementResults(msgs), rowDescription: msgs.find((m) => m.name === 'rowDescription') };
        prepared.set(name, p);
      }
      const types = p.types;
      const values = params.map((v, i) => {
        if (v === null || v === undefined) return null;
        const serialize = pg.serializers[types[i]];
        return serialize ? serialize(v) : (v as object).toString();
      });
      const s = protocol.serialize;
      const msgs = await pg.execProtocolStream(concat([s.bind({ statement: name, values }), s.execute({}), s.sync()]), { syncToFs: false });
      return parse.parseResults(p.rowDescription ? [p.rowDescription, ...msgs] : msgs, pg.parsers)[0];
    } catch (err) {
      if (err instanceof Error) Object.assign(err, { query: sql, params });
      throw err;
    }
  };
  if (inTx) return pg.runExclusive(run);
  return pg._runExclusiveTransaction(async () => {
    const r = await pg.runExclusive(run);
    await pg.syncToFs();
    return r;
  });
}

function begin(id: number) {
  let endRequest = 0;
  pg.transaction(async (tx) => {
    const commit = await new Promise<boolean>((resolve) => {
      txs.set(id, { tx, end: (c, requestId) => ((endRequest = requestId), resolve(c)) });
      answer(id, id);
    });
    txs.delete(id);
    if (!commit) throw ROLLBACK;
  }).then(
    () => answer(endRequest),
    (err) => {
      txs.delete(id);
      if (err === ROLLBACK) answer(endRequest);
      else if (endRequest) fail(endRequest, err);
      else fail(id, err); // BEGIN itself failed
    },
  );
}

async function handle(m: Request) {
  try {
    switch (m.op) {
      case 'query': {
        const on = m.tx === undefined ? pg : txs.get(m.tx)?.tx;
        if (!on) throw new Error('transaction is not open');
        // A name reused for another text (against the contract) is run unnamed rather than answered wrongly.
        const named = m.name !== undefined && (prepared.get(m.name)?.sql ?? m.sql) === m.sql;
        return answer(m.id, result(named ? await namedQuery(m.name!, m.sql, m.params ?? [], on !== pg) : await on.query(m.sql, m.params as any[])));
      }
      case 'exec': {
        const on = m.tx === undefined ? pg : txs.get(m.tx)?.tx;
        if (!on) throw new Error('transaction is not open');
        await on.exec(m.sql);
        return answer(m.id);
      }
      case 'begin':
        return begin(m.id);
      case 'commit':
      case 'rollback': {
        const t = txs.get(m.tx);
        if (!t) throw new Error('transaction is not open');
        return t.end(m.op === 'commit', m.id);
      }
      case 'listen': {
        const unsub = await pg.listen(m.channel, (payload) => port.postMessage({ notify: m.id, payload }));
        unlistens.set(m.id, unsub);
        return answer(m.id);
      }
      case 'unlisten': {
        await unlistens.get(m.listen)?.();
        unlistens.delete(m.listen);
        return answer(m.id);
      }
      case 'dump': {
        const buf = await ((await pg.dumpDataDir('none')) as Blob).arrayBuffer();
        return answer(m.id, buf, [buf]);
      }
      case 'close': {
        if (!pg.closed) await pg.close();
        answer(m.id);
        return port.close();
      }
    }
  } catch (err) {
    fail(m.id, err);
  }
}

port.on('message', (m: Request) => void handle(m));
port.postMessage({ ready: true });
