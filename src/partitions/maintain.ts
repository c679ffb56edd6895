// Partition maintenance, one job under src/scheduler.ts (docs/partitioning.md): creates each partitioned table's
// days ahead, and retention by detaching and dropping whole partitions (no mass DELETE).
import { sqlState, type Db, type Queryable } from '../db/db.ts';
import { startLoop } from '../loop.ts';
import { DAYS_AHEAD, EVENTS, PARTITIONED, type RetentionConfig } from './tables.ts';
import { addDays, createPartition, databaseNow, dayOf, daysInDefault, dropRetired, partitionName, partitions, pendingNeedingEvents, rangeFor, replaysNeedingEvents, retirePartition, RETIRED_PREFIX, type Partition, type Retirement } from './store.ts';

/**
 * Creates the partitions of today and the DAYS_AHEAD days after it that are missing, and of every day the DEFAULT
 * partition holds rows of (moving them in). Each partition spans `spanDays` days (BULB_PARTITION_DAYS; aligned,
 * cut at the partitions already there: store.ts rangeFor). Days before a table's cutover belong to its legacy
 * partition. Returns the partitions created (`created`, filled as they are: what a pass that fails partway made).
 */
export async function ensurePartitions(db: Db, now = new Date(), busy: string[] = [], spanDays = 1, created: string[] = []): Promise<string[]> {
  for (const t of PARTITIONED) {
    for (const range of rangesToCreate(await partitions(db, t), now, await daysInDefault(db, t), spanDays)) {
      const name = partitionName(t, range.from);
      let made = false;
      // A busy one: the next pass retries. One another process created meanwhile (two starting at once): not ours.
      if (await orBusy(async () => (made = (await createPartition(db, t, range)) !== null), name, busy) && made) created.push(name);
    }
  }
  return created;
}

/**
 * The ranges ensurePartitions creates for one table (no I/O): for each day in `inDefault`, then today and the
 * DAYS_AHEAD days after it, not covered by `existing` nor by a range chosen before it, its rangeFor. The days a
 * stopped job never reached and no row holds stay without a partition (a row written there later waits in DEFAULT
 * for the next pass).
 */
export function rangesToCreate(existing: Partition[], now: Date, inDefault: Date[], spanDays = 1): { from: Date; to: Date }[] {
  const parts = [...existing];
  const covered = (day: Date) => parts.some((p) => !p.isDefault && (p.from === null || p.from <= day) && p.to !== null && p.to > day);
  const today = dayOf(now);
  const days = [...inDefault];
  for (let i = 0; i <= DAYS_AHEAD; i++) days.push(addDays(today, i));
  const ranges: { from: Date; to: Date }[] = [];
  for (const day of days) {
    if (covered(day)) continue;
    const range = rangeFor(day, spanDays, parts);
    ranges.push(range);
    parts.push({ name: '', ...range, isDefault: false }); // covered for the rest of this pass
  }
  return ranges;
}

export interface RetentionResult {
  /** Partitions detached and dropped, per table. */
  dropped: { table: string; partition: string; pendingExpired: number }[];
  /** Events partitions past retention kept because pending deliveries or unfinished replays need their events. */
  deferred: { partition: string; pending: number; replays: number }[];
  /** Partitions left for the next pass: the table was busy past lock_timeout. */
  busy: string[];
  /** Detached tables an earlier pass left (it stopped between the detach and the drop), dropped by this one. */
  leftover?: string[];
}

/**
 * Runs fn; false if it gave up waiting for a lock (lock_timeout, or chosen as a deadlock's victim: the name goes to
 * `busy`, and the job runs again within BUSY_RETRY_MS).
 */
async function orBusy(fn: () => Promise<unknown>, name: string, busy: string[]): Promise<boolean> {
  try {
    await fn();
    return true;
  } catch (err) {
    const state = sqlState(err);
    if (state !== '55P03' && state !== '40P01') throw err;
    busy.push(name);
    return false;
  }
}

/**
 * Retention: drops every partition whose whole range is older than its table's window (tables.ts), the legacy one
 * included once its cutover is. A deliveries partition goes with its pending deliveries (past the window, they
 * expire: counted in pendingExpired); an events partition waits while a pending delivery needs one of its events
 * (bounded: such a delivery expires with its own partition) or an unfinished replay has yet to walk its ids. Two
 * phases: every partition due is detached first (retirePartition: catalog work, so a day leaves the three tables within
 * milliseconds of each other), then the detached tables are dropped (dropRetired: the removal of their files, which
 * follows their size and holds no lock on a parent). The benches (bench/retention.ts, bench/volume*.ts) time this call
 * and each phase. `result` is filled as the pass goes (what a pass that fails partway did).
 */
export async function runRetention(db: Db, config: RetentionConfig, now = new Date(), result: RetentionResult = { dropped: [], deferred: [], busy: [] }): Promise<RetentionResult> {
  for (const t of PARTITIONED) {
    const horizon = addDays(now, -t.keepDays(config));
    for (const p of await partitions(db, t)) {
      if (p.isDefault || p.to === null || p.to > horizon) continue;
      // An events partition is kept while a pending delivery needs one of its events (the deliveries retired above are
      // out of webhook_deliveries already: they need nothing) or an unfinished replay has yet to walk its ids (a
      // replay waiting behind others missed them silently), decided in the detach's transaction (retirePartition).
      let pending = 0;
      let replays = 0;
      const keep = t === EVENTS
        ? async (tx: Queryable) => (pending = await pendingNeedingEvents(tx, p.name)) + (replays = await replaysNeedingEvents(tx, p.name)) > 0
        : undefined;
      let done: Retirement | undefined;
      if (!(await orBusy(async () => (done = await retirePartition(db, t, p.name, keep)), p.name, result.busy)) || !done) continue;
      if (done.state === 'retired') result.dropped.push({ table: t.table, partition: p.name, pendingExpired: done.pendingExpired });
      else if (done.state === 'kept') result.deferred.push({ partition: p.name, pending, replays });
    }
  }
  result.leftover = (await dropRetired(db)).filter((name) => !result.dropped.some((d) => `${RETIRED_PREFIX}${d.partition}` === name)); // this pass's, and any a pass stopped before dropping
  return result;
}

/** Retention, and the days a partition spans (BULB_PARTITION_DAYS; 1 when not given). */
export type PartitionConfig = RetentionConfig & { partitionDays?: number };

/** One pass of the job: partitions ahead first (an insert must find its day), then retention. `now`: the database's. */
export async function maintainPartitions(db: Db, config: PartitionConfig, log: (message: string) => void, now?: Date): Promise<RetentionResult & { created: string[] }> {
  now ??= await databaseNow(db);
  const busy: string[] = [];
  const created: string[] = [];
  const r: RetentionResult = { dropped: [], deferred: [], busy: [] };
  // Retention runs whatever became of the creation; the creation's failure is reported once it has. What the pass did
  // is said even when it stops partway (a connection lost mid-pass: its creations and detaches are committed, one
  // transaction each; until 2026-11-29 they went unsaid, pending deliveries expired included; a probe).
  let failed: { err: unknown } | undefined;
  try {
    await ensurePartitions(db, now, busy, config.partitionDays, created);
  } catch (err) {
    failed = { err };
  }
  try {
    await runRetention(db, config, now, r);
  } catch (err) {
    failed ??= { err };
  }
  r.busy.push(...busy);
  // What a pass did is said (only when it did something): that retention ran, and which days it dropped.
  if (created.length) log(`partitions: created ${created.join(', ')}`);
  if (r.dropped.length) log(`retention: ${failed ? 'detached (dropped by the next pass if not by this one)' : 'dropped'} ${r.dropped.map((d) => d.partition).join(', ')}`);
  if (r.leftover?.length) log(`retention: dropped ${r.leftover.join(', ')}, detached by an earlier pass that stopped (or by another worker's pass meanwhile)`);
  if (r.busy.length) log(`partitions: ${r.busy.join(', ')} left for the next pass (the table was busy: a lock not had in time, or a deadlock)`);
  for (const d of r.dropped) if (d.pendingExpired > 0) log(`retention: ${d.pendingExpired} pending deliveries past BULB_WEBHOOK_RETENTION_DAYS expired with ${d.partition}`);
  for (const d of r.deferred) log(`retention: ${d.partition} kept, ${d.pending} pending deliveries and ${d.replays} unfinished replays need its events`);
  if (failed) throw failed.err;
  return { ...r, created };
}

/**
 * The job: a pass 10 s after start, then every `everyMs` (the scheduler's room for it, src/scheduler.ts). Not at
 * once: a fresh database's first pass creates ~18 tables (350 ms on PGlite, whose one session requests wait
 * behind), and the DEFAULT partitions take any row meanwhile.
 */
export function startPartitionMaintenance(db: Db, config: PartitionConfig, everyMs: number, log: (message: string) => void, onError: (err: unknown) => void): () => Promise<void> {
  // A pass that left work (a busy table) or failed runs again soon, not a whole period later: a day's partition not
  // made leaves that day's rows in the DEFAULT partition until a pass makes it.
  return startLoop(() => maintainPartitions(db, config, log), (last) => (last === undefined || last.busy.length > 0 ? Math.min(everyMs, BUSY_RETRY_MS) : everyMs), onError, 10_000);
}

/** How soon a pass that left work for the next one (or failed) is run again. */
export const BUSY_RETRY_MS = 30_000;
