// A real PgBouncer (Debian's package) in transaction mode in front of the test PostgreSQL, started by a test.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CI, PG_URL } from './db.ts';

export const PGBOUNCER = process.env.PGBOUNCER_PATH || '/usr/sbin/pgbouncer';

export interface Bouncer {
  port: number;
  /** The pgbouncer process (for its CPU time in benches). */
  pid: number;
  /** The URL of `database` through the pooler. */
  url(database: string): string;
  /** PgBouncer's admin console (SHOW STATS …). */
  adminUrl: string;
  stop(): Promise<void>;
}

/** Whether the tests can run; prints the skip (a missing PgBouncer fails with CI=true). */
export function pgbouncerAvailable(): boolean {
  if (fs.existsSync(PGBOUNCER)) return true;
  if (CI) throw new Error(`CI=true but PgBouncer is missing at ${PGBOUNCER} (.ci/run installs Debian's pgbouncer)`);
  console.log(`# SKIP PgBouncer tests: no ${PGBOUNCER} (apt-get install pgbouncer; mandatory with CI=true)`);
  return false;
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1', () => (c.destroy(), resolve(true)));
    c.on('error', () => resolve(false));
  });
}

export async function startPgBouncer(opts: { poolSize?: number; settings?: string[] } = {}): Promise<Bouncer> {
  const pgUrl = new URL(PG_URL);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-pgbouncer-'));
  fs.chmodSync(dir, 0o777); // PgBouncer refuses to run as root: as root it runs as postgres, which writes here
  const port = await freePort();
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${decodeURIComponent(pgUrl.username) || 'postgres'}" ""\n`);
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${pgUrl.hostname} port=${pgUrl.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      "unix_socket_dir = ",
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `admin_users = ${decodeURIComponent(pgUrl.username) || 'postgres'}`,
      'pool_mode = transaction',
      `default_pool_size = ${opts.poolSize ?? 10}`,
      'max_client_conn = 500',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      ...(opts.settings ?? []),
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  const args = [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')];
  const child: ChildProcess = spawn(PGBOUNCER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b) => (out += b));
  child.stderr!.on('data', (b) => (out += b));
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  for (let i = 0; !(await reachable(port)); i++) {
    if (i > 100 || child.exitCode !== null) {
      child.kill('SIGKILL');
      const log = fs.existsSync(path.join(dir, 'pgbouncer.log')) ? fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8') : '';
      throw new Error(`PgBouncer did not start:\n${out}\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const url = (database: string) => {
    const u = new URL(PG_URL);
    u.port = String(port);
    u.pathname = '/' + database;
    return u.toString();
  };
  return {
    port,
    pid: child.pid!,
    url,
    adminUrl: url('pgbouncer'),
    async stop() {
      process.off('exit', reap);
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
      spawnSync('rm', ['-rf', dir]);
    },
  };
}
