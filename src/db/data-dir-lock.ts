// One process at a time on an embedded database folder (BULB_DATA_DIR). PGlite is one PostgreSQL in the process
// that opens it, with no lock of its own: a second server started on the same folder (a second `npm start`) ran
// migrations against files the first was writing, then died with a WASM "Aborted()" or EADDRINUSE, and two writers
// on one folder can corrupt it. The folder holds the owner's pid in `bulb.pid`, made with O_EXCL; a pid file whose
// process is gone (a crash, SIGKILL) is taken over.
//
// The takeover is made under `bulb.pid.takeover` (also O_EXCL, holding the taker's pid): two processes finding one
// stale file removed it in turn, the second removing the file the first had just made, and both went on as owners.
// The taker reads `bulb.pid` again under the guard and takes it only if it still names the process found gone.
import fs from 'node:fs';
import path from 'node:path';

export class DataDirInUse extends Error {}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, another user's
  }
}

const pidIn = (file: string): number | undefined => {
  try {
    const pid = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
};

const create = (file: string): boolean => {
  try {
    fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
};

/** Test seams: called between finding the pid file stale and taking it over. */
export const takeoverHooks: { beforeTakeover?: () => void } = {};

/** Takes the folder for this process; returns the release. Throws DataDirInUse while another live process holds it. */
export function lockDataDir(dir: string): () => void {
  const file = path.join(dir, 'bulb.pid');
  const inUse = (pid: number, how = 'in use by') =>
    new DataDirInUse(`BULB_DATA_DIR ${dir} is ${how} process ${pid}${pid === process.pid ? ' (this one)' : ''}: one server at a time on an embedded database (stop it first, give this one another BULB_DATA_DIR, or share a PostgreSQL with DATABASE_URL)`);
  if (!create(file)) {
    const stale = pidIn(file);
    if (stale !== undefined && alive(stale)) throw inUse(stale);
    takeoverHooks.beforeTakeover?.();
    takeOver(file, stale, inUse);
  }
  return () => {
    if (pidIn(file) === process.pid) fs.rmSync(file, { force: true });
  };
}

/** Replaces a pid file naming `stale` (a process gone, or unreadable) with this process's, under the takeover guard. */
function takeOver(file: string, stale: number | undefined, inUse: (pid: number, how?: string) => DataDirInUse): void {
  const guard = `${file}.takeover`;
  if (!create(guard)) {
    const taker = pidIn(guard);
    if (taker !== undefined && alive(taker)) throw inUse(taker, 'being taken over by');
    // A taker that died during its takeover: its guard is stale too.
    fs.rmSync(guard, { force: true });
    if (!create(guard)) throw inUse(pidIn(guard) ?? 0, 'being taken over by');
  }
  try {
    const now = pidIn(file);
    if (now !== stale && now !== undefined && alive(now)) throw inUse(now);
    fs.rmSync(file, { force: true });
    if (!create(file)) throw inUse(pidIn(file) ?? 0);
  } finally {
    fs.rmSync(guard, { force: true });
  }
}
