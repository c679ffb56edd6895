// The webhook worker: claims due deliveries in batches under a lease, sends them concurrently (never
// inside a transaction), writes outcomes in batches, and sleeps until a NOTIFY or the next due time.
import crypto from 'node:crypto';
import type { Db } from '../db/db.ts';
import type { Config } from '../config.ts';
import { wireNames } from '../config.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { claimDue, msUntilNextDue, purgeAttempts, recordResults, releaseClaims, type AttemptResult, type Claimed } from './queue-store.ts';
import { buildRequest } from './request.ts';
import { Sender } from './sender.ts';
import { attemptDuration, attemptsTotal, deliveriesTotal, watchQueue } from './metrics.ts';
import { nextDelayMs } from './schedule.ts';

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
  private pumping = false;
  private pumpAgain = false;
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private retention: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private stopping = false;
  private started = false;

  constructor(private db: Db, private config: Config, opts: DispatcherOptions = {}) {
    this.sender = new Sender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate });
    this.hmacHeader = wireNames(config.serviceName).hmacHeader;
    // A lease outlives the longest attempt (deadline-bounded) plus the batched result write.
    this.leaseMs = config.webhookTimeoutMs * 2 + 5_000;
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
    this.unlisten = await this.db.listen(WEBHOOK_CHANNEL, () => this.wake());
    const purge = () => purgeAttempts(this.db, this.config.webhookRetentionDays).catch((e) => this.log('retention failed', e));
    void purge();
    this.retention = setInterval(purge, 3_600_000);
    this.retention.unref();
    this.wake();
  }

  /** Attempts in flight (claimed and not yet recorded). */
  get busy(): number {
    return this.inflight.size;
  }

  wake(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    let failed = false;
    try {
      do {
        this.pumpAgain = false;
        while (!this.stopping) {
          const free = this.maxInFlight - this.inflight.size;
          if (free <= 0) break; // a finishing attempt wakes us
          const want = Math.min(free, this.batch);
          const token = crypto.randomUUID();
          const rows = await claimDue(this.db, want, this.leaseMs, token);
          for (const row of rows) this.begin(row, token);
          if (rows.length < want) break;
        }
      } while (this.pumpAgain && !this.stopping);
    } catch (err) {
      failed = true;
      if (!this.stopping) this.log('claim failed', err);
    } finally {
      this.pumping = false;
    }
    await this.arm(failed);
  }

  /** Sleeps until the next due time (capped by the poll interval). */
  private async arm(failed: boolean): Promise<void> {
    if (this.stopping) return;
    let ms = this.pollMs;
    if (!failed) {
      try {
        const next = await msUntilNextDue(this.db);
        if (next !== null) ms = Math.min(ms, next + 2);
      } catch {
        /* poll */
      }
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), ms);
    this.timer.unref?.();
  }

  private begin(row: Claimed, token: string): void {
    const ac = new AbortController();
    const f: InFlight = { row, token, ac, released: false, done: Promise.resolve() };
    this.inflight.set(row.id, f);
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
    this.flush();
  }

  /** Writes every result gathered so far in one statement; results arriving meanwhile go in the next. */
  private flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      let failures = 0;
      while (this.results.length > 0) {
        const batch = this.results.splice(0, 500);
        try {
          const states = await recordResults(this.db, batch);
          for (const s of states) deliveriesTotal.inc({ outcome: s.status === 'pending' ? 'retry' : s.status });
          for (const r of batch) this.inflight.delete(r.deliveryId);
        } catch (err) {
          this.log('recording results failed; retrying', err);
          this.results.unshift(...batch);
          await new Promise((r) => setTimeout(r, 200));
          if (this.stopping && ++failures > 10) break; // the leases expire: another worker retries them
        }
      }
      this.flushing = undefined;
      this.wake();
    })();
    return this.flushing;
  }

  /**
   * Stops claiming, lets in-flight attempts finish for up to drainMs, aborts and releases the rest
   * (their leases cleared so any worker retries them at once), writes every result, closes the pools.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.retention) clearInterval(this.retention);
    await this.unlisten?.().catch(() => {});
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
    for (let i = 0; i < 20 && this.results.length > 0; i++) await this.flush();
    if (this.flushing) await this.flushing;
    const byToken = new Map<string, string[]>();
    for (const f of left) byToken.set(f.token, [...(byToken.get(f.token) ?? []), f.row.id]);
    for (const [token, ids] of byToken) await releaseClaims(this.db, ids, token).catch((e) => this.log('release failed', e));
    for (const f of left) this.inflight.delete(f.row.id);
    await this.sender.close().catch(() => {});
  }
}
