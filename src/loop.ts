// A background task run over and over: `pass` every `everyMs` after the previous pass ended (the first after
// `firstMs`), never two at once. Returns a stop function, which waits for the pass under way only; a pass is
// told through `stopped()` that it should end early.
export function startLoop(pass: (stopped: () => boolean) => Promise<unknown>, everyMs: number, onError: (err: unknown) => void, firstMs = everyMs): () => Promise<void> {
  let stopped = false;
  const isStopped = () => stopped;
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    if (stopped) return;
    running = pass(isStopped).catch(onError).finally(() => {
      if (!stopped) timer = setTimeout(tick, everyMs).unref();
    });
  };
  let timer = setTimeout(tick, firstMs).unref();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
