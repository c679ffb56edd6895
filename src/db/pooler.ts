// Is DATABASE_URL a transaction-mode connection pooler (PgBouncer, RDS Proxy, Supavisor)? Decided once at start,
// by what such a pooler does and a direct connection never does: hand one client's successive transactions to
// different server connections. Behind one, what needs a session goes to BULB_DATABASE_DIRECT_URL and statements
// are not prepared by name unless the operator says the pooler keeps them (PgBouncer ≥ 1.21 with
// max_prepared_statements).
import { ConfigError } from '../config.ts';
import { connectClient } from './pg.ts';
import { refuseOtherDirectDatabase } from './restored.ts';

const pid = async (c: { query: (sql: string) => Promise<{ rows: { pid: number }[] }> }) =>
  (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;

/** Rounds of the probe below: a direct connection never shows a move, so more rounds only catch more poolers. */
const PROBE_ROUNDS = 4;

/**
 * True when clients of `url` see server connections move: what a transaction-mode pooler does and a direct
 * connection never does. A pooler that misses a round (other clients took the servers meanwhile) is asked again;
 * one missed round after another (2 of 40 starts beside a busy pool, every start with server_round_robin) left
 * named prepared statements on, and half the requests failed on another client's statements.
 */
export async function isTransactionPooler(url: string): Promise<boolean> {
  for (let i = 0; i < PROBE_ROUNDS; i++) if (await serverMoved(url)) return true;
  return false;
}

/**
 * One round. Client A runs two statements: a pooler lending the longest-idle server (PgBouncer's
 * server_round_robin) runs the second elsewhere when two are idle. Then client B opens a transaction: a pooler lending
 * the most recently released server (PgBouncer's default) gives B the one A just gave back, and A's next statement
 * runs elsewhere. Direct connections keep their own backend throughout.
 */
async function serverMoved(url: string): Promise<boolean> {
  const a = await connectClient(url, 'bulb-probe');
  let b;
  try {
    const a1 = await pid(a);
    if ((await pid(a)) !== a1) return true;
    b = await connectClient(url, 'bulb-probe');
    await b.query('BEGIN');
    const b1 = await pid(b);
    // With a pool of one server connection A waits for B's transaction: end it shortly whatever A does.
    const a2 = pid(a);
    const end = setTimeout(() => void b!.query('ROLLBACK').catch(() => {}), 200);
    const second = await a2;
    clearTimeout(end);
    return b1 === a1 || second !== a1;
  } finally {
    await b?.query('ROLLBACK').catch(() => {});
    await Promise.all([a.end().catch(() => {}), b?.end().catch(() => {})]);
  }
}

export type PreparedSetting = 'auto' | 'on' | 'off';

export interface PoolerDecision {
  pooler: boolean;
  preparedStatements: boolean;
  /** One line for the start log. */
  summary: string;
}

/**
 * What Bulb does with this database: throws (with the setting to add) behind a transaction pooler without a
 * direct URL, rather than failing later at the first LISTEN or COPY.
 */
export async function decidePooling(url: string, directUrl: string | undefined, prepared: PreparedSetting): Promise<PoolerDecision> {
  // A direct URL is given only for a pooler (docs/operations.md): then DATABASE_URL is taken to be one whatever the
  // probe saw, so a missed probe cannot leave prepared statements on behind it.
  const pooler = (directUrl !== undefined && directUrl !== url) || (await isTransactionPooler(url));
  if (pooler && !directUrl) {
    throw new ConfigError(
      'DATABASE_URL points at a transaction-mode connection pooler (e.g. PgBouncer with pool_mode=transaction): set ' +
        'BULB_DATABASE_DIRECT_URL to a direct connection to the same database (used for LISTEN/NOTIFY, the migrations\' ' +
        'lock, imports\' COPY and exports\' snapshots)',
    );
  }
  // The direct URL must be one: through a transaction pooler LISTEN hears nothing (a revoked key was refused by the
  // other processes only after BULB_AUTH_CACHE_MS) and the migrations' session lock holds nothing (found by a probe).
  if (directUrl !== undefined && (await isTransactionPooler(directUrl))) {
    throw new ConfigError(
      'BULB_DATABASE_DIRECT_URL points at a transaction-mode connection pooler too: it must be a direct connection to ' +
        'the database (or a session-mode pooler), for LISTEN/NOTIFY, the migrations\' lock, imports\' COPY and exports\' snapshots',
    );
  }
  if (directUrl !== undefined && directUrl !== url) await refuseOtherDirectDatabase(url, directUrl);
  const preparedStatements = prepared === 'on' || (prepared === 'auto' && !pooler);
  const summary = pooler
    ? `DATABASE_URL is a transaction-mode pooler: sessions use BULB_DATABASE_DIRECT_URL; prepared statements ${preparedStatements ? 'on (BULB_DATABASE_PREPARED_STATEMENTS=on)' : 'off (set BULB_DATABASE_PREPARED_STATEMENTS=on for PgBouncer ≥ 1.21 with max_prepared_statements)'}`
    : `DATABASE_URL is a direct connection${directUrl ? ' (BULB_DATABASE_DIRECT_URL used for sessions)' : ''}; prepared statements ${preparedStatements ? 'on' : 'off'}`;
  return { pooler, preparedStatements, summary };
}
