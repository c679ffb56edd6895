// The webhook worker: claims due deliveries in batches under a lease, sends them concurrently (never
// inside a transaction), writes outcomes in batches, and sleeps until a NOTIFY or the next due time.
import crypto from 'node:crypto';
import type { Db } from '../db/db.ts';
import type { Config } from '../config.ts';
import { wireNames } from '../config.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { claimDue, msUntilNextDue, recordResults, releaseClaims, type AttemptResult, type Claimed } from './queue-store.ts';
import { buildRequest } from './request.ts';
import { housekeep } from '../housekeeping.ts';
import { Sender } from './sender.ts';
import { attemptDuration, attemptsTotal, deliveriesTotal, watchQueue } from './metrics.ts';
import { nextDelayMs } from './schedule.ts';

/** A claim triggered only by finished attempts waits for this many of them… */
const CLAIM_MIN = 8;
/** …or this long after the first of them (ms). */
const COALESCE_MS = 10;

export interface DispatcherOptions {
  /** Attempts in flight in this process. */
  maxInFlight?: number;
  /** Most deliveries claimed per query. */
  batch?: number;
  /** Fallback poll (expired leases of dead workers, missed notifications). */
  pollMs?: number;
  /** How long stop() lets in-flight attempts finish before aborting and releasing them. */
  drainMs?: number;
  log?: (msg: string, err?: unknown) => void;
}

interface InFlight {
  row: Claimed;
  token: string;
  ac: AbortController;
  released: boolean;
  done: Promise<void>;
}

export class Dispatcher {
  private readonly sender: Sender;
  private readonly hmacHeader: string;
  private readonly leaseMs: number;
  private readonly maxInFlight: number;
  private readonly batch: number;
  private readonly pollMs: number;
  private readonly drainMs: number;
  private readonly log: (msg: string, err?: unknown) => void;
  private inflight = new Map<string, InFlight>();
  private results: AttemptResult[] = [];
  private woken = false;
  private lookNow = true;
  private drained = false;
  private completed = 0;
  private firstCompletedAt = 0;
  private bySub = new Map<string, number>();
  private sleeper: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private retention: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private stopping = false;
  private started = false;

  constructor(private db: Db, private config: Config, opts: DispatcherOptions = {}) {
    this.sender = new Sender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate });
    this.hmacHeader = wireNames(config.serviceName).hmacHeader;
    // A lease outlives the longest attempt (deadline-bounded) plus the batched result write, with room for
    // a starved process (an expired lease means a second attempt): at least 30 s.
    this.leaseMs = Math.max(config.webhookTimeoutMs * 2 + 5_000, 30_000);
    this.maxInFlight = opts.maxInFlight ?? 128;
    this.batch = opts.batch ?? 64;
    this.pollMs = opts.pollMs ?? 1_000;
    this.drainMs = opts.drainMs ?? Math.min(config.webhookTimeoutMs + 500, 15_000);
    this.log = opts.log ?? ((m, e) => console.error(`webhooks: ${m}`, e ?? ''));
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    watchQueue(this.db);
    this.unlisten = await this.db.listen(WEBHOOK_CHANNEL, () => this.poke());
    const purge = () => housekeep(this.db, this.config).catch((e) => this.log('housekeeping failed', e));
    void purge();
    this.retention = setInterval(purge, 3_600_000);
    this.retention.unref();
    this.loop = this.run();
  }

  /** Attempts in flight (claimed and not yet recorded). */
  get busy(): number {
    return this.inflight.size;
  }

  /** New work may be due (a NOTIFY, a timer, a manual call): claim on the next turn. */
  poke(): void {
    this.lookNow = true;
    this.wake();
  }

  /** Run the loop again (a finished attempt, or poke()). */
  private wake(): void {
    this.woken = true;
    const r = this.sleeper;
    this.sleeper = undefined;
    r?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => this.poke(), ms);
      this.sleeper = () => {
        clearTimeout(t);
        resolve();
      };
      if (this.woken || this.stopping) this.wake();
    });
  }

  /**
   * The one loop: write the results gathered so far (one statement), claim as many due deliveries as there
   * is room for (one statement), start them, and sleep until something happens. Results that arrive while a
   * statement runs are written together by the next turn, so under load every statement carries a batch.
   */
  private async run(): Promise<void> {
    while (!this.stopping) {
      this.woken = false;
      // Completions alone trigger a claim only once a few have gathered (or a subscription went idle, or
      // COALESCE_MS passed), so each statement carries a batch instead of one row.
      const waited = this.completed > 0 ? performance.now() - this.firstCompletedAt : 0;
      const go = this.lookNow || this.drained || this.completed >= CLAIM_MIN || waited >= COALESCE_MS || this.inflight.size === 0;
      if (!go) {
        await this.sleep(Math.max(1, COALESCE_MS - waited));
        continue;
      }
      this.lookNow = false;
      this.drained = false;
      this.completed = 0;
      let more = false;
      try {
        while (this.results.length > 0) await this.flushOnce();
        const free = this.maxInFlight - this.inflight.size;
        if (free > 0 && !this.stopping) {
          const want = Math.min(free, this.batch);
          const token = crypto.randomUUID();
          const rows = await claimDue(this.db, want, this.leaseMs, token);
          for (const row of rows) this.begin(row, token);
          more = rows.length === want;
        }
      } catch (err) {
        if (this.stopping) break;
        this.log('queue statement failed; retrying', err);
        this.lookNow = true;
        await this.sleep(200);
        continue;
      }
      if (more) this.lookNow = true;
      if (this.lookNow) {
        await new Promise((r) => setImmediate(r));
        continue;
      }
      if (this.woken) continue;
      await this.sleep(this.completed > 0 ? COALESCE_MS : await this.idleMs());
    }
  }

  /** How long to sleep with nothing to do: until the next due time, at most the poll interval. */
  private async idleMs(): Promise<number> {
    // With attempts in flight, their completion wakes the loop: no need to look ahead.
    if (this.inflight.size > 0) return this.pollMs;
    try {
      const next = await msUntilNextDue(this.db);
      return next === null ? this.pollMs : Math.min(this.pollMs, next + 2);
    } catch {
      return this.pollMs;
    }
  }

  private begin(row: Claimed, token: string): void {
    const ac = new AbortController();
    const f: InFlight = { row, token, ac, released: false, done: Promise.resolve() };
    this.inflight.set(row.id, f);
    this.bySub.set(row.subscription_id, (this.bySub.get(row.subscription_id) ?? 0) + 1);
    f.done = this.attempt(f).catch((err) => this.log('attempt crashed', err));
  }

  private async attempt(f: InFlight): Promise<void> {
    const { row } = f;
    const startedAt = new Date();
    const req = buildRequest(row, this.hmacHeader, startedAt.getTime());
    const res = await this.sender.send(row.url, req.headers, req.body, f.ac.signal);
    if (f.released) return; // shutdown gave the claim back; another worker will attempt it
    const retryDelayMs = res.ok ? null : nextDelayMs(this.config.webhookRetrySchedule, row.schedule_pos);
    attemptsTotal.inc({ outcome: res.ok ? 'success' : 'failure', error_code: res.errorCode ?? '' });
    attemptDuration.observe({ outcome: res.ok ? 'success' : 'failure' }, res.durationMs / 1000);
    this.results.push({
      deliveryId: row.id,
      lockToken: f.token,
      subscriptionId: row.subscription_id,
      eventId: row.event_id,
      attemptNumber: row.attempt_count + 1,
      url: row.url,
      startedAt: startedAt.toISOString(),
      durationMs: res.durationMs,
      statusCode: res.statusCode,
      errorCode: res.errorCode,
      ok: res.ok,
      retryDelayMs,
      requestHeaders: req.logHeaders,
      requestBody: req.body,
      responseBody: res.responseBody,
    });
    if (this.completed++ === 0) this.firstCompletedAt = performance.now();
    const left = (this.bySub.get(row.subscription_id) ?? 1) - 1;
    if (left <= 0) {
      this.bySub.delete(row.subscription_id);
      this.drained = true; // that endpoint is idle: claim for it now
    } else this.bySub.set(row.subscription_id, left);
    this.wake();
  }

  /** Writes the results gathered so far (up to 500) in one statement. */
  private async flushOnce(): Promise<void> {
    const batch = this.results.splice(0, 500);
    try {
      const states = await recordResults(this.db, batch);
      for (const st of states) deliveriesTotal.inc({ outcome: st.status === 'pending' ? 'retry' : st.status });
      for (const r of batch) this.inflight.delete(r.deliveryId);
    } catch (err) {
      this.results.unshift(...batch);
      throw err;
    }
  }

  /**
   * Stops claiming, lets in-flight attempts finish for up to drainMs, aborts and releases the rest
   * (their leases cleared so any worker retries them at once), writes every result, closes the pools.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.retention) clearInterval(this.retention);
    this.wake();
    await this.unlisten?.().catch(() => {});
    await this.loop;
    const all = () => Promise.all([...this.inflight.values()].map((f) => f.done));
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([all(), new Promise((r) => (graceTimer = setTimeout(r, this.drainMs)))]);
    clearTimeout(graceTimer);
    const left = [...this.inflight.values()].filter((f) => !this.results.some((r) => r.deliveryId === f.row.id));
    for (const f of left) {
      f.released = true;
      f.ac.abort(new Error('shutting down'));
    }
    await all();
    for (let failures = 0; this.results.length > 0 && failures < 10; ) {
      // If the database stays unreachable, the leases expire and another worker retries these.
      await this.flushOnce().catch(async (e) => {
        failures++;
        this.log('recording results failed', e);
        await new Promise((r) => setTimeout(r, 200));
      });
    }
    const byToken = new Map<string, string[]>();
    for (const f of left) byToken.set(f.token, [...(byToken.get(f.token) ?? []), f.row.id]);
    for (const [token, ids] of byToken) await releaseClaims(this.db, ids, token).catch((e) => this.log('release failed', e));
    for (const f of left) this.inflight.delete(f.row.id);
    await this.sender.close().catch(() => {});
  }
}
