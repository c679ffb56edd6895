// Commits that survive a machine's crash on the embedded database. PGlite starts PostgreSQL with fsync off (`-F`),
// and its Node file system (Emscripten's NODEFS) has no fsync and makes fdatasync a no-op: a commit reached the
// operating system's page cache, so it survived the process being killed, but not a power cut or a kernel crash,
// after which the data folder could hold data pages newer than the WAL that describes them (a corrupt cluster).
// Here fsync is on, WAL is flushed with fsync() (the one sync call that reaches the file system), and NODEFS's
// fsync is the real fsync(2) of the file or folder. The cost is a WAL flush per commit, as on PostgreSQL.
import fs from 'node:fs';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

/** PGlite's start parameters with fsync on (no `-F`) and WAL flushed by fsync(). */
export const DURABLE_START_PARAMS = [...PGlite.defaultStartParams.filter((p) => p !== '-F'), '-c', 'wal_sync_method=fsync'];

interface EmscriptenStream {
  nfd?: number;
}
interface EmscriptenModule {
  NODEFS: {
    stream_ops: { fsync?: (stream: EmscriptenStream) => number };
    tryFSOperation: <T>(f: () => T) => T;
  };
}

/** NODEFS whose fsync reaches the disk (files and folders: NODEFS opens both with a real descriptor). */
class DurableNodeFS extends NodeFS {
  async init(pg: PGlite, opts: Parameters<NodeFS['init']>[1]) {
    const r = await super.init(pg, opts);
    const preRun = [...((r.emscriptenOpts.preRun as ((m: EmscriptenModule) => void)[] | undefined) ?? [])];
    preRun.push((m) => {
      m.NODEFS.stream_ops.fsync = (stream) => {
        if (stream.nfd !== undefined) m.NODEFS.tryFSOperation(() => fs.fsyncSync(stream.nfd!));
        return 0;
      };
    });
    return { emscriptenOpts: { ...r.emscriptenOpts, preRun } as typeof r.emscriptenOpts };
  }
}

/** What PGlite.create needs for a data folder ('memory://' is left as PGlite makes it: nothing to sync). */
export function durableOptions(dataDir: string): Pick<PGliteOptions, 'dataDir' | 'fs' | 'startParams'> {
  if (dataDir.startsWith('memory://')) return { dataDir };
  return { fs: new DurableNodeFS(dataDir), startParams: DURABLE_START_PARAMS };
}
