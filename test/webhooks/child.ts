// Spawns `node --import tsx src/main.ts serve` as a child process on a test PostgreSQL database.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { TEST_SECRET_KEY } from '../helpers/db.ts';

const root = path.resolve(import.meta.dirname, '../..');

export interface Child {
  proc: ChildProcess;
  /** HTTP base URL when the role serves the API. */
  url?: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function spawnBulb(env: Record<string, string>): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    cwd: root,
    env: { ...process.env, PORT: '0', BULB_LOG_LEVEL: 'silent', BULB_ADMIN_KEY: 'test-admin-key-0123456789abcdef', BULB_SECRET_KEY: TEST_SECRET_KEY, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  const url = await new Promise<string | undefined>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`child did not start: ${out}`)), 30_000);
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m || /worker running/.test(out)) {
        clearTimeout(t);
        resolve(m?.[1]);
      }
    };
    proc.stdout!.on('data', check);
    void exited.then(() => {
      clearTimeout(t);
      reject(new Error(`child exited early: ${out}`));
    });
  });
  return { proc, url, output: () => out, exited };
}
