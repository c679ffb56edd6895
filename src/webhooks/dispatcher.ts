// The webhook worker: one lane per subscription (lanes.ts) with its own adaptive in-flight ceiling and
// connection pool; claims due deliveries only for lanes with room and known work (named by NOTIFY, by a
// full claim, by a due time, or by a fallback sweep), sends them at once (never inside a transaction),
// writes outcomes in batches, and sleeps until a NOTIFY or the next due time.
import crypto from 'node:crypto';
import type { Db } from '../db/db.ts';
import type { Config } from '../config.ts';
import { wireNames } from '../config.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { CLAIM_AHEAD_MS, claimLanes, discoverLanes, releaseClaims, type AttemptResult, type LaneAsk, type StoredRequest } from './queue-store.ts';
import type { Claimed } from './claimed.ts';
import { LeanConfigs, type SendingConfig, type SignedPart } from './attempt-request.ts';
import { versionIds } from './versions-store.ts';
import { recordOutcomes } from './health.ts';
import { buildRequest, eventBody, type BuiltRequest } from './request.ts';
import { credentialsOf, redactCredentials } from './redact.ts';
import { Abort, clientTlsOf, Sender } from './sender.ts';
import type { SendResult } from './outcome.ts';
import { TokenSource } from './oauth2.ts';
import { BROKER_PIPELINE, HELD_CEILINGS, Lane, MAX_IN_FLIGHT_LIMIT, signalOf } from './lanes.ts';
import { deliveriesTotal, observeAttempt, watchQueue } from './metrics.ts';
import { BrokerDestinations, destinationKind } from './destinations/registry.ts';
import { ClaimClock, missedSlots, slotSlackMs } from './slots.ts';
import { retryAfterDefers, retryAfterPause } from './schedule.ts';
import { GONE } from './health.ts';

/** A claim triggered only by finished attempts waits for this many of them… */
const CLAIM_MIN = 8;
/** …or this long after the first of them (ms). */
const COALESCE_MS = 10;
/**
 * The result writer's next statement waits for this many results… A result write costs PostgreSQL ~0.4 ms whatever
 * its size plus ~31 µs per delivery (measured); written as soon as the previous one returned, writes carried ~14
 * results under load, and the fixed part was a third of the cost. Waiting for more (at most RECORD_WAIT_MS) made
 * the drain 10% faster on 10% less CPU in the worker and 12% less in PostgreSQL. It delays no attempt: only
 * when an attempt's outcome reaches the database.
 */
const RECORD_MIN = 64;
/** …or this long (ms). */
const RECORD_WAIT_MS = 3;
/** A result as its attempt leaves it: a lean request names its sending config, whose version id the result writer looks up. */
type Finished = Omit<AttemptResult, 'request'> & { request: Exclude<StoredRequest, { versionId: number }> | (SignedPart & { config: SendingConfig }) };

/**
 * Back-pressure from the result writer. Without it, a drain faster than the result writes (a replay's: writes of 500
 * took 0.5–0.75 s while its chunks were inserted) piled up 30,000 unwritten results; their leases ran out (45 s) and
 * the deliveries were claimed and sent again, which the replay bench counted as live deliveries 45 and 90 s late.
 * A lane with LANE_RESULTS_MAX results waiting for the writer is not claimed for (the others are: a live lane beside a
 * replay's keeps its latency), and no lane is once RESULTS_MAX wait in all.
 */
const LANE_RESULTS_MAX = 1_000;
const RESULTS_MAX = 10_000;
/** maxInFlight of a lane first heard of by a notification, until a claim reads the subscription's own. */
const DEFAULT_MAX = 16;

export interface DispatcherOptions {
  /** Most deliveries claimed per query (a statement size, not a budget: it bounds nothing in flight). */
  batch?: number;
  /** Fallback sweep for subscriptions with pending work (expired leases of dead workers, missed notifications). */
  pollMs?: number;
  /** How long stop() lets in-flight attempts finish before aborting and releasing them. */
  drainMs?: number;
  /** The lease and an attempt's budget (tests of lease expiry; otherwise both follow BULB_WEBHOOK_TIMEOUT_MS, below). */
  leaseMs?: number;
  attemptBudgetMs?: number;
  log?: (msg: string, err?: unknown) => void;
  /** A warning with its fields: a delivery failed for good, a subscription disabled (docs/operations.md, Logs). */
  warn?: (msg: string, fields: Record<string, unknown>) => void;
}

interface InFlight {
  row: Claimed;
  lane: Lane<InFlight>;
  token: string;
  /** Date.now() before which it may not be sent: its rate-cap slot (0: none). Waiting for it is not part of the deadline. */
  notBefore: number;
  /** The rate cap's slot interval (ms; 0: none): it may not be sent later than its slot's slack either (slots.ts). */
  slotMs: number;
  /** Date.now() at which its lease runs out (the claim statement's clock + leaseMs): pump starts it only with an attempt's budget left. */
  leaseEnd: number;
  abort: Abort;
  released: boolean;
  done: Promise<void>;
}

export class Dispatcher {
  private readonly sender: Sender;
  /** Subscriptions whose URL is a broker (amqp, nats): one publisher each (destinations/registry.ts). */
  private readonly brokers: BrokerDestinations;
  /** OAuth2 access tokens of OAUTH2_CLIENT_CREDENTIALS subscriptions, per subscription. */
  private readonly tokens: TokenSource;
  private readonly hmacHeader: string;
  /** The sending configs of lean attempt records, per subscription (attempt-request.ts). */
  private readonly leanConfigs = new LeanConfigs();
  private readonly leaseMs: number;
  /** The longest an attempt and its result write take (two deadlines, as sendWithToken may, + 5 s). */
  private readonly attemptBudgetMs: number;
  private readonly batch: number;
  private readonly pollMs: number;
  private readonly drainMs: number;
  private readonly log: (msg: string, err?: unknown) => void;
  private readonly warn: (msg: string, fields: Record<string, unknown>) => void;
  private lanes = new Map<string, Lane<InFlight>>();
  /** Lanes whose next waiting delivery may not start yet (its rate-cap slot, its due time, a pause): the timer that starts it then. */
  private slotTimers = new Map<Lane<InFlight>, { at: number; timer: NodeJS.Timeout }>();
  /** The claim's clock as this process sees it: rate-cap slots count from it. */
  private claimClock = new ClaimClock();
  /** Waiting deliveries of lanes paused by Retry-After: their claims are given back on the next turn. */
  private giveBack: InFlight[] = [];
  /** Lanes that answered 410 Gone: nothing more of them starts until that result is written (flushOnce). */
  private gone = new Set<Lane<InFlight>>();
  /**
   * Subscription changes this worker heard of (changed()), numbered: subscription id → the number of its last change.
   * A claim runs beside the result writer and the notifications, so its statement may have read a subscription as it
   * was before a change this worker has since acted on (a 410's disable written meanwhile, a PATCH of its URL): its rows
   * of that subscription are given back and claimed again (claim()). Kept only while a claim that may predate them runs.
   */
  private changes = new Map<string, number>();
  private changeCount = 0;
  private inflight = new Map<string, InFlight>();
  private results: Finished[] = [];
  /** The result writer, while it runs (one statement at a time, beside the claims). */
  private flushing: Promise<void> | null = null;
  /** The fallback sweep, while it runs (beside the claims). */
  private sweeping: Promise<void> | null = null;
  private woken = false;
  private lookNow = true;
  private sweepAt = 0;
  private drained = false;
  private completed = 0;
  private firstCompletedAt = 0;
  private sleeper: (() => void) | undefined;
  /** Date.now() at which the loop's current sleep ends (0 while it is awake). */
  private sleepsUntil = 0;
  private loop: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private stopping = false;
  private started = false;

  constructor(private db: Db, private config: Config, opts: DispatcherOptions = {}) {
    this.sender = new Sender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate, proxy: config.webhookProxy });
    this.tokens = new TokenSource(this.sender, config.webhookTimeoutMs);
    this.brokers = new BrokerDestinations({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate, proxy: config.webhookProxy });
    this.hmacHeader = wireNames(config.serviceName).hmacHeader;
    // A lease outlives the longest attempt (two deadlines: an OAuth2 attempt's budget, sendWithToken) plus the batched
    // result write, with room for a starved process (an expired lease means a second attempt): at least 30 s. A claim
    // holds up to HELD_CEILINGS ceilings of a lane, which start one ceiling after another: the lease covers them all.
    // (It covered one attempt until 2026-11-28: behind a receiver answering in 11 s the last quarter of a claim started
    // after its lease had run out, was claimed again meanwhile, sent again every ~33 s and never recorded, starving the
    // lane.) A held delivery that could still not finish within its lease is given back instead (pump).
    this.attemptBudgetMs = opts.attemptBudgetMs ?? config.webhookTimeoutMs * 2 + 5_000;
    this.leaseMs = opts.leaseMs ?? Math.max(this.attemptBudgetMs * HELD_CEILINGS, 30_000);
    this.batch = opts.batch ?? 128;
    this.pollMs = opts.pollMs ?? 2_000;
    this.drainMs = opts.drainMs ?? Math.min(config.webhookTimeoutMs + 500, 15_000);
    this.log = opts.log ?? ((m, e) => console.error(`webhooks: ${m}`, e ?? ''));
    this.warn = opts.warn ?? (() => {});
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    watchQueue(this.db);
    // A lost LISTEN connection may have missed changes of subscriptions: what waits is given back, as for a change.
    this.unlisten = await this.db.listen(WEBHOOK_CHANNEL, (p) => this.onNotify(p), () => {
      for (const id of this.lanes.keys()) this.changed(id);
    });
    this.loop = this.run();
  }

  /** Attempts in flight (claimed and not yet recorded). */
  get busy(): number {
    return this.inflight.size;
  }

  /** Attempts in flight for one subscription, and its current ceiling (undefined: no lane). */
  lane(subscriptionId: string): { inflight: number; cap: number; max: number } | undefined {
    const l = this.lanes.get(subscriptionId);
    return l && { inflight: l.inflight, cap: l.cap, max: l.max };
  }

  /** Look everywhere on the next turn (the fallback sweep, then a claim). */
  poke(): void {
    this.sweepAt = 0;
    this.lookNow = true;
    this.wake();
  }

  /**
   * A NOTIFY: '<id>,<id>…' names subscriptions with deliveries due now (migration 004's triggers); '*'
   * means too many to name; '' means look everywhere (notifyWorkers, operational events, and the database
   * layer's word that LISTEN was re-established after a loss, when notifications may have been missed);
   * '-<id>,…' names subscriptions that changed (store.notifySubscriptionsChanged).
   */
  private onNotify(payload: string): void {
    if (payload === '' || payload === '*') return this.poke();
    for (const id of payload.split(',')) {
      if (/^\d+$/.test(id)) this.laneOf(id).due = true;
      else if (/^-\d+$/.test(id)) this.changed(id.slice(1));
    }
    this.lookNow = true;
    this.wake();
  }

  /**
   * A subscription changed (its URL, credentials, policy or activity) or was deleted: what this worker claimed of it
   * and has not started is given back and claimed again as the subscription now is (not at all if it is inactive or
   * gone). Held until their turn, they were sent to the old URL with the old credentials for up to a lease (180 s).
   * Attempts already under way finish, and are logged.
   */
  private changed(id: string): void {
    this.changes.set(id, ++this.changeCount);
    const l = this.lanes.get(id);
    // A Retry-After pause the subscription still has is the claim's to keep (it skips a paused subscription and gives
    // its end with what it claims); one an operator's act lifted (store.liftPause) ends here.
    if (l) l.pausedUntil = 0;
    if (!l || l.waiting.length === 0) return;
    this.giveBack.push(...l.waiting.splice(0));
    l.due = true;
    this.lookNow = true;
    this.wake();
  }

  private laneOf(id: string, max = DEFAULT_MAX): Lane<InFlight> {
    let l = this.lanes.get(id);
    if (!l) {
      l = new Lane<InFlight>(id, max, (clientTls) => this.sender.pool(MAX_IN_FLIGHT_LIMIT, clientTls));
      this.lanes.set(id, l);
    }
    return l;
  }

  /**
   * Work of a lane falls due at `at` (Date.now() time): the lane is claimed for then, and a loop asleep past then
   * wakes now to sleep until then instead (a retry the result writer scheduled while the loop slept until the sweep).
   */
  private dueBy(lane: Lane<InFlight>, at: number): void {
    lane.addDue(at);
    if (this.sleepsUntil > 0 && at - CLAIM_AHEAD_MS < this.sleepsUntil) {
      this.lookNow = true;
      this.wake();
    }
  }

  /**
   * A Retry-After pause of a lane until `at` (Date.now() time): nothing of it starts before then, and it is claimed again
   * at that time (ahead by CLAIM_AHEAD_MS, as a due time: what the claim takes starts at the pause's end).
   */
  private pause(lane: Lane<InFlight>, at: number): void {
    lane.pause(at);
    this.dueBy(lane, lane.pausedUntil);
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
      const t = setTimeout(() => {
        this.lookNow = true;
        this.wake();
      }, ms);
      this.sleepsUntil = Date.now() + ms;
      this.sleeper = () => {
        clearTimeout(t);
        this.sleepsUntil = 0;
        resolve();
      };
      if (this.woken || this.stopping) this.wake();
    });
  }

  /**
   * The one loop: start writing the results gathered so far (startFlush), claim for the lanes that have room
   * and due work (one statement), start those attempts, and sleep until something happens. The claim never
   * waits for the result write (measured: the write of a batch takes 2–3 × the claim, and waiting for it
   * starved the lanes). Results that arrive while a statement runs are written together by the next one,
   * so under load every statement carries a batch.
   */
  private async run(): Promise<void> {
    while (!this.stopping) {
      this.woken = false;
      // Completions alone trigger a claim only once a few have gathered (or a lane went idle, or
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
      // Results and the claim go out side by side (two connections; they touch different rows).
      this.startFlush();
      try {
        await this.giveBackWaiting();
        if (Date.now() >= this.sweepAt && !this.stopping) this.startSweep();
        if (!this.stopping) more = await this.claim();
      } catch (err) {
        if (this.stopping) break;
        this.log('queue statement failed; retrying', err);
        this.lookNow = true;
        await this.sleep(200);
        continue;
      }
      // Lanes still have room and work: claim again at once, unless many attempts are in flight already, then
      // on the next completion (a bound on sockets, not a budget: a notification or a due time claims anyway).
      if (more && this.inflight.size < this.batch * 4) this.lookNow = true;
      if (this.lookNow) {
        await new Promise((r) => setImmediate(r));
        continue;
      }
      if (this.woken) continue;
      await this.sleep(this.completed > 0 ? COALESCE_MS : this.idleMs());
    }
  }

  /**
   * The fallback sweep: which subscriptions have pending work and when (also closes idle lanes). It runs beside
   * the loop, like the result writer, and the loop claims again when it ends: with many subscriptions holding work
   * it takes tens of ms (~25–50 ms with 1,000 × 1,000 pending), which a claim for a notified lane must not wait for.
   */
  private startSweep(): void {
    if (this.sweeping) return;
    this.sweepAt = Date.now() + this.pollMs;
    const now = Date.now();
    for (const [id, l] of this.lanes) if (l.idle(now)) this.lanes.delete(id);
    this.tokens.retain((id) => this.lanes.has(id));
    this.sweeping = discoverLanes(this.db)
      .then((found) => {
        // due_in_ms is counted from the query's own clock reading: add it to the time its answer arrived, never to a
        // time before the query (that made the lane due early by the query's latency: its claim, run before the
        // database's now() reached the due time, found nothing, and the lane waited for the next sweep).
        const answered = Date.now();
        for (const d of found) {
          const l = this.laneOf(d.subscription_id, d.max_in_flight);
          l.setMax(d.max_in_flight);
          if (d.due_in_ms <= 0) l.due = true;
          else this.dueBy(l, answered + d.due_in_ms);
        }
        this.lookNow = true;
      })
      .catch((err) => {
        if (this.stopping) return;
        this.log('sweep failed; retrying', err);
        this.sweepAt = Date.now() + 200;
      })
      .finally(() => {
        this.sweeping = null;
        this.wake();
      });
  }

  /** One claim for the ready lanes, least recently served first. Returns whether lanes still have work and room. */
  private async claim(): Promise<boolean> {
    // Back-pressure: the writer's backlog bounds the claims (flushOnce wakes the loop when it falls below).
    if (this.results.length >= RESULTS_MAX) return false;
    const now = Date.now();
    // A claim now takes what falls due by `ahead` (sent at its time, CLAIM_AHEAD_MS), a paused lane's included when its
    // pause ends by then.
    const ahead = now + CLAIM_AHEAD_MS;
    const ready: Lane<InFlight>[] = [];
    for (const l of this.lanes.values()) {
      if (l.unwritten >= LANE_RESULTS_MAX) continue;
      if (l.takeDue(ahead)) l.due = true;
      if (l.due && l.room(ahead) > 0) ready.push(l);
    }
    if (ready.length === 0) return false;
    ready.sort((a, b) => a.lastClaim - b.lastClaim);
    const share = Math.max(1, Math.ceil(this.batch / ready.length));
    const asks: LaneAsk[] = [];
    let total = 0;
    for (const l of ready) {
      if (total >= this.batch) break;
      const n = Math.min(l.room(ahead), share, this.batch - total);
      asks.push({ subscriptionId: l.id, room: n, held: l.held, ceilings: l.heldCeilings });
      l.lastClaim = now;
      total += n;
    }
    const token = crypto.randomUUID();
    // Claims run one at a time: changes heard before this one began are already in what its statement reads.
    this.changes.clear();
    const changesBefore = this.changeCount;
    const { claimed: rows, holds, clockMs } = await claimLanes(this.db, asks, this.leaseMs, token);
    // Slot and reclaim times are counted from the statement's clock: added to when its answer arrived (as due times are),
    // less how late the answer was read (an event loop busy when it came would make every slot of the claim late).
    const read = Date.now();
    const answered = clockMs === null ? read : read - this.claimClock.lag(read, clockMs);
    const got = new Map<string, number>();
    for (const row of rows) {
      const id = String(row.subscription_id);
      got.set(id, (got.get(id) ?? 0) + 1);
      const l = this.laneOf(id, row.max_in_flight);
      l.setMax(row.max_in_flight);
      l.pipeline = destinationKind(row.url) === 'http' ? 1 : BROKER_PIPELINE;
      // Not before its rate-cap slot, nor before its due time or its subscription's pause's end (claimed ahead of them).
      const due = row.due_at_ms === null ? null : this.claimClock.local(row.due_at_ms);
      const paused = row.paused_until_ms === null ? null : this.claimClock.local(row.paused_until_ms);
      const notBefore = Math.max(row.send_in_ms === null ? 0 : answered + row.send_in_ms, due !== null && due > answered ? due : 0,
        paused !== null && paused > answered ? paused : 0);
      this.hold(row, l, token, notBefore, row.slot_ms ?? 0, answered + this.leaseMs);
    }
    // A subscription changed while the statement ran: what it gave of it may be of the subscription as it was (its old
    // URL or credentials, or active though a 410 has disabled it since): given back, claimed again as it now is. Until
    // 2026-11-28 such rows were sent (a second request after a 410, on PostgreSQL).
    for (const id of got.keys()) if ((this.changes.get(id) ?? 0) > changesBefore) this.changed(id);
    for (const id of got.keys()) this.pump(this.lanes.get(id)!);
    // A lane that gave less than asked has nothing more claimable now: it waits for a notification or a due time.
    // (The claim also stops at the subscription's maxInFlight, which a lane first heard of by NOTIFY learns here.)
    for (const a of asks) {
      const l = this.lanes.get(a.subscriptionId)!;
      if ((got.get(a.subscriptionId) ?? 0) < Math.min(a.room, l.heldCeilings * l.max - a.held)) l.due = false;
    }
    // A rate-capped lane that took every slot it had may have more: claimed again once half its slots have passed.
    for (const h of holds) {
      const l = this.lanes.get(h.subscription_id);
      if (l && (got.get(h.subscription_id) ?? 0) >= h.slots) this.dueBy(l, answered + Math.max(1, h.reclaim_in_ms));
    }
    return ready.length > asks.length || asks.some((a) => this.lanes.get(a.subscriptionId)!.due && this.lanes.get(a.subscriptionId)!.room(Date.now() + CLAIM_AHEAD_MS) > 0);
  }

  /** How long to sleep with nothing to do: until the next known due time or the sweep, whichever is first. */
  private idleMs(): number {
    let next = this.sweepAt;
    for (const l of this.lanes.values()) if (l.dueAt - CLAIM_AHEAD_MS < next) next = l.dueAt - CLAIM_AHEAD_MS;
    return Math.max(1, Math.min(this.pollMs, next - Date.now() + 2));
  }

  /** A claimed delivery joins its lane's waiting list (pump starts it as soon as the lane has a slot and its time came). */
  private hold(row: Claimed, lane: Lane<InFlight>, token: string, notBefore: number, slotMs: number, leaseEnd: number): void {
    const f: InFlight = { row, lane, token, notBefore, slotMs, leaseEnd, abort: new Abort(), released: false, done: Promise.resolve() };
    this.inflight.set(String(row.id), f);
    // In notBefore order (a delivery due now goes before one claimed ahead of its time; slots come in order anyway).
    const w = lane.waiting;
    let i = w.length;
    while (i > 0 && w[i - 1].notBefore > notBefore) i--;
    w.splice(i, 0, f);
  }

  /**
   * Starts waiting deliveries while the lane has slots (not while stopping), each not before its rate-cap slot (they
   * wait in claim order, which is slot order), nor before a Retry-After pause's end: the first one not yet due starts by
   * a timer. One whose slot passed more than its slack ago takes the lane's next slot instead, and the deliveries left
   * without one are given back (slots.ts: a late send followed by a timely one would put more than the cap in a second).
   */
  private pump(lane: Lane<InFlight>): void {
    while (!this.stopping && lane.waiting.length > 0) {
      if (Date.now() < lane.pausedUntil) return this.holdPaused(lane);
      if (this.gone.has(lane)) return;
      if (lane.startRoom(Date.now()) === 0) return;
      const head = lane.waiting[0];
      if (head.slotMs > 0 && Date.now() - head.notBefore > slotSlackMs(head.slotMs)) {
        this.giveBackAndReclaim(lane, missedSlots(lane.waiting, Date.now())); // claimed again, with new slots
        continue;
      }
      if (head.notBefore > Date.now()) return this.startAt(lane, head.notBefore);
      if (Date.now() + this.attemptBudgetMs > head.leaseEnd) {
        // Its lease would run out before its attempt and result could be written: another claim could take and send it
        // too, and this result would not count (the token changed). Given back, due again for any worker.
        this.giveBackAndReclaim(lane, [lane.waiting.shift()!]);
        continue;
      }
      const f = lane.waiting.shift()!;
      lane.inflight++;
      f.done = this.attempt(f)
        .catch((err) => this.log('attempt crashed', err))
        .finally(() => {
          lane.inflight--;
          if (lane.held === 0) this.drained = true; // that endpoint is idle: claim for it now
          this.pump(lane);
          this.wake();
        });
    }
  }

  /** Gives these waiting deliveries' claims back and has the lane claimed again at once. */
  private giveBackAndReclaim(lane: Lane<InFlight>, fs: InFlight[]): void {
    this.giveBack.push(...fs);
    lane.due = true;
    this.lookNow = true;
    this.wake();
  }

  /**
   * A paused lane's waiting deliveries: those a claim took ahead of the pause's end start at its end; those claimed
   * before the pause was known are given back (due again for any worker when it ends), as the pause gave back the
   * waiting ones: held through a pause of up to an hour, their leases would run out and another worker send them too.
   */
  private holdPaused(lane: Lane<InFlight>): void {
    const early = lane.waiting.filter((f) => f.notBefore < lane.pausedUntil - CLAIM_AHEAD_MS);
    if (early.length > 0) {
      lane.waiting = lane.waiting.filter((f) => f.notBefore >= lane.pausedUntil - CLAIM_AHEAD_MS);
      this.giveBack.push(...early);
      this.wake();
    }
    if (lane.waiting.length > 0) this.startAt(lane, lane.pausedUntil);
  }

  /** Pumps the lane at `at` (Date.now() time): one timer per lane, moved earlier by an earlier time (a head claimed since). */
  private startAt(lane: Lane<InFlight>, at: number): void {
    const t = this.slotTimers.get(lane);
    if (t && t.at <= at) return;
    if (t) clearTimeout(t.timer);
    this.slotTimers.set(lane, { at, timer: setTimeout(() => {
      this.slotTimers.delete(lane);
      this.pump(lane);
    }, at - Date.now()) });
  }

  /** Gives back the claims of deliveries waiting in paused lanes (due again for any worker once the pause ends). */
  private async giveBackWaiting(): Promise<void> {
    if (this.giveBack.length === 0) return;
    const fs = this.giveBack.splice(0);
    const byToken = new Map<string, Claimed[]>();
    for (const f of fs) byToken.set(f.token, [...(byToken.get(f.token) ?? []), f.row]);
    try {
      for (const [token, rows] of byToken) await releaseClaims(this.db, rows, token);
      for (const f of fs) this.inflight.delete(String(f.row.id));
    } catch (err) {
      this.giveBack.unshift(...fs);
      throw err;
    }
  }

  private async attempt(f: InFlight): Promise<void> {
    const { row, lane } = f;
    const startedAt = new Date();
    let req: BuiltRequest;
    let res: SendResult;
    let tokens: string[] = [];
    if (row.secret_error !== null) {
      // A secret of this subscription cannot be opened: nothing can be signed or authenticated, so nothing is sent.
      req = { body: eventBody(row), headers: {}, logHeaders: {}, credential: null };
      res = { ok: false, statusCode: null, errorCode: 'SECRET_UNREADABLE', responseBody: row.secret_error, retryAfterMs: null, durationMs: 0 };
    } else if (row.auth_method === 'OAUTH2_CLIENT_CREDENTIALS') {
      ({ req, res, tokens } = await this.sendWithToken(row, lane, f.abort, startedAt.getTime()));
    } else {
      req = buildRequest(row, this.hmacHeader, startedAt.getTime());
      if (destinationKind(row.url) === 'http') {
        const clientTls = clientTlsOf(row);
        res = await this.sender.send(lane.pool(clientTls), row.url, req.headers, req.body, f.abort, clientTls !== null);
      } else {
        res = await this.brokers.send(row, { id: row.event_uuid, body: req.body, headers: req.headers }, f.abort);
      }
    }
    if (f.released) return; // shutdown gave the claim back; another worker will attempt it
    const endedAt = performance.now();
    lane.feedback(signalOf(res));
    // Retry-After pauses the lane (at least RETRY_AFTER_MIN_MS) and, while the delivery has deferrals left, keeps its
    // schedule position; past them it is an ordinary failure that waits at least as long (schedule.ts).
    const pauseMs = res.retryAfterMs === null ? null : retryAfterPause(res.retryAfterMs);
    const defers = pauseMs !== null && retryAfterDefers(row.attempt_count, row.schedule_pos);
    if (pauseMs !== null) {
      // Until the result's write says when the database's pause ends (flushOnce): counted from the write, it is later.
      this.pause(lane, Date.now() + pauseMs);
      this.giveBack.push(...lane.waiting.splice(0));
    }
    // 410 Gone disables the subscription when its result is written; until then nothing more of the lane starts.
    if (res.statusCode === GONE) this.gone.add(lane);
    observeAttempt(res.ok, res.errorCode, res.durationMs / 1000);
    lane.unwritten++;
    this.results.push({
      deliveryId: row.id,
      deliveryCreatedAt: row.created_at,
      lockToken: f.token,
      subscriptionId: row.subscription_id,
      attemptNumber: row.attempt_count + 1,
      startedAt: startedAt.toISOString(),
      durationMs: res.durationMs,
      statusCode: res.statusCode,
      errorCode: res.errorCode,
      ok: res.ok,
      schedulePos: row.schedule_pos,
      retryAfterMs: defers ? pauseMs : null,
      leastDelayMs: defers ? null : pauseMs,
      endedAt,
      request: storedRequest(this.leanConfigs, row, req, this.hmacHeader, startedAt.getTime()),
      responseBody: redactCredentials(res.responseBody, credentialsOf(row, tokens)), // a receiver may echo a credential back, in any form
    });
    if (this.completed++ === 0) this.firstCompletedAt = performance.now();
  }

  /**
   * An OAUTH2_CLIENT_CREDENTIALS attempt: the subscription's token (cached, or fetched), the request with it, and on a
   * 401 one refetch and one more request, all within two webhook deadlines (each step gets at most one, and what is
   * left: a 401 with less than a second left stands). A token endpoint that gives no usable token fails the attempt
   * with OAUTH_TOKEN_FAILED and the reason (nothing sent to the receiver), or BLOCKED_ADDRESS when the address guard
   * refused the token endpoint (as it is for a receiver it refuses). `tokens`: what was sent, redacted from the log.
   */
  private async sendWithToken(row: Claimed, lane: Lane<InFlight>, abort: Abort, nowMs: number): Promise<{ req: BuiltRequest; res: SendResult; tokens: string[] }> {
    const t0 = performance.now();
    const budgetEnd = t0 + 2 * this.config.webhookTimeoutMs;
    const left = () => Math.max(1, Math.round(budgetEnd - performance.now()));
    const tokens: string[] = [];
    const failed = (reason: string, req: BuiltRequest, blocked = false) => ({
      req, tokens,
      res: { ok: false, statusCode: null, errorCode: blocked ? 'BLOCKED_ADDRESS' as const : 'OAUTH_TOKEN_FAILED' as const, responseBody: reason, retryAfterMs: null, durationMs: Math.round(performance.now() - t0) },
    });
    const clientTls = clientTlsOf(row);
    let tok = await this.tokens.get(row, left());
    if (!tok.ok) return failed(tok.reason, { body: eventBody(row), headers: {}, logHeaders: {}, credential: null }, tok.blocked);
    tokens.push(tok.token);
    let req = buildRequest(row, this.hmacHeader, nowMs, tok.token);
    let res = await this.sender.send(lane.pool(clientTls), row.url, req.headers, req.body, abort, clientTls !== null, left());
    if (res.statusCode === 401 && !abort.reason && left() >= 1_000) {
      this.tokens.invalidate(row.subscription_id, tok.token);
      tok = await this.tokens.get(row, left());
      if (!tok.ok) return failed(`the receiver answered 401; refetching the token failed: ${tok.reason}`, req, tok.blocked);
      tokens.push(tok.token);
      req = buildRequest(row, this.hmacHeader, Date.now(), tok.token);
      res = await this.sender.send(lane.pool(clientTls), row.url, req.headers, req.body, abort, clientTls !== null, left());
      // Refused too: not kept, so that the next attempt fetches another rather than sending this one first (each later
      // attempt cost a refused request and a fetch; found by a probe).
      if (res.statusCode === 401) this.tokens.invalidate(row.subscription_id, tok.token);
    }
    return { req, res: { ...res, durationMs: Math.round(performance.now() - t0) }, tokens };
  }

  /**
   * Starts the result writer unless it runs: it writes batches until none is left, each after the one before and,
   * when fewer than RECORD_MIN results have gathered meanwhile, RECORD_WAIT_MS later (after a failure, it retries
   * on the next turn).
   */
  private startFlush(): void {
    if (this.flushing || this.results.length === 0) return;
    this.flushing = (async () => {
      try {
        while (this.results.length > 0) {
          await this.flushOnce();
          if (this.results.length < RECORD_MIN && !this.stopping) await new Promise((r) => setTimeout(r, RECORD_WAIT_MS));
        }
      } catch (err) {
        if (!this.stopping) {
          this.log('recording results failed; retrying', err);
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        this.flushing = null;
        if (this.results.length > 0) {
          this.lookNow = true;
          this.wake();
        }
      }
    })();
  }

  /** Writes the results gathered so far (up to 500) in one statement. */
  private async flushOnce(): Promise<void> {
    const batch = this.results.splice(0, 500);
    try {
      const { states, notices } = await recordOutcomes(this.db, this.config, await this.withVersions(batch));
      const answered = Date.now();
      for (const n of notices) this.warn(n.message, n.fields);
      // Counted per outcome once per batch (a labelled increment per delivery hashed its labels each time).
      const outcomes = new Map<string, number>();
      for (const st of states) {
        const outcome = st.status === 'pending' ? 'retry' : st.status;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        // A retry this worker scheduled: its lane is claimed at that time, the loop woken for it if it sleeps past it
        // (other workers learn of it by the sweep). Its time on the database's clock, mapped as the claims' slots are:
        // counted from when the answer was read (as the sweep's due times are), every retry was late by the rest of a
        // failure's transaction and its reading (on PGlite under load, 70–320 ms: docs/delivery-policies.md).
        const lane = this.inflight.get(String(st.id))?.lane;
        if (st.status === 'pending' && st.due_in_ms !== null && lane) {
          const at = st.due_at_ms === null ? null : this.claimClock.local(Number(st.due_at_ms));
          this.dueBy(lane, at ?? answered + Number(st.due_in_ms));
        }
        // After a Retry-After answer, the subscription's pause as the database holds it (counted from the write, so later
        // than the lane's own, counted from the answer): the lane is claimed again at its end. Claimed at the lane's end only, the claim
        // found the subscription still paused and the lane waited for the fallback sweep (retries 0.5–1.8 s late).
        const pausedUntil = st.paused_until_ms === null ? null : this.claimClock.local(Number(st.paused_until_ms));
        if (pausedUntil !== null && lane) this.pause(lane, pausedUntil);
      }
      for (const [outcome, n] of outcomes) deliveriesTotal.inc({ outcome }, n);
      // A 410 written: its subscription is disabled now, and what its lane holds is claimed again as it now is (not at all).
      for (const r of batch) {
        const lane = r.statusCode === GONE ? this.inflight.get(String(r.deliveryId))?.lane : undefined;
        if (lane && this.gone.delete(lane)) this.changed(lane.id);
      }
      let heldBack = this.results.length + batch.length >= RESULTS_MAX;
      for (const r of batch) {
        const f = this.inflight.get(String(r.deliveryId));
        if (f && f.lane.unwritten-- === LANE_RESULTS_MAX) heldBack = true;
        this.inflight.delete(String(r.deliveryId));
      }
      if (heldBack) {
        this.lookNow = true; // claims were held back by the backlog: claim again
        this.wake();
      }
    } catch (err) {
      this.results.unshift(...batch);
      throw err;
    }
  }

  /**
   * The results with their configs' version ids (written first when new: one statement per new config and process,
   * committed before the results that point at them).
   */
  private async withVersions(batch: Finished[]): Promise<AttemptResult[]> {
    // Each config once (the same object for a subscription's requests: LeanConfigs), not once per result.
    const configs = new Set<SendingConfig>();
    for (const r of batch) if ('config' in r.request) configs.add(r.request.config);
    const unique = [...configs];
    const ids = unique.length === 0 ? [] : await versionIds(this.db, unique);
    const idOf = new Map(unique.map((c, i) => [c, ids[i]]));
    return batch.map((r) => {
      if (!('config' in r.request)) return { ...r, request: r.request };
      const { signatures, timestampSkew } = r.request;
      return { ...r, request: { versionId: idOf.get(r.request.config)!, signatures, timestampSkew } };
    });
  }

  /**
   * Stops claiming, lets in-flight attempts finish for up to drainMs, aborts and releases the rest
   * (their leases cleared so any worker retries them at once), writes every result, closes the lanes' pools.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const t of this.slotTimers.values()) clearTimeout(t.timer);
    this.slotTimers.clear();
    this.wake();
    await this.unlisten?.().catch(() => {});
    await this.loop;
    await this.sweeping;
    await this.flushing;
    const all = () => Promise.all([...this.inflight.values()].map((f) => f.done));
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([all(), new Promise((r) => (graceTimer = setTimeout(r, this.drainMs)))]);
    clearTimeout(graceTimer);
    const left = [...this.inflight.values()].filter((f) => !this.results.some((r) => String(r.deliveryId) === String(f.row.id)));
    for (const f of left) {
      f.released = true;
      f.abort.abort(new Error('shutting down'));
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
    const byToken = new Map<string, Claimed[]>();
    for (const f of left) byToken.set(f.token, [...(byToken.get(f.token) ?? []), f.row]);
    for (const [token, rows] of byToken) await releaseClaims(this.db, rows, token).catch((e) => this.log('release failed', e));
    for (const f of left) this.inflight.delete(String(f.row.id));
    await Promise.all([...this.lanes.values()].map((l) => l.closePool()));
    await this.brokers.close();
    await this.sender.close();
  }
}

/**
 * What the attempt row keeps of the request it logged: lean (its subscription's sending config and the signed part)
 * whenever that rebuilds it exactly (attempt-request.ts), else whole.
 */
function storedRequest(configs: LeanConfigs, row: Claimed, req: BuiltRequest, hmacHeader: string, startedAtMs: number): Finished['request'] {
  const sub = { subscriptionId: row.subscription_id, url: row.url, webhookVersion: row.webhook_version };
  const lean = configs.of(req.logHeaders, req.body, row, sub, hmacHeader, startedAtMs, req.signed);
  return lean ? { config: lean.config, ...lean.signed } : { url: row.url, headers: req.logHeaders, body: req.body };
}
