// The replay worker (BULB_ROLE worker|all; its own loop, started from main.ts beside the dispatcher and the import
// worker): claims an accepted replay (or one whose worker died: its lease ran out) and queues its deliveries chunk by
// chunk. Each chunk is one transaction holding the replay's row lock: one INSERT … SELECT FROM events (never a
// statement per event), the cursor, the count and the lease commit together, so a worker killed mid-replay is
// followed by one that resumes after the last committed chunk (no event queued twice). A cancel or a deleted
// subscription stops it between chunks; the chunks queued stay.
import crypto from 'node:crypto';
import { withRetry, type Db, type Queryable } from '../db/db.ts';
import * as store from './replay-store.ts';
import { WokenWorker } from '../loop.ts';
import { requeueGuard } from '../partitions/store.ts';

type Log = (msg: string, err?: unknown) => void;

export interface ReplayWorkerOptions {
  /** Event ids one chunk walks (its INSERT queues at most that many deliveries). */
  chunkEvents?: number;
  /** Lease on a replay, renewed by every chunk. */
  leaseMs?: number;
  log?: Log;
}

export class ReplayWorker extends WokenWorker {
  readonly token = crypto.randomUUID();
  private readonly chunkEvents: number;
  private readonly leaseMs: number;
  private readonly log: Log;

  constructor(db: Db, opts: ReplayWorkerOptions = {}) {
    super(db, store.REPLAY_CHANNEL);
    this.chunkEvents = opts.chunkEvents ?? 10_000;
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.log = opts.log ?? (() => {});
  }

  // stop() (WokenWorker) ends after the chunk in progress and hands the replay back.

  protected async run(): Promise<void> {
    while (!this.stopping) {
      try {
        const r = await store.claimReplay(this.db, this.token, this.leaseMs);
        if (r) {
          await this.process(r.id);
          continue;
        }
      } catch (err) {
        this.log('replay worker: will retry', err);
      }
      await this.nap.sleep(1000);
    }
  }

  private async process(id: string): Promise<void> {
    for (;;) {
      if (this.stopping) return store.releaseReplay(this.db, id, this.token);
      const next = await withRetry(this.db, (tx) => this.chunk(tx, id));
      if (next !== 'more') return;
    }
  }

  private async chunk(tx: Queryable, id: string): Promise<'more' | 'done' | 'lost'> {
    const r = await store.lockForChunk(tx, id);
    if (!r || r.status !== 'running' || r.lock_token !== this.token) return 'lost'; // cancelled, or taken over
    if (r.deleted) {
      await store.markFailed(tx, id, 'the subscription was deleted');
      return 'done';
    }
    await requeueGuard(tx); // the events it queues stay stored until this commits (src/partitions/store.ts)
    const out = await store.queueChunk(tx, r, this.chunkEvents, this.leaseMs);
    return out.done ? 'done' : 'more';
  }
}
