// Command line: `serve` (default) runs the API and/or webhook worker per BULB_ROLE; `migrate` only migrates;
// `reencrypt` moves every stored secret to BULB_SECRET_KEY after a key rotation (SPEC §15).
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { DataDirUnusable, openDb } from './db/open.ts';
import type { Db } from './db/db.ts';
import { databaseUnavailable } from './db/unavailable.ts';
import { DataDirInUse } from './db/data-dir-lock.ts';
import { migrate } from './db/migrate.ts';
import { makeServices } from './services.ts';
import { buildApp } from './http/app.ts';
import { uploadsEnded } from './imports/receive.ts';
import { startMetricsServer } from './http/metrics-server.ts';
import { LATEST } from './http/versioning/versions.ts';
import { bootstrapAdminKey } from './auth/service.ts';
import { backgroundJobs, startJobs, type Stop } from './scheduler.ts';
import { jobLog } from './job-log.ts';
import { resolveSecretBox } from './secrets/keys.ts';
import { prepareSecrets, reencryptAll } from './secrets/startup.ts';
import { refuseEventsAhead } from './db/restored.ts';

let config: Config | undefined;

/** What the start says, at the level each step chooses. */
interface Say {
  info(line: string): void;
  warn(line: string): void;
}

async function main() {
  const cmd = process.argv[2] ?? 'serve';
  config = loadConfig();
  if (!['serve', 'migrate', 'reencrypt'].includes(cmd)) throw new ConfigError(`unknown command "${cmd}" (use serve, migrate or reencrypt)`);
  const keys = cmd === 'migrate' ? undefined : resolveSecretBox(config); // refuses before touching the database
  // What a server says as it runs is JSON lines at BULB_LOG_LEVEL, as its requests and jobs are (a log pipeline took
  // the plain lines apart until 2026-11-29); the start banner and the first admin key stay plain text, for a person. The
  // one-off commands (migrate, reencrypt) talk to the person running them: plain text.
  const log = cmd === 'serve' ? jobLog(config) : undefined;
  // Warnings (a key file others can read, a folder left open to them, a database not reachable yet) are said at warn
  // by the step that finds them, so that BULB_LOG_LEVEL=warn still shows them.
  const say: Say = log
    ? { info: (line) => log(line), warn: (line) => log.warn?.(line, {}) }
    : { info: (line) => console.log(line), warn: (line) => console.warn(line) };
  const { db, applied } = await openAndMigrate(config, say);
  if (cmd === 'migrate') {
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    await db.close();
    return;
  }
  const c = config;
  if (cmd === 'serve') await untilAvailable(c, say, () => refuseEventsAhead(db));
  const secrets = await untilAvailable(c, say, () => prepareSecrets(db, c, keys));
  if (secrets.sealed) say.info(`sealed ${secrets.sealed} secret value(s) stored in clear by an older Bulb`);
  if (cmd === 'reencrypt') {
    const n = await reencryptAll(db, secrets.box);
    console.log(`re-encrypted ${n} secret value(s); every stored secret is now under key id ${secrets.box.currentKeyId}`);
    await db.close();
    return;
  }

  const services = makeServices(db, config);
  const { created, revokedAt } = await untilAvailable(c, say, () => bootstrapAdminKey(db, c.adminKey));
  const stops: Stop[] = [];
  let address = '';
  if (config.role !== 'worker') {
    const app = await buildApp(services);
    address = await app.listen({ port: config.port, host: config.host });
    stops.push(async () => {
      // Keep-alive connections are told to close before the idle ones are closed: for DRAIN_GRACE_MS every answer says
      // Connection: close while the server still listens. Closed at once, a connection whose next request was already
      // on its way (not yet read, so idle to the server) was reset, the request unanswered (found by a probe: 3–19 of
      // 20 keep-alive clients posting in a loop got ECONNRESET for a create they could not know the fate of).
      app.drain();
      if ((await new Promise<number>((r) => app.server.getConnections((_e, n) => r(n ?? 0)))) > 0) await sleep(DRAIN_GRACE_MS);
      // A client that keeps a request going (a slow upload or export read) held the drain until the 25 s kill, exit 1
      // (found by a probe): past HTTP_DRAIN_MS its connection is cut, the handler sees it (an upload is kept as failed).
      const cut = setTimeout(() => app.server.closeAllConnections(), HTTP_DRAIN_MS);
      await app.close();
      clearTimeout(cut);
      await uploadsEnded();
    });
  }
  let metricsUrl = '';
  if (config.metricsPort !== undefined) {
    const m = await startMetricsServer(config.host, config.metricsPort);
    metricsUrl = m.url;
    stops.push(m.close);
  }
  // Background jobs (delivery, housekeeping, duplicates, imports, replays, …): one scheduler, src/scheduler.ts; JSON logs.
  stops.push(...(await startJobs(backgroundJobs(db, config, log!), config.role)));
  const where = config.databaseUrl ? 'PostgreSQL' : `embedded PGlite in ${config.dataDir}`;
  // Fastify answers a wildcard HOST with one of the machine's addresses (127.0.0.1): say what was asked for.
  const shown = address && isWildcard(config.host) ? `${address.replace(/\/\/[^/]+:/, `//${config.host.includes(':') ? `[${config.host}]` : config.host}:`)} (every interface)` : address;
  console.log(`Bulb ${config.role === 'worker' ? 'worker running' : `listening on ${shown}`} (role ${config.role}, database: ${where})`);
  if (address) {
    const browse = browsable(address);
    console.log(`  console:        ${browse}/admin\n  API reference:  ${browse}/docs`);
  }
  if (metricsUrl) console.log(`  metrics:        ${metricsUrl}/metrics (and /health)`);
  if (config.role === 'api' && !config.databaseUrl) {
    console.warn('warning: BULB_ROLE=api on the embedded database: no other process can open it, so nothing will send webhooks, apply imports or run housekeeping. Use BULB_ROLE=all, or PostgreSQL (DATABASE_URL) for separate workers.');
  }
  (secrets.warning ? say.warn : say.info)(secrets.notice);
  if (created) {
    console.log(`\nFirst start: created an admin API key. It is shown only this once; keep it safe:\n\n  ${created}\n` +
      (address ? `\nTry:  curl -H "Authorization: Bearer ${created}" ${browsable(address)}/api/${LATEST}/crm/customers\n` : ''));
  } else if (revokedAt) {
    console.warn(`BULB_ADMIN_KEY names an API key revoked at ${revokedAt.toISOString()}: it stays revoked. Set BULB_ADMIN_KEY to a new value for a new admin key, or remove it.`);
  } else if (!config.adminKey) {
    console.log('API keys exist already (an admin key is printed on the first start only). Set BULB_ADMIN_KEY for an admin key of your choosing.');
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say.info(`${signal}: draining`);
    const force = setTimeout(() => process.exit(1), 25_000);
    force.unref();
    // HTTP and the webhook worker drain in parallel (the worker finishes or releases its attempts). A drain waiting on
    // a database that stopped answering (a statement in flight waits up to its deadline, 60 s) is cut at DRAIN_MS: what
    // it holds is left to its leases, which run out, and another worker (or this one restarted) takes it; exit 0, as
    // SPEC §9 asks. Before, the 25 s kill ended it with exit 1.
    const drained = await within(Promise.all(stops.map((stop) => stop().catch((err) => log!(`${signal}: a part failed to drain`, err)))), DRAIN_MS);
    if (!drained) log!.warn?.(`${signal}: the drain was cut after ${DRAIN_MS / 1000} s (the database did not answer); what is held is left to its leases`, {});
    else say.info(`${signal}: drained; exiting`);
    await within(db.close().catch(() => {}), 1_000);
    clearTimeout(force);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * Opens the database and migrates it. A PostgreSQL that cannot serve yet (not listening, starting up, a failover under
 * way: databaseUnavailable) is tried again (untilAvailable), so that a deployment starting Bulb beside its database
 * does not depend on which comes up first.
 */
function openAndMigrate(config: Config, say: Say): Promise<{ db: Db; applied: string[] }> {
  return untilAvailable(config, say, async () => {
    const db = await openDb({ ...config, log: say.info, warn: say.warn });
    try {
      return { db, applied: await migrate(db) };
    } catch (err) {
      await db.close().catch(() => {});
      throw err;
    }
  });
}

/**
 * Runs a start-up step, trying it again while the database is unavailable, 0.5 s growing to 10 s apart, for
 * BULB_DATABASE_WAIT_MS (60 s) from its first failure; then the start exits 1. Every step that touches the database
 * before serving goes through it: behind PgBouncer the migrations (on the direct URL) could pass while the pooler still
 * refused logins after a restart (08P01, its server_login_retry), and the next step's refusal ended the start (a probe,
 * 2026-11-29).
 */
async function untilAvailable<T>(config: Config, say: Say, step: () => Promise<T>): Promise<T> {
  let giveUpAt: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      giveUpAt ??= Date.now() + config.databaseWaitMs;
      const left = giveUpAt - Date.now();
      if (!databaseUnavailable(err) || left <= 0) throw err;
      const wait = Math.min(500 * 2 ** attempt, 10_000, left);
      say.warn(`database not reachable (${unavailableWords(err)}); trying again in ${(wait / 1000).toFixed(1)} s (BULB_DATABASE_WAIT_MS: ${Math.ceil(left / 1000)} s left)`);
      await sleep(wait);
    }
  }
}

const unavailableWords = (err: unknown) => (err as Error).message || (err as { code?: string }).code;

/** How long the server goes on listening and answering with Connection: close after SIGTERM (when connections are open). */
const DRAIN_GRACE_MS = 2_000;
/** How long a SIGTERM waits for HTTP requests in flight, then for the whole drain; under SPEC §9's 25 s. */
const HTTP_DRAIN_MS = 18_000;
const DRAIN_MS = 22_000;

/** Whether `p` settled within `ms` (it goes on either way). */
function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]).finally(() => clearTimeout(timer));
}

const isWildcard = (host: string) => host === '0.0.0.0' || host === '::' || host === '[::]';

/** The listening address as a browser on this machine reaches it (a wildcard address is not one to browse to). */
function browsable(address: string): string {
  const u = new URL(address);
  if (isWildcard(u.hostname) || (config && isWildcard(config.host))) u.hostname = 'localhost';
  return u.origin;
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(`configuration error: ${err.message}`);
    process.exit(2);
  }
  if (err instanceof DataDirInUse || err instanceof DataDirUnusable) {
    console.error(err.message);
    process.exit(2);
  }
  const named = config && startupProblem(err, config);
  if (named) {
    console.error(`start failed: ${named}`);
    process.exit(2);
  }
  // Still unavailable when the wait ran out (or with BULB_DATABASE_WAIT_MS=0): one line naming the settings, exit 1 (a
  // raw stack trace until 2026-11-29). The driver's words name the host and port, never a password.
  if (config?.databaseUrl && databaseUnavailable(err)) {
    const waited = config.databaseWaitMs > 0 ? ` after trying for ${Math.round(config.databaseWaitMs / 1000)} s (BULB_DATABASE_WAIT_MS)` : '';
    console.error(`start failed: the database is not reachable${waited}: ${unavailableWords(err)}; check DATABASE_URL${config.databaseDirectUrl ? ' and BULB_DATABASE_DIRECT_URL' : ''} and that PostgreSQL is running`);
    process.exit(1);
  }
  console.error(err);
  process.exit(1);
});

/**
 * A start that failed on a setting the operator gave (a port in use, a host or data folder that cannot be used, a
 * database that does not exist): one line naming the setting, exit 2. Until 2026-11-28 a raw stack trace, exit 1.
 */
function startupProblem(err: unknown, c: Config): string | undefined {
  const e = err as NodeJS.ErrnoException & { hostname?: string };
  if (e?.code === 'EADDRINUSE') {
    // The two settings naming one port: the metrics listener found the API's own (no other process holds it).
    if (c.metricsPort === c.port) return `BULB_METRICS_PORT and PORT are both ${c.port}: set BULB_METRICS_PORT to another port (or leave it unset)`;
    const name = (e as { port?: number }).port === c.metricsPort ? 'BULB_METRICS_PORT' : 'PORT';
    return `${name} ${name === 'PORT' ? c.port : c.metricsPort} on HOST ${c.host} is in use by another process: stop it, or set ${name} to a free port`;
  }
  if (e?.code === 'EADDRNOTAVAIL' || (e?.syscall === 'getaddrinfo' && e.hostname === c.host)) return `HOST ${c.host} is not an address of this machine (${e.code})`;
  if (e?.code === '3D000' && c.databaseUrl) return `DATABASE_URL names a database that does not exist (${e.message}): create it first (createdb)`;
  // The server's words name the user, never the password (a raw stack trace, exit 1, until 2026-11-29).
  if ((e?.code === '28P01' || e?.code === '28000') && c.databaseUrl) return `DATABASE_URL's user or password is refused by the server (${e.message}): check them and pg_hba.conf`;
  // The folder itself, a file in it, or a parent it had to be created under.
  const dataDir = path.resolve(c.dataDir);
  const at = typeof e?.path === 'string' ? path.resolve(e.path) : undefined;
  if (!c.databaseUrl && at && (at.startsWith(dataDir) || dataDir.startsWith(at)) && ['EACCES', 'EPERM', 'ENOTDIR', 'EROFS', 'ENOSPC', 'EEXIST'].includes(e.code ?? '')) {
    return `BULB_DATA_DIR ${c.dataDir} cannot be created or written by this user (${e.code} on ${e.path}): give a folder it may create and write, or fix its owner and mode`;
  }
  return undefined;
}
