// One process at a time on an embedded database folder (BULB_DATA_DIR). PGlite is one PostgreSQL in the process
// that opens it, with no lock of its own: a second server started on the same folder (a second `npm start`) ran
// migrations against files the first was writing, then died with a WASM "Aborted()" or EADDRINUSE, and two writers
// on one folder can corrupt it. The folder holds the owner's pid in `bulb.pid`, made with O_EXCL; a pid file whose
// process is gone (a crash, SIGKILL) is taken over.
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

/** Takes the folder for this process; returns the release. Throws DataDirInUse while another live process holds it. */
export function lockDataDir(dir: string): () => void {
  const file = path.join(dir, 'bulb.pid');
  for (let tries = 0; ; tries++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 0) throw err;
      const pid = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
        throw new DataDirInUse(`BULB_DATA_DIR ${dir} is in use by process ${pid}${pid === process.pid ? ' (this one)' : ''}: one server at a time on an embedded database (stop it first, give this one another BULB_DATA_DIR, or share a PostgreSQL with DATABASE_URL)`);
      }
      fs.rmSync(file, { force: true }); // its process is gone: a stale file
    }
  }
  return () => {
    try {
      if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.rmSync(file, { force: true });
    } catch { /* gone already */ }
  };
}
