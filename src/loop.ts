// A background task run over and over: `pass` every `everyMs` after the previous pass ended (the first after
// `firstMs`), never two at once; `everyMs` may be a function of the pass's result (undefined: it failed). Returns a
// stop function, which waits for the pass under way only; a pass is told through `stopped()` that it should end early.
import type { Db } from './db/db.ts';
export function startLoop<T>(pass: (stopped: () => boolean) => Promise<T>, everyMs: number | ((last: T | undefined) => number), onError: (err: unknown) => void, firstMs = typeof everyMs === 'number' ? everyMs : everyMs(undefined)): () => Promise<void> {
  let stopped = false;
  const isStopped = () => stopped;
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    if (stopped) return;
    let last: T | undefined;
    running = pass(isStopped).then((r) => (last = r), onError).finally(() => {
      if (!stopped) timer = setTimeout(tick, typeof everyMs === 'number' ? everyMs : everyMs(last)).unref();
    });
  };
  let timer = setTimeout(tick, firstMs).unref();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

/**
 * The pause of a worker that polls and is also woken (by NOTIFY, or by stop()): `sleep(ms)` ends after ms or at the
 * next `wake()`, whichever comes first; a wake while nobody sleeps is a no-op.
 */
export class Nap {
  private end: (() => void) | undefined;
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => this.wake(), ms);
      this.end = () => {
        clearTimeout(t);
        this.end = undefined;
        resolve();
      };
    });
  }
  wake(): void {
    this.end?.();
  }
}

/**
 * A worker that claims work in a loop, pausing when there is none until its channel's NOTIFY or a poll: start()
 * LISTENs and runs the loop; stop() ends the loop after the work in progress, then unlistens. Subclasses write run(),
 * which checks `stopping` and pauses with `nap.sleep(…)`.
 */
export abstract class WokenWorker {
  protected stopping = false;
  protected readonly nap = new Nap();
  private loop: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(protected readonly db: Db, private readonly channel: string) {}

  protected abstract run(): Promise<void>;

  async start(): Promise<void> {
    this.unlisten = await this.db.listen(this.channel, () => this.nap.wake());
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.nap.wake();
    await this.loop;
    await this.unlisten?.().catch(() => {});
  }
}
