// SQL of partition maintenance (docs/partitioning.md): the partitions of a table and their bounds from the catalog,
// creating a day's partition, detaching and dropping one, and what retention checks before a drop.
import { sqlState, type Db, type Queryable } from '../db/db.ts';
import { DELIVERIES, type PartitionedTable } from './tables.ts';

/** Partition maintenance moves a backlog and removes whole days' files: no statement deadline (its locks wait 2 s at most). */
const UNBOUNDED = { unbounded: true } as const;

export interface Partition {
  name: string;
  /** null: MINVALUE (the legacy partition) or the DEFAULT partition. */
  from: Date | null;
  to: Date | null;
  isDefault: boolean;
}

const DAY_MS = 86_400_000;

/** The UTC day holding t, as its start. */
export function dayOf(t: Date): Date {
  return new Date(Math.floor(t.getTime() / DAY_MS) * DAY_MS);
}

export function addDays(t: Date, n: number): Date {
  return new Date(t.getTime() + n * DAY_MS);
}

export function partitionName(t: PartitionedTable, day: Date): string {
  return `${t.table}_p${day.toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The partitions of t, with their bounds (read as timestamptz by the server, whatever its TimeZone). */
export async function partitions(db: Queryable, t: PartitionedTable): Promise<Partition[]> {
  const r = await db.query<{ name: string; bound: string; from: Date | null; to: Date | null }>(
    `SELECT c.relname AS name, b.bound,
            (regexp_match(b.bound, 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS "from",
            (regexp_match(b.bound, 'TO \\(''([^'']+)''\\)'))[1]::timestamptz AS "to"
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
      WHERE i.inhparent = $1::regclass
      ORDER BY 3 NULLS FIRST`,
    [t.table],
  );
  return r.rows.map((p) => ({ name: p.name, from: p.from && new Date(p.from), to: p.to && new Date(p.to), isDefault: p.bound === 'DEFAULT' }));
}

/**
 * Where t's kept rows begin: the start of its oldest attached day range, or null while the legacy partition
 * (MINVALUE, a converted deployment's rows) or no range at all is attached. Retention retires whole ranges, so this
 * says what is gone whatever the retention setting was when they went.
 */
export async function keptSince(db: Queryable, t: PartitionedTable): Promise<Date | null> {
  const ranges = (await partitions(db, t)).filter((p) => !p.isDefault);
  if (ranges.length === 0 || ranges.some((p) => p.from === null)) return null;
  return new Date(Math.min(...ranges.map((p) => p.from!.getTime())));
}

/** Days since 2000-01-01 (UTC): partitions of `span` days start at multiples of span from it. */
const ORIGIN_MS = Date.UTC(2000, 0, 1);

/**
 * The range of the partition that should hold `day`: its span's [start, start + span) (aligned on ORIGIN_MS), cut
 * where an existing partition begins or ends (the legacy partition's cutover, days made under another span).
 */
export function rangeFor(day: Date, span: number, existing: Partition[]): { from: Date; to: Date } {
  const start = new Date(ORIGIN_MS + Math.floor((day.getTime() - ORIGIN_MS) / (span * DAY_MS)) * span * DAY_MS);
  let from = start;
  let to = addDays(start, span);
  for (const p of existing) {
    if (p.isDefault) continue;
    if (p.to !== null && p.to <= day && p.to > from) from = p.to;
    if (p.from !== null && p.from > day && p.from < to) to = p.from;
  }
  return { from, to };
}

/**
 * Creates the partition [from, to) (a day, or a span of days: BULB_PARTITION_DAYS): an empty table like the parent,
 * then ATTACH (which takes no lock on the parent that stops its readers and writers; it locks the DEFAULT partition
 * while it checks that none of its rows belongs to the range, and waits for a statement reading that; a range writes
 * may reach holds the writers, below). Rows the DEFAULT partition holds for the range (written
 * while no partition covered it) are moved into the new one first, in the same transaction. lock_timeout: a busy
 * moment is skipped, the next pass tries again. Returns how many rows it moved; null: another process created it, or a range overlapping it.
 */
export async function createPartition(db: Db, t: PartitionedTable, range: { from: Date; to: Date }): Promise<number | null> {
  const name = partitionName(t, range.from);
  const from = range.from.toISOString();
  const to = range.to.toISOString();
  // ATTACH waits for the DEFAULT partition (it checks its rows) holding the referenced tables' lock, and whatever is
  // queued behind it waits too: a report or pg_dump reading the table stalled reads, claims and subscription updates
  // for the whole lock_timeout (2 s per partition, again every 30 s; found by a probe). A range made ahead has days
  // of margin: it gives up after ADVANCE_LOCK_TIMEOUT, and the next pass tries again.
  return db.transaction(async (tx) => {
    // On the database's clock, which writes the rows' times (a worker's own clock hours off took a live day for one
    // made ahead, or the reverse).
    const now = (await databaseNow(tx)).getTime();
    const ahead = range.from.getTime() > now + LIVE_MARGIN_MS;
    await tx.query(`SET LOCAL lock_timeout = '${ahead ? ADVANCE_LOCK_TIMEOUT : '2s'}'`);
    // Two processes starting at once create the same partitions: one table's at a time, and the second finds its range
    // made, or overlapped by a range the other made under another BULB_PARTITION_DAYS (a rolling restart changing it):
    // null, and the next pass works out the ranges again. (Both creating one, the second failed on the catalog's unique
    // index; locked by name, ranges of different spans failed ATTACH with 42P17 "would overlap", a probe, 2026-11-29.)
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`bulb:partition:${t.table}`]);
    const overlaps = (await partitions(tx, t)).some((p) => !p.isDefault && (p.from === null || p.from < range.to) && (p.to === null || p.to > range.from));
    if (overlaps) return null;
    // The tables the parent's foreign keys reference first (webhook_deliveries → webhook_subscriptions): ATTACH takes
    // them (SHARE ROW EXCLUSIVE) after the DEFAULT partition, while a claim holds webhook_subscriptions from its
    // start (its UPDATE of rate_tat) and reads the DEFAULT partition next: a deadlock (found by probing,
    // 2026-11-28), which killed the claim or this pass. Taken first, the order is the claim's.
    const referenced = await tx.query<{ t: string }>(
      `SELECT DISTINCT confrelid::regclass::text AS t FROM pg_constraint WHERE contype = 'f' AND conrelid = $1::regclass ORDER BY 1`, [t.table]);
    for (const r of referenced.rows) await tx.query(`LOCK TABLE ${r.t} IN SHARE ROW EXCLUSIVE MODE`);
    // A range writes may reach now (it has begun, or is about to; or the DEFAULT partition holds rows of it: written
    // while no partition covered it): the table's writers wait until it is attached (readers do not), then write into
    // it. Rows committed into DEFAULT between the move below and ATTACH failed the ATTACH (23514) on every pass while
    // writes went on, which stopped retention too; a writer waiting for DEFAULT's lock failed its own insert. Days
    // made ahead (the usual case) need no such lock: nothing is written to them yet.
    const live = !ahead || (await tx.query<{ any: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${t.table}_default WHERE ${t.key} >= $1::timestamptz AND ${t.key} < $2::timestamptz) AS any`, [from, to])).rows[0].any;
    if (live) await tx.query(`LOCK TABLE ONLY ${t.table} IN SHARE ROW EXCLUSIVE MODE`);
    await tx.query(`CREATE TABLE ${name} (LIKE ${t.table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)${t.with ? ` WITH (${t.with})` : ''}`);
    const moved = await tx.query(
      `WITH moved AS (DELETE FROM ${t.table}_default WHERE ${t.key} >= $1::timestamptz AND ${t.key} < $2::timestamptz RETURNING *)
       INSERT INTO ${name} SELECT * FROM moved`,
      [from, to],
    );
    await tx.query(`ALTER TABLE ${t.table} ATTACH PARTITION ${name} FOR VALUES FROM ('${from}') TO ('${to}')`);
    return moved.rowCount;
  }, UNBOUNDED);
}

/**
 * The database's clock, which wrote every row's created_at: a pass measures the days and the windows on it (on the
 * worker's own clock, a worker hours fast dropped a day hours before its window ended; found by a probe).
 */
export async function databaseNow(db: Queryable): Promise<Date> {
  return new Date((await db.query<{ now: Date | string }>('SELECT clock_timestamp() AS now')).rows[0].now);
}

/** A range starting within this long is one writes may reach while it is created (createPartition). */
const LIVE_MARGIN_MS = 3_600_000;

/** How long the creation of a range made ahead waits for a lock: what a statement queued behind it may wait. */
const ADVANCE_LOCK_TIMEOUT = '100ms';

/** The days the DEFAULT partition holds rows of (none, unless no partition covered a day when they were written). */
export async function daysInDefault(db: Queryable, t: PartitionedTable): Promise<Date[]> {
  const r = await db.query<{ day: Date }>(
    `SELECT DISTINCT date_bin(interval '1 day', ${t.key}, timestamptz '2000-01-01 00:00:00+00') AS day FROM ${t.table}_default`,
  );
  return r.rows.map((x) => new Date(x.day));
}

/**
 * Pending deliveries that need an event of this events partition (a replay queues new deliveries for old events;
 * a disabled subscription's stay pending): the partition's id range bounds the probe of the pending ones.
 */
export async function pendingNeedingEvents(db: Queryable, partition: string): Promise<number> {
  const r = await db.query<{ n: string }>(
    `WITH range AS (SELECT min(id) AS lo, max(id) AS hi FROM ${partition})
     SELECT count(*) AS n FROM webhook_deliveries d, range
      WHERE d.status = 'pending' AND d.event_id BETWEEN range.lo AND range.hi
        AND EXISTS (SELECT 1 FROM ${partition} e WHERE e.id = d.event_id)`,
  );
  return Number(r.rows[0].n);
}

/**
 * Unfinished replays whose walk has yet to pass this events partition's ids (their next chunk's events may be in it):
 * a replay accepted while its window was kept reads its events however long it waits behind others.
 */
export async function replaysNeedingEvents(db: Queryable, partition: string): Promise<number> {
  const r = await db.query<{ n: string }>(
    `WITH range AS (SELECT min(id) AS lo, max(id) AS hi FROM ${partition})
     SELECT count(*) AS n FROM webhook_replays r, range
      WHERE r.status IN ('queued', 'running') AND r.last_event_id < range.hi AND r.end_event_id >= range.lo`,
  );
  return Number(r.rows[0].n);
}

/** Pending deliveries in a deliveries partition about to go (past retention: they expire with it). */
export async function pendingIn(db: Queryable, partition: string): Promise<number> {
  const r = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${partition} WHERE status = 'pending'`);
  return Number(r.rows[0].n);
}

/** How long the detach of a partition due waits for its parent's lock (retirePartition). */
export const RETIRE_LOCK_TIMEOUT = '100ms';

/** What a detached partition is renamed to until it is dropped (RETIRED_PREFIX + its name). */
export const RETIRED_PREFIX = 'bulb_retired_';

/**
 * Detaches a partition and renames it RETIRED_PREFIX + its name: catalog work only, whatever its rows (no DELETE, no
 * WAL per row). DETACH … CONCURRENTLY is refused on a table with a DEFAULT partition, so the detach takes the
 * parent's strong lock: under a short lock_timeout (a busy moment is skipped and the next pass tries again), and only for the
 * detach and the rename, committed at once. The renamed table is dropped by dropRetired, after the pass has retired
 * every partition due: the removal of its files, whose time follows their size (the filesystem freeing them, 0.4–1 s
 * per GB on the bench machine, BENCHMARKS.md), holds nothing of the parent, and no detach waits behind it.
 * Deliveries' pending rows, expiring with it, are counted in its transaction.
 */
export async function retirePartition(db: Db, t: PartitionedTable, partition: string, keep?: (tx: Queryable) => Promise<boolean>): Promise<Retirement> {
  return db.transaction(async (tx): Promise<Retirement> => {
    // What a statement queued behind the detach may wait: 2 s stalled every write and claim of the table each pass
    // (30 s apart) while a dump or a report read it (a probe, 2026-11-29). A day due waits hours without harm.
    await tx.query(`SET LOCAL lock_timeout = '${RETIRE_LOCK_TIMEOUT}'`);
    // Two workers' passes at once: one retires the partition, the other finds it gone (its pass failed with 42P01
    // halfway; found by a probe). The key createPartition takes: one change to a table's partitions at a time.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`bulb:partition:${t.table}`]);
    const there = await tx.query(`SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = to_regclass($2)`, [partition, t.table]);
    if (there.rows.length === 0) return { state: 'gone', pendingExpired: 0 };
    const pendingExpired = t === DELIVERIES ? await pendingIn(tx, partition) : 0;
    if (keep) {
      // `keep` decides under the lock every requeue of stored events takes (requeueGuard), so none commits between it
      // and the detach: a recover, retry or replay's chunk committed in between left a pending delivery whose event
      // was gone, leased again and again and never sent.
      await tx.query('SELECT pg_advisory_xact_lock($1)', [EVENTS_RETIREMENT_LOCK]);
      if (await keep(tx)) return { state: 'kept', pendingExpired };
    }
    await tx.query(`ALTER TABLE ${t.table} DETACH PARTITION ${partition}`);
    await tx.query(`ALTER TABLE ${partition} RENAME TO ${RETIRED_PREFIX}${partition}`);
    return { state: 'retired', pendingExpired };
  }, UNBOUNDED);
}

/** What retirePartition did: retired it, kept it (`keep`), or found it gone (another pass retired it); its pending deliveries. */
export interface Retirement {
  state: 'retired' | 'kept' | 'gone';
  pendingExpired: number;
}

/** The advisory lock ordering requeues of stored events (shared) with the retirement of an events partition (exclusive). */
const EVENTS_RETIREMENT_LOCK = 0x62756c65;

/**
 * Taken (shared, until commit) by whatever queues deliveries of events already stored (a recover, a manual retry, a
 * replay's chunk), before it reads them: an events partition being retired is either kept for what it queues, or gone
 * before it reads (runRetention).
 */
export async function requeueGuard(tx: Queryable): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock_shared($1)', [EVENTS_RETIREMENT_LOCK]);
}

/**
 * Drops the detached partitions waiting (RETIRED_PREFIX), one transaction each: those this pass retired, and any a
 * pass stopped before dropping (a crash; a query still reading the table past lock_timeout, left for the next pass).
 * Returns the names dropped.
 */
export async function dropRetired(db: Db): Promise<string[]> {
  const r = await db.query<{ name: string }>(
    `SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace AND starts_with(relname, $1) ORDER BY 1`,
    [RETIRED_PREFIX],
  );
  const dropped: string[] = [];
  for (const { name } of r.rows) if (await dropTable(db, name)) dropped.push(name);
  return dropped;
}

/** Drops a detached table under lock_timeout; false: a query still holds it (left for the next pass). */
async function dropTable(db: Db, name: string): Promise<boolean> {
  try {
    await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '2s'`);
      await tx.query(`DROP TABLE IF EXISTS ${name}`);
    }, UNBOUNDED);
    return true;
  } catch (err) {
    if (sqlState(err) !== '55P03') throw err;
    return false;
  }
}
