// Db over a PostgreSQL server (node-postgres pool plus one dedicated LISTEN connection).
import pg from 'pg';
import type { Db, Queryable, QueryResult, TransactionOptions } from './db.ts';
import { CLIENT_DEADLINE_MESSAGE } from './unavailable.ts';

// Timestamps and bigints come back as strings; the code formats them itself.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => v);
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => v);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => v);

// Sessions run in UTC, like PGlite, so that timestamptz text (and now()::date, date_trunc…) is the same on both.
// Set by a statement on connect, not by the startup parameter `options`: a transaction-mode pooler refuses that
// parameter (PgBouncer: "unsupported startup parameter: options"), while it tracks TimeZone per client and
// restores it on whichever server connection serves the client's next transaction.
const SET_UTC = "SET TimeZone TO 'UTC'";
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * What a connection runs as it connects: UTC, and for the pool's clients (only they have a statement deadline,
 * `query_timeout`) a server-side statement_timeout just under it: a statement waiting on a healthy server (a lock
 * held for minutes) is cancelled by the server itself, not left behind by the client closing its connection (each
 * such backend went on waiting, and the pool opened new connections beside them). Behind a transaction pooler the
 * setting stays with whichever server connection ran it: best effort there; the client's deadline still holds.
 */
function setupSql(c: pg.Client): string {
  const deadline = (c as unknown as { connectionParameters?: { query_timeout?: number } }).connectionParameters?.query_timeout;
  return deadline ? `${SET_UTC}; SET statement_timeout = ${Math.max(1, deadline - 500)}` : SET_UTC;
}

/** A client that sets the session's TimeZone as part of connecting, before anyone can send it a query. */
class UtcClient extends pg.Client {
  // node-postgres's pool calls connect(callback); everyone else awaits connect().
  connect(): Promise<pg.Client>;
  connect(callback: (err: Error | null, c?: pg.Client) => void): void;
  connect(callback?: (err: Error | null, c?: pg.Client) => void): Promise<pg.Client> | void {
    // Until its caller has it, an 'error' event has no listener but this one: a transaction pooler completes the login
    // itself and may hold the setup statements in its queue (PAUSE, a pool busy, a failover), the pool's connect timeout
    // then destroys the socket, and the unhandled event ended the process (every process behind the pooler, found by a
    // probe). The setup's failure rejects `ready`, which the caller gets.
    const unhandled = () => {};
    this.on('error', unhandled);
    const ready = super.connect().then(() => this.query(setupSql(this))).then(() => this as pg.Client);
    const handedOver = () => this.removeListener('error', unhandled);
    ready.then(handedOver, handedOver);
    if (!callback) return ready;
    ready.then((c) => callback(null, c), (err) => callback(err));
  }
}

/** A client outside the pool (LISTEN, a session, an import's COPY, an export), in UTC like every pooled one. */
export async function connectClient(url: string, applicationName: string, extra: pg.ClientConfig = {}): Promise<pg.Client> {
  const client = new UtcClient({ connectionString: url, application_name: applicationName, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, ...extra });
  client.on('error', () => {}); // a dead connection surfaces as the next query's error
  try {
    await client.connect();
  } catch (err) {
    client.end().catch(() => {});
    throw err;
  }
  return client;
}

export interface PgDbOptions {
  /**
   * A direct connection to the same database, for what needs a session of its own (LISTEN, the migrations' advisory
   * lock, an import's COPY, an export's snapshot) when `url` points at a transaction-mode pooler.
   */
  directUrl?: string;
  /** false: never name statements (a pooler without prepared-statement support); default true. */
  preparedStatements?: boolean;
  /** A pooled statement not answered within this many ms fails as unavailable and closes its connection (0: never). */
  statementDeadlineMs?: number;
  /** How often the LISTEN connection is asked to answer (ms; tests shorten it). */
  listenHeartbeatMs?: number;
  /** How long a request waits for a pooled connection (ms; default CONNECT_TIMEOUT_MS; tests shorten it). */
  connectTimeoutMs?: number;
}

/**
 * The LISTEN connection only receives: a server gone silent (a host lost, a failover by DNS or virtual IP) left it
 * waiting until TCP gave up (~15 min), and every notification meanwhile (webhook wake-ups, subscription changes, key
 * revocations) went nowhere. Asked to answer every LISTEN_HEARTBEAT_MS, within as long again, it is replaced otherwise.
 */
const LISTEN_HEARTBEAT_MS = 10_000;

/** The client gave up on a statement (its `query_timeout`): the connection may not answer any more. */
const pastDeadline = (err: unknown) => err instanceof Error && err.message === CLIENT_DEADLINE_MESSAGE;

/**
 * Closes a connection whose statement passed its deadline. The server may be gone without a word (a host lost, a
 * network partition, a failover by DNS or virtual IP): nothing would end that connection for ~15 min (TCP
 * retransmissions), each request on it would hang and the pool, all its connections waiting, would answer 503 long
 * after a new primary took over. Closed at once, it is replaced by a new connection, to wherever the URL now leads.
 */
function closeSocket(client: pg.ClientBase): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

interface Sub {
  onPayload: (payload: string) => void;
  onLost?: () => void;
}

/** A statement of an unbounded transaction: node-postgres's query_timeout as long as a timer can be (24.8 days). */
const NO_DEADLINE = 2_147_483_647;

/** A named query is parsed and planned once per connection (node-postgres keeps the prepared statement). */
const config = (text: string, values: unknown[] | undefined, name: string | undefined, unbounded = false): pg.QueryConfig => {
  const c: pg.QueryConfig & { query_timeout?: number } = name ? { name, text, values: values as any[] } : { text, values: values as any[] };
  if (unbounded) c.query_timeout = NO_DEADLINE;
  return c;
};

/**
 * The same, as the Query node-postgres would build from that config: built from the text (node-postgres copies a
 * config object descriptor by descriptor, ~2 µs a call), then named. For the pool, which answers it with a promise.
 */
function query(text: string, values: unknown[] | undefined, name: string | undefined): pg.Query {
  const q = new pg.Query(text, values as any[]);
  if (name) (q as unknown as { name: string }).name = name;
  return q;
}

/** Queries on one connection of its own (a pooled client checked out, or a client outside the pool). */
export function onClient(client: pg.ClientBase, prepared = true, unbounded = false): Queryable {
  return {
    async query<R>(sql: string, params?: unknown[], name?: string) {
      const r = await client.query(config(sql, params, prepared ? name : undefined, unbounded));
      return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await client.query(config(sql, undefined, undefined, unbounded));
    },
  };
}

export class PgDb implements Db {
  readonly kind = 'pg' as const;
  private pool: pg.Pool;
  private listener: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private listeners = new Map<string, Set<Sub>>();
  private closed = false;

  /** Where sessions connect: the direct URL when one is given, else the pool's own. */
  readonly sessionUrl: string;
  readonly preparedStatements: boolean;
  private readonly listenHeartbeatMs: number;

  constructor(readonly url: string, poolSize = 10, opts: PgDbOptions = {}) {
    this.sessionUrl = opts.directUrl ?? url;
    this.listenHeartbeatMs = opts.listenHeartbeatMs ?? LISTEN_HEARTBEAT_MS;
    this.preparedStatements = opts.preparedStatements ?? true;
    // connectionTimeoutMillis: a request waits at most this long for a connection (also for a free one in the
    // pool), then fails as unavailable (503) instead of hanging while the database is down or failing over.
    this.pool = new pg.Pool({
      Client: UtcClient, connectionString: url, max: poolSize, application_name: 'bulb', connectionTimeoutMillis: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS, keepAlive: true,
      // A statement unanswered this long fails (as unavailable: 503), and its connection is closed (closeSocket).
      ...(opts.statementDeadlineMs ? { query_timeout: opts.statementDeadlineMs } : {}),
    });
    // An idle client dying (e.g. pg_terminate_backend) must not crash the process.
    this.pool.on('error', () => {});
    // pool.query gives a client back with its error: past the deadline, its socket is closed before the pool ends it
    // (ending politely waits for a server that may never answer).
    this.pool.on('release', (err, client) => {
      if (pastDeadline(err)) closeSocket(client);
    });
  }

  async query<T>(sql: string, params?: unknown[], name?: string): Promise<QueryResult<T>> {
    const r = (await (this.pool.query(query(sql, params, this.preparedStatements ? name : undefined)) as unknown as Promise<pg.QueryResult>));
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    const client = await this.pool.connect();
    let broken = false;
    // A checked-out client has no listener of the pool's: a connection cut between two statements (a failover, a
    // network partition) would be an unhandled 'error' event, which ends the process. The next query fails instead.
    const onError = () => (broken = true);
    client.on('error', onError);
    const unbounded = opts.unbounded === true;
    const tx = onClient(client, this.preparedStatements, unbounded);
    try {
      await tx.exec('BEGIN');
      if (unbounded) await tx.exec('SET LOCAL statement_timeout = 0'); // the connection's is the deadline's (setupSql)
      const out = await fn(tx);
      await tx.exec('COMMIT');
      return out;
    } catch (err) {
      if (pastDeadline(err)) {
        broken = true; // no ROLLBACK on a connection that does not answer: closing it rolls the transaction back
        closeSocket(client);
        throw err;
      }
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw err;
    } finally {
      client.off('error', onError);
      client.release(broken ? true : undefined);
    }
  }

  async session<T>(fn: (s: Queryable) => Promise<T>): Promise<T> {
    // A connection of its own, closed afterwards: nothing the session set (a lock, a setting) outlives it.
    const client = await connectClient(this.sessionUrl, 'bulb-session');
    try {
      return await fn(onClient(client, this.preparedStatements));
    } finally {
      await client.end().catch(() => {});
    }
  }

  async listen(channel: string, onPayload: (payload: string) => void, onLost?: () => void): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('database is closed');
    const sub: Sub = { onPayload, onLost };
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(sub);
    try {
      const client = await this.listenClient();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`); // a repeated LISTEN is a no-op
    } catch (err) {
      set.delete(sub);
      if (set.size === 0) this.listeners.delete(channel);
      throw err;
    }
    return async () => {
      set!.delete(sub);
    };
  }

  /** The one LISTEN connection (shared by every channel); a new one LISTENs every channel subscribed so far. */
  private listenClient(): Promise<pg.Client> {
    this.connecting ??= (async () => {
      let client: pg.Client;
      try {
        client = await connectClient(this.sessionUrl, 'bulb-listen', { keepAlive: true });
      } catch (err) {
        this.connecting = undefined; // the next attempt connects anew
        throw err;
      }
      client.on('notification', (msg) => {
        for (const s of this.listeners.get(msg.channel) ?? []) s.onPayload(msg.payload ?? '');
      });
      client.on('error', () => this.lost(client));
      client.on('end', () => this.lost(client));
      try {
        if (this.closed) throw new Error('database is closed');
        for (const channel of this.listeners.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (err) {
        this.connecting = undefined;
        client.end().catch(() => {});
        throw err;
      }
      this.listener = client;
      this.heartbeat(client);
      return client;
    })();
    return this.connecting;
  }

  /** Asks the LISTEN connection to answer, every listenHeartbeatMs; one that does not in as long is closed (lost). */
  private heartbeat(client: pg.Client): void {
    const every = this.listenHeartbeatMs;
    const timer = setInterval(() => {
      if (this.listener !== client) return clearInterval(timer);
      client.query({ text: 'SELECT 1', query_timeout: every } as pg.QueryConfig).catch(() => {
        clearInterval(timer);
        closeSocket(client); // 'end' follows: lost() reconnects
      });
    }, every);
    timer.unref();
  }

  /** The LISTEN connection was lost: tell subscribers (onLost), open a new one, re-subscribe, then wake everyone. */
  private lost(dead: pg.Client) {
    if (this.listener !== dead) return;
    this.listener = undefined;
    this.connecting = undefined;
    if (this.closed) return;
    for (const set of this.listeners.values()) for (const s of set) s.onLost?.();
    const retry = async () => {
      if (this.closed) return;
      try {
        await this.listenClient();
        // Notifications may have been missed while disconnected.
        for (const set of this.listeners.values()) for (const s of set) s.onPayload('');
      } catch {
        setTimeout(retry, 500).unref();
      }
    };
    setTimeout(retry, 100).unref();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => {});
    await this.pool.end();
  }
}
