// A Bulb server as `npm start` runs it (node --import tsx src/main.ts serve), in its own process, for the tests
// that need the real process: start, signals, restarts on one data folder.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface Proc {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Resolves once the output matches (lines printed after "listening on"). */
  waitFor(re: RegExp): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts Bulb like `npm start` with a clean environment plus env (through npm itself with `npm: true`; the child is
 * then npm's process); resolves once it listens, or once its output matches `ready` (a worker opens no API port), the
 * url being the match's first group.
 */
export async function startBulb(env: Record<string, string>, opts: { npm?: boolean; ready?: RegExp } = {}): Promise<Proc> {
  const ready = opts.ready ?? /listening on (http:\/\/[^\s]+)/;
  const [command, args] = opts.npm ? ['npm', ['start']] : [process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve']];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...cleanEnv(), PORT: '0', HOST: '127.0.0.1', BULB_WEBHOOK_ALLOW_PRIVATE: 'true', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap); // never leave a server behind if the test process dies
  child.once('exit', () => process.off('exit', reap));
  let out = '';
  child.stdout!.on('data', (b) => (out += b));
  child.stderr!.on('data', (b) => (out += b));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const listening = new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`Bulb did not listen within 240 s:\n${out}`)), 240_000);
    const check = () => {
      const m = ready.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1] ?? '');
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    void exited.then((code) => {
      clearTimeout(deadline);
      reject(new Error(`Bulb exited with ${code} before listening:\n${out}`));
    });
  });
  let url: string;
  try {
    url = await listening;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    child,
    url,
    output: () => out,
    async waitFor(re) {
      for (let i = 0; i < 300 && !re.test(out); i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(out, re);
    },
    async stop(signal = 'SIGTERM') {
      child.kill(signal);
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 25_000).unref());
      const code = await Promise.race([exited, timer]);
      if (code === 'timeout') {
        child.kill('SIGKILL');
        throw new Error(`Bulb did not exit within 25 s of ${signal}:\n${out}`);
      }
      return code;
    },
  };
}

/**
 * Runs `src/main.ts <command>` with a clean environment plus env until it exits (killed after 120 s, so a start that
 * should have refused cannot hang the suite): its exit code and output.
 */
export function runBulb(env: Record<string, string>, command = 'serve'): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', command], { cwd: ROOT, env: { ...cleanEnv(), PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  return new Promise((resolve) => child.on('exit', (code) => (clearTimeout(timer), resolve({ code, out }))));
}

/** This process's environment without Bulb's settings (BULB_*, DATABASE_URL, PORT, HOST): a child gets only the test's. */
function cleanEnv(): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BULB_') && k !== 'DATABASE_URL' && k !== 'PORT' && k !== 'HOST'));
}
