// Db over embedded PGlite, run in its own worker thread (src/db/pglite-worker.ts) so that WebAssembly
// PostgreSQL never blocks the event loop serving HTTP and delivering webhooks. Each call is one message;
// PGlite serialises queries and transactions itself, as it did in process.
import { Worker } from 'node:worker_threads';
import type { Db, Queryable, QueryResult, TransactionOptions } from './db.ts';
import type { Request, WorkerInit } from './pglite-worker.ts';

type Pending = { resolve: (v: any) => void; reject: (e: Error) => void };
type Req = Request extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

function toError(e: Record<string, unknown>): Error {
  const err = new Error(String(e.message));
  Object.assign(err, e);
  return err;
}

export class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private notify = new Map<number, (payload: string) => void>();
  private exitError: Error | undefined;
  private closed = false;

  private constructor(private worker: Worker) {
    worker.on('message', (m: any) => {
      if (m.notify !== undefined) return this.notify.get(m.notify)?.(m.payload);
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve(m.value);
      else p.reject(toError(m.error));
    });
    const down = (err: Error) => {
      this.exitError = err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    worker.on('error', (err) => down(err));
    worker.on('exit', (code) => down(new Error(`the PGlite worker exited (${code})`)));
  }

  /** dataDir: a folder, or 'memory://'. loadDataDir: a snapshot tarball to start from. */
  static async open(dataDir: string, loadDataDir?: Blob): Promise<PgliteDb> {
    const init: WorkerInit = { dataDir, loadDataDir: loadDataDir ? await loadDataDir.arrayBuffer() : undefined };
    const worker = new Worker(new URL('./pglite-worker-entry.mjs', import.meta.url), {
      workerData: init,
      transferList: init.loadDataDir ? [init.loadDataDir] : [],
      // The entry (plain JS) loads the TypeScript worker through tsx's API: Node 20 does not apply the parent's
      // --import hooks to a worker's entry. No execArgv: the parent's (--test, --cpu-prof…) are not the worker's.
      execArgv: [],
    });
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: any) => {
        if (!m.ready) return;
        worker.off('message', onMessage);
        worker.off('error', reject);
        worker.off('exit', onExit);
        resolve();
      };
      const onExit = (code: number) => reject(new Error(`the PGlite worker exited (${code}) while opening ${dataDir}`));
      worker.on('message', onMessage);
      worker.once('error', reject);
      worker.once('exit', onExit);
    });
    return new PgliteDb(worker);
  }

  private call<T>(req: Req): Promise<T> {
    if (this.exitError) return Promise.reject(this.exitError);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...req, id });
    });
  }

  query<T>(sql: string, params?: unknown[], name?: string): Promise<QueryResult<T>> {
    return this.call({ op: 'query', sql, params, name });
  }

  exec(sql: string): Promise<void> {
    return this.call({ op: 'exec', sql });
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, _opts?: TransactionOptions): Promise<T> {
    const tx = await this.call<number>({ op: 'begin' });
    const q: Queryable = {
      query: <R>(sql: string, params?: unknown[], name?: string) => this.call<QueryResult<R>>({ op: 'query', sql, params, name, tx }),
      exec: (sql: string) => this.call<void>({ op: 'exec', sql, tx }),
    };
    let out: T;
    try {
      out = await fn(q);
    } catch (err) {
      await this.call({ op: 'rollback', tx }).catch(() => {});
      throw err;
    }
    await this.call({ op: 'commit', tx }); // a failed COMMIT has ended the transaction already
    return out;
  }

  /** One connection already, and queries outside a transaction commit by themselves. */
  session<T>(fn: (s: Queryable) => Promise<T>): Promise<T> {
    return fn(this);
  }

  /** In-process database: the notification path cannot be lost, so onLost is never called. */
  async listen(channel: string, onPayload: (payload: string) => void, _onLost?: () => void): Promise<() => Promise<void>> {
    const id = this.nextId; // the listen request's id names the subscription
    this.notify.set(id, onPayload);
    try {
      await this.call({ op: 'listen', channel });
    } catch (err) {
      this.notify.delete(id);
      throw err;
    }
    return async () => {
      this.notify.delete(id);
      if (!this.closed) await this.call({ op: 'unlisten', listen: id }).catch(() => {});
    };
  }

  /** A tarball of the data directory (used to start test databases fast). */
  async dump(): Promise<Blob> {
    return new Blob([await this.call<ArrayBuffer>({ op: 'dump' })]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.exitError) await this.call({ op: 'close' }).catch(() => {});
    await this.worker.terminate();
  }
}
