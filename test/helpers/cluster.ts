// PostgreSQL clusters of a test's own (initdb, a streaming standby by pg_basebackup, promotion), on ports of their
// own, as the postgres user when the tests run as root; and a TCP proxy the test points at one or the other, as a
// managed service's DNS or virtual IP switch would. Nothing here touches the machine's shared server.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CI } from './db.ts';

function binDir(): string | undefined {
  const r = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const dir = r.status === 0 ? r.stdout.trim() : undefined;
  return dir && fs.existsSync(path.join(dir, 'initdb')) ? dir : undefined;
}

/** Whether clusters can be made here; prints the skip (missing server binaries fail with CI=true). */
export function clustersAvailable(): boolean {
  if (binDir()) return true;
  if (CI) throw new Error('CI=true but PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) are missing');
  console.log('# SKIP failover tests: no PostgreSQL server binaries (pg_config --bindir has no initdb)');
  return false;
}

const asRoot = process.getuid?.() === 0;
function run(bin: string, args: string[]): string {
  const exe = path.join(binDir()!, bin);
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', exe, ...args]] : [exe, args];
  return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

export interface Cluster {
  dir: string;
  port: number;
  url(database: string): string;
  /** Appends settings to postgresql.conf (read at the next start or reload). */
  configure(lines: string[]): void;
  start(): void;
  /** `immediate`: the server dies as in a crash (no shutdown checkpoint, clients cut). */
  stop(mode?: 'fast' | 'immediate'): void;
  promote(): void;
}

function cluster(dir: string, port: number, root: string): Cluster {
  return {
    dir,
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    configure(lines) {
      fs.appendFileSync(path.join(dir, 'postgresql.conf'), '\n' + lines.join('\n') + '\n');
    },
    start() {
      run('pg_ctl', ['-D', dir, '-l', path.join(root, `${path.basename(dir)}.log`), '-w', '-t', '60', '-o', `-p ${port} -k ${root} -c listen_addresses=127.0.0.1`, 'start']);
    },
    stop(mode = 'fast') {
      run('pg_ctl', ['-D', dir, '-m', mode, '-w', 'stop']);
    },
    promote() {
      run('pg_ctl', ['-D', dir, '-w', '-t', '60', 'promote']);
    },
  };
}

export interface Pair {
  root: string;
  primary: Cluster;
  /** Made by standby() once the primary holds what the test wants copied. */
  standby(): Promise<Cluster>;
  /** Stops both (immediately) and removes their files. */
  destroy(): void;
}

/** A new primary (trust auth, replication allowed from loopback), started. */
export async function primaryCluster(): Promise<Pair> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bulb-cluster-'));
  fs.chmodSync(root, 0o777);
  const primary = cluster(path.join(root, 'primary'), await freePort(), root);
  run('initdb', ['-D', primary.dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  primary.configure(['wal_level = replica', 'max_wal_senders = 5', 'fsync = on', 'shared_buffers = 32MB']);
  primary.start();
  const made: Cluster[] = [primary];
  return {
    root,
    primary,
    async standby() {
      const s = cluster(path.join(root, 'standby'), await freePort(), root);
      // --checkpoint=fast: the backup starts at once instead of after a spread checkpoint (up to
      // checkpoint_completion_target × checkpoint_timeout, a minute or more on a fresh primary).
      run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', s.dir, '-X', 'stream', '-R', '--checkpoint=fast']);
      // The standby names itself, so the primary can wait for it (synchronous_standby_names).
      fs.appendFileSync(
        path.join(s.dir, 'postgresql.auto.conf'),
        `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=standby'\n`,
      );
      s.start();
      made.push(s);
      return s;
    },
    destroy() {
      for (const c of made) {
        try {
          c.stop('immediate');
        } catch {
          /* already stopped */
        }
      }
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface Switch {
  port: number;
  url(database: string): string;
  /** From now on connections go to `port`; every open one is cut (as when a virtual IP moves). */
  pointAt(port: number | undefined): void;
  close(): Promise<void>;
}

/** A TCP proxy: what Bulb's DATABASE_URL names. Pointed at nothing, it refuses (closes) every connection. */
export async function startSwitch(target: number): Promise<Switch> {
  let to: number | undefined = target;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (to === undefined) return client.destroy();
    const upstream = net.connect(to, '127.0.0.1');
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    pointAt(p) {
      to = p;
      for (const s of open) s.destroy();
      open.clear();
    },
    async close() {
      to = undefined;
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
