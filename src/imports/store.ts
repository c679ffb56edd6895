// SQL of imports: the import rows, claiming by workers (lease), applying a chunk, chunk progress, errors, cancel.
import type { Queryable } from '../db/db.ts';
import { outboxCtes } from '../events/emit.ts';
import { FIELDS, fieldBit } from './fields.ts';

/** NOTIFY channel import workers listen on (an import became queued). */
export const IMPORT_CHANNEL = 'bulb_imports';

export interface ImportRow {
  id: string;
  uuid: string;
  status: 'receiving' | 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
  format: 'ndjson' | 'csv' | 'tgen';
  /** A TGEN import's file: "customers partialupdate 2025-08". */
  tgen_file: string | null;
  with_events: boolean;
  source: string;
  rows_received: string;
  applied_line: string;
  rows_done: string;
  created: string;
  updated: string;
  unchanged: string;
  failed: string;
  error: string | null;
  lock_token: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** Seconds between started_at and finished_at (or now), computed by the database. */
  elapsed: number | null;
}

const COLS = `id, uuid, status, format, tgen_file, with_events, source, rows_received, applied_line, rows_done, created, updated, unchanged,
  failed, error, lock_token, created_at, started_at, finished_at,
  extract(epoch FROM coalesce(finished_at, clock_timestamp()) - started_at)::float8 AS elapsed`;

export async function createImport(db: Queryable, i: { format: string; tgenFile?: string | null; withEvents: boolean; source: string; tokenUuid: string | null }): Promise<ImportRow> {
  const r = await db.query<ImportRow>(
    `INSERT INTO imports (format, tgen_file, with_events, source, token_uuid) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLS}`,
    [i.format, i.tgenFile ?? null, i.withEvents, i.source, i.tokenUuid],
  );
  return r.rows[0];
}

export async function getImport(db: Queryable, uuid: string): Promise<ImportRow | undefined> {
  return (await db.query<ImportRow>(`SELECT ${COLS} FROM imports WHERE uuid = $1`, [uuid])).rows[0];
}

export async function getImportById(db: Queryable, id: string): Promise<ImportRow> {
  return (await db.query<ImportRow>(`SELECT ${COLS} FROM imports WHERE id = $1`, [id])).rows[0];
}

/** The TGEN file an import reads, when it was known from the header only (before the import is queued). */
export async function setTgenFile(db: Queryable, id: string, tgenFile: string): Promise<void> {
  await db.query(`UPDATE imports SET tgen_file = $2 WHERE id = $1`, [id, tgenFile]);
}

/** The externalIds of the customers with these uuids (TGEN records name customers by uuid), by uuid. */
export async function externalIdsByUuid(db: Queryable, uuids: string[]): Promise<Map<string, string | null>> {
  const r = await db.query<{ uuid: string; external_id: string | null }>(`SELECT uuid::text AS uuid, external_id FROM customers WHERE uuid = ANY ($1::uuid[])`, [uuids]);
  return new Map(r.rows.map((x) => [x.uuid, x.external_id]));
}

/** Newest first; the cursor is the last id seen. */
export async function listImports(db: Queryable, beforeId: string | null, limit: number): Promise<ImportRow[]> {
  const r = await db.query<ImportRow>(
    `SELECT ${COLS} FROM imports WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2`,
    [beforeId, limit + 1],
  );
  return r.rows;
}

/** Upload progress (also keeps updated_at fresh, so a live upload is not taken for an abandoned one). */
export async function setReceived(db: Queryable, id: string, rows: number): Promise<void> {
  await db.query(`UPDATE imports SET rows_received = $2, updated_at = clock_timestamp() WHERE id = $1`, [id, rows]);
}

/**
 * The upload is complete: queue the import (unless it was cancelled meanwhile) and wake the workers. Either way it
 * counts every row received (a cancelled upload kept the count of its last progress write, a few seconds old).
 */
export async function markQueued(db: Queryable, id: string, rows: number): Promise<boolean> {
  const r = await db.query<{ status: string }>(
    `UPDATE imports SET status = CASE status WHEN 'receiving' THEN 'queued' ELSE status END, rows_received = $2, updated_at = clock_timestamp()
     WHERE id = $1 AND status IN ('receiving', 'cancelled') RETURNING status`,
    [id, rows],
  );
  await db.query(`SELECT pg_notify($1, '')`, [IMPORT_CHANNEL]);
  return r.rows[0]?.status === 'queued';
}

/** A refused upload leaves nothing behind. */
export async function deleteImport(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM import_rows WHERE import_id = $1`, [id]);
  await db.query(`DELETE FROM imports WHERE id = $1`, [id]);
}

export async function markFailed(db: Queryable, id: string, error: string): Promise<void> {
  await db.query(
    `UPDATE imports SET status = 'failed', error = $2, finished_at = clock_timestamp(), locked_until = NULL, updated_at = clock_timestamp()
     WHERE id = $1 AND status NOT IN ('completed', 'cancelled', 'failed')`,
    [id, error],
  );
}

/** Cancels an import that is not finished; returns it, or undefined when it was finished already. */
export async function cancelImport(db: Queryable, uuid: string): Promise<ImportRow | undefined> {
  const r = await db.query<ImportRow>(
    `UPDATE imports SET status = 'cancelled', finished_at = clock_timestamp(), locked_until = NULL, updated_at = clock_timestamp()
     WHERE uuid = $1 AND status IN ('receiving', 'queued', 'running') RETURNING ${COLS}`,
    [uuid],
  );
  return r.rows[0];
}

/** Takes the oldest import with work to do whose lease is free (queued, or running on a dead worker). */
export async function claimImport(db: Queryable, token: string, leaseMs: number): Promise<ImportRow | undefined> {
  const r = await db.query<ImportRow>(
    `UPDATE imports SET status = 'running', lock_token = $1, locked_until = clock_timestamp() + $2 * interval '1 millisecond',
       started_at = coalesce(started_at, clock_timestamp()), updated_at = clock_timestamp()
     WHERE id = (SELECT id FROM imports WHERE status IN ('queued', 'running')
                   AND (locked_until IS NULL OR locked_until < clock_timestamp() OR lock_token = $1)
                 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING ${COLS}`,
    [token, leaseMs],
  );
  return r.rows[0];
}

/** A worker stopping (SIGTERM) hands its import back at once instead of letting the lease run out. */
export async function releaseImport(db: Queryable, id: string, token: string): Promise<void> {
  await db.query(`UPDATE imports SET locked_until = NULL WHERE id = $1 AND lock_token = $2`, [id, token]);
}

/** Locks the import for one chunk; the caller checks that it still holds the lease. */
export async function lockForChunk(tx: Queryable, id: string): Promise<ImportRow | undefined> {
  return (await tx.query<ImportRow>(`SELECT ${COLS} FROM imports WHERE id = $1 FOR UPDATE`, [id])).rows[0];
}

/** What one chunk did; `disabled` lists the lines naming a disabled customer (refused with 403 CustomerDisabled). */
export interface ChunkResult {
  /** Lines in the chunk (refused ones included). */
  lines: number;
  /** Whether lines after the chunk remain. */
  more: boolean;
  refused: number;
  toInsert: number;
  created: number;
  updated: number;
  disabled: { line: string; uuid: string; external_id: string | null; merged_into_uuid: string | null; merged_into_external_id: string | null }[];
  /** Other lines refused when applying (a TGEN address of an unknown customer), with their errors. */
  errors?: { line: string; errors: unknown[]; folded?: boolean }[];
}

// The chunk's new values of a customer: a field its line (or folded lines) carries replaces the current one
// (a carried null clears it), one it does not carry is kept; a list not carried by a new customer is empty.
// Addresses (staged as given) patch the current ones they name (bulb_address_patch, migration 065), then get their uuids
// against them (bulb_address_uuids, migration 027); `disabled` sets the status.
const EMPTY = { text: 'NULL', json: `'[]'`, bool: 'false' } as const;
const FIELD_BITS = FIELDS.map(([, column, kind], i) => [column, 1 << i, EMPTY[kind]] as const);
const EMAILS = fieldBit('emails');
const DISABLED = fieldBit('disabled');
const ADDRESSES = fieldBit('addresses');
/** The customer columns (every staged field but disabled). */
const CUSTOMER_BITS = FIELD_BITS.filter(([c]) => c !== 'disabled');
const STAGED = FIELD_BITS.map(([c]) => c);
const COLUMNS = CUSTOMER_BITS.map(([c]) => c);
const carried = (c: string, empty: string, current: string) => {
  const v = empty === 'NULL' ? `g.${c}` : `coalesce(g.${c}, ${empty})`;
  // Several lines' lists fold as if applied one after another (bulb_address_fold, migration 067).
  return c === 'addresses'
    ? `CASE WHEN g.address_lists IS NULL THEN bulb_address_uuids(bulb_address_patch(${v}, ${current}), ${current}) ELSE bulb_address_fold(g.address_lists, ${current}) END`
    : v;
};
const newValue = (c: string, bit: number, empty: string) => `CASE WHEN g.fields & ${bit} <> 0 THEN ${carried(c, empty, 'cur.addresses')} ELSE cur.${c} END`;
const NEW_STATUS = `CASE WHEN g.fields & ${DISABLED} = 0 THEN cur.status WHEN g.disabled THEN 'disabled' ELSE 'active' END`;
/**
 * Each existing customer's new values: its patch (`grp`) joined to its row by the customers' index, the row `locked`
 * locked (FOR NO KEY UPDATE again, held already: the newest version; `locked` runs first, the one-time filter on it). Joined
 * to `cur` instead (until 2026-11-28), two CTEs on a key, the planner (which believes each holds a row) looped over one
 * for each row of the other: 25 M comparisons, 4 s of a 5,000-line chunk of customers that exist (a re-import ran at
 * 1,550 lines/s against 8,511 for new ones: BENCHMARKS.md).
 */
const NEW_VALUES = `SELECT cur.id, g.line, g.lines, g.fields & ${ADDRESSES} <> 0 AS patched, ${CUSTOMER_BITS.map(([c, bit, empty]) => `${newValue(c, bit, empty)} AS ${c}`).join(', ')},
         CASE WHEN g.fields & ${EMAILS} <> 0 THEN coalesce(g.email_keys, '{}') ELSE cur.email_keys END AS email_keys,
         ${NEW_STATUS} AS status
       FROM grp g`;
/**
 * The first problem of an address list as it will be stored (a jsonb expression, evaluated once), as the API's error
 * (validate.ts checks the same): a zoneCode not in its countryCode, a uuid or an externalId another address of the list
 * has (a patch or a fold can make one: an address patched by uuid keeping its externalId beside a new one naming it,
 * which PATCH and bulk refuse, was stored by imports until 2026-11-29; a probe); NULL when there is none.
 */
const addressError = (addresses: string) => {
  const err = (field: string, message: string) =>
    `jsonb_build_object('message', format('"addresses.%s.${field}" %s', y.o - 1, ${message}), 'errorCode', 'InvalidParameterError', 'moreInfo', format('addresses.%s.${field}', y.o - 1))`;
  const repeats = (key: string, same: string) =>
    `SELECT y.o, 2 AS k, ${err(key, `'repeats the ${key} of another address'`)} AS err FROM jsonb_array_elements(v.l) WITH ORDINALITY AS y(a, o)
       WHERE nullif(y.a->>'${key}', '') IS NOT NULL
         AND EXISTS (SELECT 1 FROM jsonb_array_elements(v.l) WITH ORDINALITY AS z(b, p) WHERE z.p < y.o AND ${same})`;
  return `(
  SELECT e.err FROM (SELECT ${addresses} AS l) v, LATERAL (
    SELECT y.o, 1 AS k, ${err('zoneCode', `format('"%s" is not in country %s', y.a->>'zoneCode', y.a->>'countryCode')`)} AS err
      FROM jsonb_array_elements(v.l) WITH ORDINALITY AS y(a, o) WHERE split_part(y.a->>'zoneCode', '-', 1) <> y.a->>'countryCode'
    UNION ALL ${repeats('uuid', `lower(z.b->>'uuid') = lower(y.a->>'uuid')`)}
    UNION ALL ${repeats('externalId', `z.b->>'externalId' = y.a->>'externalId'`)}
  ) e ORDER BY e.o, e.k LIMIT 1)`;
};
const folded = (c: string, bit: number) => `(array_agg(${c} ORDER BY line DESC) FILTER (WHERE fields & ${bit} <> 0))[1]`;

/**
 * The lines of an import in `range` (a condition on import_rows r), with `cols`, `refused` (staged with errors), `ckey`
 * (the customer the line names) and `taken` (a line refused when applying, below).
 *
 * Lines of NDJSON and CSV files name their customer by externalId (`e:`; a refused line: itself, `l:`). A TGEN customers
 * record may name it by uuid, which staging resolved against the customers as they were at upload, before the file's
 * earlier records were applied (docs/imports-tgen.md). Here, when the chunk is applied, a line's uuid (`new_uuid`) is the
 * customer the earlier lines left with it, whatever the chunks (a probe, 2026-11-29: the outcome changed with where a
 * chunk boundary fell):
 * - `held`, `holder`: a customer has the uuid when the chunk starts (from before the file, or from an earlier chunk),
 *   with that externalId (or none);
 * - `creates`: else, a line that creates its customer and so gives it the uuid: one without an externalId, or the first
 *   line of the chunk naming an externalId no customer has; the first of them (`taker_*`) takes the uuid;
 * - `ckey` of a line without an externalId: the customer with the uuid (by its externalId if it has one), else the one
 *   the taker creates (the taker's externalId, or the uuid itself). It folded into a later line giving the uuid with an
 *   externalId until 2026-11-29, giving a customer without an externalId one;
 * - `taken`: a line giving an externalId beside a uuid that is, at its turn, a customer's without an externalId (one an
 *   earlier line of the file created), refused as staging refuses it when that customer existed before the upload.
 * One query per line naming a uuid (on customers' unique indexes), and two sorts of the chunk, for TGEN files only.
 */
function keyedLines(uuids: boolean, cols: string, range: string): string {
  if (!uuids) {
    return `SELECT ${cols}, line, external_id, new_uuid, errors IS NOT NULL AS refused, false AS taken,
        CASE WHEN external_id IS NOT NULL THEN 'e:' || external_id ELSE 'l:' || line END AS ckey
      FROM import_rows r WHERE ${range}`;
  }
  return `SELECT *, CASE WHEN external_id IS NOT NULL THEN 'e:' || external_id WHEN new_uuid IS NULL THEN 'l:' || line
        WHEN held THEN coalesce('e:' || holder, 'u:' || new_uuid) ELSE coalesce('e:' || taker_external_id, 'u:' || new_uuid) END AS ckey,
      NOT refused AND external_id IS NOT NULL AND new_uuid IS NOT NULL
        AND CASE WHEN held THEN holder IS NULL ELSE taker_creates AND taker_external_id IS NULL AND taker_line < line END AS taken
    FROM (
      SELECT *, first_value(line) OVER w AS taker_line, first_value(external_id) OVER w AS taker_external_id, first_value(creates) OVER w AS taker_creates
      FROM (
        SELECT *, NOT refused AND new_uuid IS NOT NULL AND NOT held
            AND (external_id IS NULL OR (NOT named AND line = min(line) FILTER (WHERE NOT refused) OVER (PARTITION BY external_id))) AS creates
        FROM (
          SELECT ${cols}, line, external_id, new_uuid, errors IS NOT NULL AS refused,
            coalesce(h.held, false) AS held, h.holder,
            CASE WHEN new_uuid IS NULL OR external_id IS NULL THEN false ELSE EXISTS (SELECT 1 FROM customers n WHERE n.external_id = r.external_id) END AS named
          -- The customer with the line's uuid, looked up once for both (no row for a line without one).
          FROM import_rows r LEFT JOIN LATERAL (SELECT true AS held, c.external_id AS holder FROM customers c WHERE c.uuid = r.new_uuid) h ON true
          WHERE ${range}
        ) a
      ) b
      WINDOW w AS (PARTITION BY new_uuid ORDER BY NOT creates, line)
    ) c`;
}

/** Whether an import's lines may name customers by uuid (a TGEN file; its customers step is the one applyChunk runs). */
const namesUuids = (imp: Pick<ImportRow, 'format'>) => imp.format === 'tgen';

/** The error of a `taken` line, as staging words it (tgen.ts resolved). */
const TAKEN_ERROR = `jsonb_build_object('message', format('the customer with uuid %s has no externalId, not "%s" (an import does not give a customer an externalId: PATCH it)', new_uuid, left(external_id, 100)),
  'errorCode', 'InvalidParameterError', 'moreInfo', 'externalId')`;

/**
 * Applies the next chunk of an import with 2026-11 bulk semantics, set-based, in the caller's transaction, without
 * the rows leaving the database. The chunk is the lines numbered applied_line + 1 … applied_line + `span`: a range of
 * the primary key, so its read costs the same whatever the planner believes of import_rows' size (a LIMIT after
 * `line > applied_line` was planned as a scan and sort of every remaining line while the statistics were stale).
 * A range holds at most `span` lines, fewer where the file has blank lines or multi-line CSV records.
 * - `chunk`: the lines of the range, refused ones included, with `ckey`, the customer a line names (keyedLines): its
 *   externalId, else (a TGEN record of a customer without one, docs/imports-tgen.md) the customer its uuid (`new_uuid`)
 *   names, or the one created with it, else (a record with neither key) the line itself: a new customer; `taken`
 *   lines are refused (listed in `errors`);
 * - `grp`: one patch per customer; several lines naming one fold in line order (a later line's field wins; their
 *   address lists are kept, `address_lists`, to be applied one after another);
 * - `locked`, `cur`: the existing customers (by externalId, or by uuid for the lines without one), locked in id order (as bulk
 *   does, so concurrent writers queue, never deadlock);
 * - `plan`: the customers to create, each with its uuid chosen before the insert (`given`: a uuid goes to the first
 *   customer created with it, if no customer has it by now); their customerCreate events are written
 *   from it, not from what `ins` returns: a chunk that inserts fewer than `plan` holds is rolled back and retried (the
 *   caller's lostRace), so whenever it commits, `plan` is what was inserted. Joined to `ins` instead (by externalId
 *   until 2026-11-28), the planner, which believes every CTE holds one row, looped over one for each row of the other:
 *   7.8 s of an 8.5 s chunk of 5,000 lines (an import with events at 650 lines/s instead of ~10,000);
 * - `ins`: new customers (a field not carried takes its empty value), each with the uuid its TGEN record gave
 *   (`new_uuid`, `given`) or Bulb's; an externalId (or given uuid) inserted meanwhile by someone else is skipped,
 *   which the caller sees as created < toInsert (and retries the chunk). Inserted in externalId order: two imports
 *   creating overlapping keys in different line orders each waited for a key the other had inserted (a deadlock,
 *   detected after deadlock_timeout and retried); in one order the second waits for the first and then skips (byte
 *   order, COLLATE "C": the same in every transaction, and cheaper to sort than the database's collation);
 * - `upd`: existing customers whose values change, except those merged away (left alone and listed); one deactivated
 *   (disabled without a merge) takes the line, and a line's `disabled` sets the status;
 * - with events: customerCreate per created customer (in line order), then customerUpdate per changed one,
 *   with their deliveries (outboxCtes).
 */
export async function applyChunk(tx: Queryable, imp: Pick<ImportRow, 'id' | 'format' | 'applied_line' | 'with_events' | 'source'>, span: number): Promise<ChunkResult> {
  const events = imp.with_events
    ? `, ${outboxCtes(`SELECT t, 'Customer', uuid, external_id, $4::text FROM (
          SELECT 0 AS k, p.line AS o, 'customerCreate' AS t, p.new_id AS uuid, p.external_id FROM plan p
          UNION ALL SELECT 1, line, 'customerUpdate', uuid, external_id FROM upd) x ORDER BY k, o`)}`
    : '';
  const r = await tx.query<ChunkResult>(
    `WITH chunk AS MATERIALIZED (
       ${keyedLines(namesUuids(imp), `fields, ${STAGED.join(', ')}, email_keys`, 'r.import_id = $1 AND r.line > $2 AND r.line <= $2 + $3')}
     ), dup AS MATERIALIZED (
       SELECT ckey FROM chunk WHERE NOT refused AND NOT taken GROUP BY ckey HAVING count(*) > 1
     ), grp AS MATERIALIZED (
       SELECT line, ARRAY[line] AS lines, ckey, external_id, fields, ${STAGED.join(', ')}, email_keys, new_uuid, NULL::jsonb AS address_lists
       FROM chunk WHERE NOT refused AND NOT taken AND ckey NOT IN (SELECT ckey FROM dup)
       UNION ALL
       -- The uuid of its first line (a later line's uuid beside an externalId a customer has by then names that customer
       -- and gives it no uuid, as across chunks; keyedLines).
       SELECT min(line), array_agg(line ORDER BY line), ckey, min(external_id), bit_or(fields), ${FIELD_BITS.map(([c, bit]) => folded(c, bit)).join(', ')},
         ARRAY(SELECT jsonb_array_elements_text(${folded('to_jsonb(email_keys)', EMAILS)})),
         (array_agg(new_uuid ORDER BY line))[1],
         jsonb_agg(coalesce(addresses, 'null') ORDER BY line) FILTER (WHERE fields & ${ADDRESSES} <> 0)
       FROM chunk WHERE NOT refused AND NOT taken AND ckey IN (SELECT ckey FROM dup) GROUP BY ckey
     ), locked AS MATERIALIZED (
       SELECT id, uuid, external_id, status, merged_into, ${COLUMNS.join(', ')}, email_keys
       FROM customers WHERE external_id = ANY (ARRAY(SELECT external_id FROM grp WHERE external_id IS NOT NULL))
         OR uuid = ANY (ARRAY(SELECT new_uuid FROM grp WHERE external_id IS NULL AND new_uuid IS NOT NULL))
       -- FOR NO KEY UPDATE, as every customer write (customers/store.ts lockClause): FOR UPDATE blocked the duplicates
       -- refresher's foreign-key checks on these customers (FOR KEY SHARE) while it held queue rows (a deadlock every
       -- few seconds beside bulk upserts: test/imports/concurrent-writers.test.ts).
       ORDER BY id FOR NO KEY UPDATE
     ), cur AS MATERIALIZED (
       -- Each found customer's key: its externalId if a line's key is that (a hash join, not a search of the chunk's keys
       -- per customer; keyedLines names a customer with one so), else its uuid.
       SELECT l.*, CASE WHEN k.ckey IS NOT NULL THEN 'e:' || l.external_id ELSE 'u:' || l.uuid END AS ckey
       FROM locked l LEFT JOIN (SELECT ckey FROM grp) k ON k.ckey = 'e:' || l.external_id
     ), given AS MATERIALIZED (
       -- A given uuid goes to the first customer created with it, if no customer has it by now (else Bulb's own uuid);
       -- a customer a line updates takes none (it took the uuid from a new one until 2026-11-29).
       SELECT DISTINCT ON (new_uuid) new_uuid, line FROM grp g
       WHERE new_uuid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cur WHERE cur.ckey = g.ckey) ORDER BY new_uuid, line
     ), plan0 AS MATERIALIZED (
       -- A new customer's folded address lists checked as they will be stored, as an existing one's are (nv): two lines
       -- of a new customer, the second changing the first's country, stored a zoneCode outside it (until 2026-11-29).
       SELECT g.*, CASE WHEN gv.line IS NOT NULL AND NOT EXISTS (SELECT 1 FROM customers x WHERE x.uuid = g.new_uuid) THEN g.new_uuid ELSE bulb_uuid7() END AS new_id,
         CASE WHEN g.address_lists IS NOT NULL THEN ${addressError('bulb_address_fold(g.address_lists, NULL)')} END AS bad
       FROM grp g LEFT JOIN given gv ON gv.new_uuid = g.new_uuid AND gv.line = g.line
       WHERE NOT EXISTS (SELECT 1 FROM cur WHERE cur.ckey = g.ckey)
     ), plan AS MATERIALIZED (
       SELECT * FROM plan0 WHERE bad IS NULL
     ), ins AS (
       INSERT INTO customers (uuid, external_id, ${COLUMNS.join(', ')}, email_keys, status)
       SELECT g.new_id, g.external_id, ${CUSTOMER_BITS.map(([c, , empty]) => carried(c, empty, 'NULL')).join(', ')}, coalesce(g.email_keys, '{}'),
         CASE WHEN g.fields & ${DISABLED} <> 0 AND g.disabled THEN 'disabled' ELSE 'active' END
       FROM plan g ORDER BY g.external_id COLLATE "C", g.line
       ON CONFLICT DO NOTHING
       RETURNING id, uuid, external_id
     ), nve AS MATERIALIZED (
       ${NEW_VALUES} JOIN customers cur ON cur.external_id = g.external_id
       WHERE g.external_id IS NOT NULL AND cur.merged_into IS NULL AND (SELECT count(*) FROM locked) >= 0 FOR NO KEY UPDATE OF cur
     ), nvu AS MATERIALIZED (
       ${NEW_VALUES} JOIN customers cur ON cur.uuid = g.new_uuid
       WHERE g.external_id IS NULL AND g.new_uuid IS NOT NULL AND cur.merged_into IS NULL
         -- Not a customer another group names by externalId: a hashed NOT IN (as NOT EXISTS, the planner, which believes
         -- grp holds one row, scanned grp for each customer: 17-57 s of a 5,000-line chunk updating customers by uuid).
         AND (cur.external_id IS NULL OR cur.external_id NOT IN (SELECT k.external_id FROM grp k WHERE k.external_id IS NOT NULL))
         AND (SELECT count(*) FROM locked) >= 0 FOR NO KEY UPDATE OF cur
     ), nv0 AS MATERIALIZED (
       SELECT * FROM nve UNION ALL SELECT * FROM nvu
     ), nv AS MATERIALIZED (
       -- A patched address list checked as it will be stored (as the API checks it, validate.ts; addressError): a zoneCode kept beside a
       -- countryCode of another country refuses the line.
       SELECT nv0.*, CASE WHEN nv0.patched THEN ${addressError('nv0.addresses')} END AS bad
       FROM nv0
     ), upd AS (
       UPDATE customers c SET ${COLUMNS.map((col) => `${col} = nv.${col}`).join(', ')}, email_keys = nv.email_keys, status = nv.status,
         updated_at = clock_timestamp()
       FROM nv WHERE c.id = nv.id AND nv.bad IS NULL
         AND (${COLUMNS.map((col) => `c.${col}`).join(', ')}, c.status) IS DISTINCT FROM (${COLUMNS.map((col) => `nv.${col}`).join(', ')}, nv.status)
       RETURNING c.id, c.uuid, c.external_id, nv.line
     )${events}
     SELECT (SELECT count(*) FROM chunk)::int AS lines,
       EXISTS (SELECT 1 FROM import_rows WHERE import_id = $1 AND line > $2 + $3) AS more,
       (SELECT count(*) FROM chunk WHERE refused)::int AS refused,
       (SELECT count(*) FROM plan)::int AS "toInsert",
       (SELECT count(*) FROM ins)::int AS created,
       -- One per customer written (its first line), as docs/imports.md decides: the lines folded into it are unchanged,
       -- so created + updated is the number of events (it summed the folded lines: 2 updated, 1 event; a probe).
       (SELECT count(*) FROM upd)::int AS updated,
       coalesce((SELECT jsonb_agg(jsonb_build_object('line', s.line::text, 'uuid', cur.uuid, 'external_id', cur.external_id,
           'merged_into_uuid', m.uuid, 'merged_into_external_id', m.external_id) ORDER BY s.line)
         FROM chunk s JOIN cur ON cur.ckey = s.ckey AND NOT s.refused AND NOT s.taken AND cur.merged_into IS NOT NULL
         LEFT JOIN customers m ON m.id = cur.merged_into), '[]') AS disabled,
       -- A refused customer refuses every line folded into it, not only its first: the group's own lines (joined to the
       -- chunk through cur instead, the planner looped over nv for each line). \`folded\`: refused as a group of several
       -- lines, which the caller then applies one after another instead (applyCustomerChunk).
       coalesce((SELECT jsonb_agg(jsonb_build_object('line', l::text, 'errors', jsonb_build_array(x.bad), 'folded', cardinality(x.lines) > 1) ORDER BY l)
         FROM (SELECT lines, bad FROM nv WHERE bad IS NOT NULL UNION ALL SELECT lines, bad FROM plan0 WHERE bad IS NOT NULL
           UNION ALL SELECT ARRAY[line], ${TAKEN_ERROR} FROM chunk WHERE taken) x, unnest(x.lines) AS l), '[]') AS errors`,
    imp.with_events ? [imp.id, imp.applied_line, span, imp.source] : [imp.id, imp.applied_line, span],
  );
  return r.rows[0];
}

/**
 * Lines of a chunk with what applying them one after another needs: the customer they name (keyed over the chunk's
 * range, as applyChunk keys them), and their addresses.
 */
export async function linesToFold(tx: Queryable, imp: Pick<ImportRow, 'id' | 'format' | 'applied_line'>, span: number, lines: string[]): Promise<{ line: string; key: string; has_addresses: boolean; addresses: unknown }[]> {
  const r = await tx.query<{ line: string; key: string; has_addresses: boolean; addresses: unknown }>(
    `SELECT line::text, ckey AS key, fields & ${ADDRESSES} <> 0 AS has_addresses, addresses
     FROM (${keyedLines(namesUuids(imp), 'fields, addresses', 'r.import_id = $1 AND r.line > $2 AND r.line <= $2 + $3')}) k
     WHERE line = ANY($4::bigint[]) ORDER BY line`,
    [imp.id, imp.applied_line, span, lines],
  );
  return r.rows;
}

/** The addresses of the customer a line's key names (`e:` externalId, `u:` uuid); null when there is none. Read under the chunk's locks. */
export async function currentAddresses(tx: Queryable, key: string): Promise<unknown> {
  // One statement per key kind, each on its unique index (a CASE in the WHERE would scan every customer).
  const byUuid = key.startsWith('u:');
  const r = await tx.query<{ addresses: unknown }>(
    `SELECT addresses FROM customers WHERE ${byUuid ? 'uuid = $1::uuid' : 'external_id = $1'}`,
    [key.slice(2)],
  );
  return r.rows[0]?.addresses ?? null;
}

/** One line's address list patched onto `current` as the chunk applies it (bulb_address_fold), and the error it would be refused with. */
export async function patchedAddresses(tx: Queryable, list: unknown, current: unknown): Promise<{ addresses: unknown; error: unknown }> {
  const r = await tx.query<{ addresses: unknown; error: unknown }>(
    `SELECT n.addresses, ${addressError('n.addresses')} AS error
     FROM (SELECT bulb_address_fold(jsonb_build_array(coalesce($1::jsonb, 'null'::jsonb)), $2::jsonb) AS addresses) n`,
    [list === null ? null : JSON.stringify(list), current === null ? null : JSON.stringify(current)],
  );
  return r.rows[0];
}

/**
 * The lines of a chunk (the range applyChunk takes), with the columns a TGEN apply step reads (`cols`, the store's
 * own names: the addresses step's key and addresses, the notes step's record), and whether lines follow it.
 */
export async function chunkLines<T>(tx: Queryable, id: string, afterLine: string, span: number, cols: string): Promise<{ lines: (T & { line: string; refused: boolean })[]; more: boolean }> {
  const r = await tx.query<T & { line: string; refused: boolean }>(
    `SELECT line, ${cols}, errors IS NOT NULL AS refused FROM import_rows WHERE import_id = $1 AND line > $2::bigint AND line <= $2::bigint + $3::int ORDER BY line`,
    [id, afterLine, span],
  );
  const more = await tx.query(`SELECT 1 FROM import_rows WHERE import_id = $1 AND line > $2::bigint + $3::int LIMIT 1`, [id, afterLine, span]);
  return { lines: r.rows, more: more.rows.length > 0 };
}

/** An addresses file's line: it names its customer by externalId, or (a customer without one) by uuid in new_uuid. */
export interface AddressLine { line: string; external_id: string | null; new_uuid: string | null; addresses: any[] | null; refused: boolean }
export const chunkAddressLines = (tx: Queryable, id: string, afterLine: string, span: number) =>
  chunkLines<Omit<AddressLine, 'line' | 'refused'>>(tx, id, afterLine, span, 'external_id, new_uuid, addresses');

/** Errors found when applying (e.g. a disabled customer), kept beside the upload's own. */
export async function recordErrors(tx: Queryable, id: string, errs: { line: string; errors: unknown[] }[]): Promise<void> {
  if (errs.length === 0) return;
  await tx.query(
    `UPDATE import_rows r SET errors = x.errors FROM jsonb_to_recordset($2::jsonb) AS x(line bigint, errors jsonb)
     WHERE r.import_id = $1 AND r.line = x.line`,
    [id, JSON.stringify(errs)],
  );
}

export interface ChunkCounts {
  lastLine: string;
  done: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
}

/** Commits a chunk's progress (in the chunk's transaction) and renews the lease; completes the import at the end. */
export async function advance(tx: Queryable, id: string, c: ChunkCounts, leaseMs: number, finished: boolean): Promise<void> {
  await tx.query(
    `UPDATE imports SET applied_line = $2, rows_done = rows_done + $3, created = created + $4, updated = updated + $5,
       unchanged = unchanged + $6, failed = failed + $7, updated_at = clock_timestamp(),
       locked_until = CASE WHEN $8 THEN NULL ELSE clock_timestamp() + $9 * interval '1 millisecond' END,
       status = CASE WHEN $8 THEN 'completed' ELSE status END,
       finished_at = CASE WHEN $8 THEN clock_timestamp() ELSE finished_at END
     WHERE id = $1`,
    [id, c.lastLine, c.done, c.created, c.updated, c.unchanged, c.failed, finished, leaseMs],
  );
}

/** Staging rows of a finished import are dropped, except those that carry errors (GET …/errors). */
export async function dropApplied(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM import_rows WHERE import_id = $1 AND errors IS NULL`, [id]);
}

/**
 * Fresh statistics for the tables an import filled: prepared statements (every process's named ones) keep the plan
 * made when the table was small until the next ANALYZE, and an import grows them faster than autovacuum analyzes.
 * ANALYZE reads a sample (30,000 rows per table), so it costs the same after 1,000 rows or 10,000,000.
 */
export async function analyzeImported(db: Queryable): Promise<void> {
  await db.query('ANALYZE customers, events, webhook_deliveries');
}

/**
 * Uploads whose API process died (no progress for 10 minutes) fail, so they do not stay 'receiving' forever; the
 * rows they had staged (committed batches or COPY segments) are deleted, as when an upload breaks off.
 */
export async function failAbandoned(db: Queryable): Promise<void> {
  await db.query(
    `WITH f AS (
       UPDATE imports SET status = 'failed', error = 'upload interrupted', finished_at = clock_timestamp()
       WHERE status = 'receiving' AND updated_at < clock_timestamp() - interval '10 minutes' RETURNING id
     ) DELETE FROM import_rows WHERE import_id IN (SELECT id FROM f)`,
  );
}

/** Errors by line, keyset-paginated (the errors download streams page after page). */
export async function errorPage(db: Queryable, id: string, afterLine: string, limit: number): Promise<{ line: string; errors: unknown[] }[]> {
  const r = await db.query<{ line: string; errors: unknown[] }>(
    `SELECT line, errors FROM import_rows WHERE import_id = $1 AND errors IS NOT NULL AND line > $2 ORDER BY line LIMIT $3`,
    [id, afterLine, limit],
  );
  return r.rows;
}
