// Starts a webhook dispatcher in the test process over a test database (the same config rules as a server).
import { loadConfig, type Config } from '../../src/config.ts';
import type { Db } from '../../src/db/db.ts';
import { Dispatcher, type DispatcherOptions } from '../../src/webhooks/dispatcher.ts';
import { prepareSecrets } from '../../src/secrets/startup.ts';
import { TEST_SECRET_KEY } from './db.ts';
import { after, before } from 'node:test';
import { startReceiver, type Receiver } from '../webhooks/receiver.ts';

export interface TestWorker {
  dispatcher: Dispatcher;
  config: Config;
  stop(): Promise<void>;
}

export async function startWorker(db: Db, env: Record<string, string> = {}, opts: DispatcherOptions = {}): Promise<TestWorker> {
  const config = loadConfig({ BULB_LOG_LEVEL: 'silent', BULB_SECRET_KEY: TEST_SECRET_KEY, ...env });
  await prepareSecrets(db, config);
  const log = process.env.DEBUG_WEBHOOKS ? (m: string, e?: unknown) => console.error(m, e) : () => {};
  const dispatcher = new Dispatcher(db, config, { log, ...opts });
  await dispatcher.start();
  return { dispatcher, config, stop: () => dispatcher.stop() };
}

/**
 * Resolves once the worker has heard of a change of subscription `id` (the notification a PATCH, a delete or a 410's
 * disable sends, handled by the dispatcher's `changed`). The API answers once the change is committed; the worker hears
 * of it a moment later, and what it starts before then goes out as the subscription was.
 */
export function heardChange(worker: TestWorker, id: string): Promise<void> {
  const d = worker.dispatcher as unknown as { changed(id: string): void };
  const changed = d.changed.bind(d);
  return new Promise((resolve) => {
    d.changed = (changedId: string) => {
      changed(changedId);
      if (changedId === String(id)) {
        d.changed = changed;
        resolve();
      }
    };
  });
}

/** When (Date.now()) the worker heard of each change of subscription `id` from now on, as heardChange hears one. */
export function changesHeard(worker: TestWorker, id: string): number[] {
  const d = worker.dispatcher as unknown as { changed(id: string): void };
  const changed = d.changed.bind(d);
  const times: number[] = [];
  d.changed = (changedId: string) => {
    if (changedId === String(id)) times.push(Date.now());
    changed(changedId);
  };
  return times;
}

/**
 * Inside a describeEachDb body: a dispatcher over the suite's database and a loopback receiver, started
 * before its tests and closed after them; `use` hands both to the test file's variables.
 */
export function useWorkerAndReceiver(ctx: { tdb: { db: Db } }, env: Record<string, string>, use: (worker: TestWorker, rx: Receiver) => void): void {
  let worker: TestWorker | undefined;
  let rx: Receiver | undefined;
  before(async () => {
    worker = await startWorker(ctx.tdb.db, env);
    rx = await startReceiver();
    use(worker, rx);
  });
  after(async () => {
    await worker?.stop();
    await rx?.close();
  });
}
