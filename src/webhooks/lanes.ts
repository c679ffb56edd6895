// One worker's view of each subscription it delivers for (a "lane"): an adaptive in-flight ceiling
// (AIMD from 1: +1 per success up to maxInFlight, halved by a timeout, connection failure, 5xx or 429, never
// below 1), its own connection pool, a Retry-After pause, and what it knows about due work. Nothing here
// is shared between subscriptions, so a failing endpoint can only use up its own lane.
import type { Agent } from 'undici';
import type { ClientTls } from './sender.ts';
import type { SendResult } from './outcome.ts';

/** Highest maxInFlight a subscription may set; a lane's pool never has fewer sockets than its ceiling. */
export const MAX_IN_FLIGHT_LIMIT = 64;
/**
 * What a worker holds of one lane, in ceilings: one in flight and the rest claimed and waiting to start, so a
 * lane keeps sending while its next claim is under way. Measured (BENCHMARKS.md, the drain): with one ceiling
 * waiting a lane at 16 in flight emptied its waiting list within ~1 ms and idled whenever a claim took longer,
 * as it does when PostgreSQL shares the cores; with three, the same drain ran 13% faster on 15% less CPU per
 * delivery (fewer, fuller claims).
 */
export const HELD_CEILINGS = 4;
/**
 * A broker destination's lane keeps this many times its ceiling in flight: its publishes go down one connection
 * (amqp, nats), pipelined, each settled by its confirm, so a ceiling of maxInFlight left the broker's round trip
 * idle between them and spared no receiver a connection. Its claims hold HELD_CEILINGS of that (fuller claims: a
 * claim per ~100 deliveries in the drain bench where it was one per ~26). See docs/destinations.md.
 */
export const BROKER_PIPELINE = 4;
/**
 * Most due times a lane remembers (the earliest are kept; a later one dropped here is found by the fallback sweep).
 * One per retry this worker scheduled: a lane with more retries pending than this is a failing endpoint with a backlog.
 */
export const DUE_TIMES_KEPT = 1024;
/** A lane idle this long closes its pool (and is forgotten if nothing else is known about it). */
export const LANE_IDLE_MS = 30_000;

export type Signal = 'up' | 'down' | 'keep';

/** How an attempt's outcome moves the ceiling: answers that show an overloaded or unreachable endpoint halve it. */
export function signalOf(res: Pick<SendResult, 'ok' | 'statusCode' | 'errorCode'>): Signal {
  if (res.ok) return 'up';
  switch (res.errorCode) {
    case 'TIMEOUT':
    case 'CONNECTION':
    case 'DNS':
    case 'TLS':
    case 'BROKER_UNREACHABLE':
    case 'BROKER_TIMEOUT':
      return 'down';
    case 'HTTP_STATUS':
      return res.statusCode !== null && (res.statusCode >= 500 || res.statusCode === 429) ? 'down' : 'keep';
    default:
      return 'keep';
  }
}

/** W: what the dispatcher keeps for a claimed delivery that has not started yet. */
export class Lane<W = unknown> {
  /** The subscription's maxInFlight (as last read from the database). */
  max: number;
  /** Attempts in flight per unit of the ceiling: 1 for HTTP, BROKER_PIPELINE for a broker destination (set by a claim). */
  pipeline = 1;
  /** Current ceiling of attempts in flight in this process. */
  cap: number;
  inflight = 0;
  /** Attempts of this lane finished and waiting for the result writer (the dispatcher's back-pressure). */
  unwritten = 0;
  /**
   * Claimed deliveries waiting for a slot (up to HELD_CEILINGS − 1 ceilings' worth, so the next attempt starts the
   * moment one ends instead of after a database round trip). Their deadline starts only when they are sent.
   */
  waiting: W[] = [];
  /** Claimable work may exist now (a notification, a full claim, a due time reached). */
  due = false;
  /**
   * Date.now() times when known work falls due (each retry this worker scheduled, the sweep's next due time), ascending.
   * Every one is kept, not only the earliest: a claim at the first takes only what is due then, and the retries due
   * later must each wake the lane in turn (remembering the earliest alone left them to the next sweep, up to 2 s late).
   */
  private dueTimes: number[] = [];
  /** Date.now() before which no attempt may start (Retry-After). */
  pausedUntil = 0;
  /** When this lane was last given a claim (round-robin between ready lanes). */
  lastClaim = 0;
  lastActive = Date.now();
  private agent: Agent | undefined;
  /** The client certificate the pool presents (mutual TLS), or null. */
  private agentTls: ClientTls | null = null;

  constructor(readonly id: string, max: number, private makePool: (clientTls: ClientTls | null) => Agent) {
    this.max = max;
    // Slow start: one attempt until the endpoint has answered; each success adds one (so a healthy lane
    // doubles per round trip), and an endpoint that never answers costs a single attempt.
    this.cap = 1;
  }

  /** The earliest known due time; Infinity: none known. */
  get dueAt(): number {
    return this.dueTimes.length > 0 ? this.dueTimes[0] : Infinity;
  }

  /** Work falls due at `at` (Date.now() time). */
  addDue(at: number): void {
    const t = this.dueTimes;
    if (t.length >= DUE_TIMES_KEPT && at >= t[t.length - 1]) return;
    let lo = 0;
    let hi = t.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (t[mid] <= at) lo = mid + 1;
      else hi = mid;
    }
    if (t[lo - 1] === at) return;
    t.splice(lo, 0, at);
    if (t.length > DUE_TIMES_KEPT) t.pop();
  }

  /** Forgets the due times reached by `now`; true when there was one (the lane has due work). */
  takeDue(now: number): boolean {
    let n = 0;
    while (n < this.dueTimes.length && this.dueTimes[n] <= now) n++;
    if (n > 0) this.dueTimes.splice(0, n);
    return n > 0;
  }

  /** How many more attempts may start now. */
  startRoom(now: number): number {
    return now < this.pausedUntil ? 0 : Math.max(0, this.cap * this.pipeline - this.inflight);
  }

  /**
   * How many more deliveries a claim may take for time `at`: HELD_CEILINGS ceilings in flight and waiting, none while
   * paused then. A claim made ahead (CLAIM_AHEAD_MS in queue-store.ts) passes the time it claims for, so a pause ending
   * within it does not stop the claim: what it takes starts at the pause's end.
   */
  room(at: number): number {
    return at < this.pausedUntil ? 0 : Math.max(0, HELD_CEILINGS * this.cap * this.pipeline - this.inflight - this.waiting.length);
  }

  /** Most deliveries this worker may hold of the lane, in units of maxInFlight (the claim's bound). */
  get heldCeilings(): number {
    return HELD_CEILINGS * this.pipeline;
  }

  /** Attempts in flight plus deliveries waiting (what this worker holds leases for). */
  get held(): number {
    return this.inflight + this.waiting.length;
  }

  setMax(max: number): void {
    if (max === this.max) return;
    this.max = max;
    this.cap = Math.min(this.cap, max);
    if (this.cap < 1) this.cap = 1;
  }

  feedback(s: Signal): void {
    if (s === 'up') this.cap = Math.min(this.max, this.cap + 1);
    else if (s === 'down') this.cap = Math.max(1, Math.floor(this.cap / 2));
  }

  /** No attempt starts before `untilMs` (Retry-After); the dispatcher makes the pause's end a due time. */
  pause(untilMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, untilMs);
  }

  /** The lane's pool, presenting `clientTls`; a changed certificate, key or CA gets a new pool (the old one finishes its requests). */
  pool(clientTls: ClientTls | null = null): Agent {
    this.lastActive = Date.now();
    const a = this.agentTls;
    if (this.agent && (a?.cert !== clientTls?.cert || a?.key !== clientTls?.key || a?.ca !== clientTls?.ca)) void this.closePool();
    this.agentTls = clientTls;
    return (this.agent ??= this.makePool(clientTls));
  }

  /** Closes the pool if idle long enough; true when the lane holds nothing worth remembering either. */
  idle(now: number): boolean {
    if (this.held > 0 || now - this.lastActive < LANE_IDLE_MS) return false;
    void this.closePool();
    return !this.due && this.dueAt === Infinity && this.cap === this.max && now >= this.pausedUntil;
  }

  async closePool(): Promise<void> {
    const a = this.agent;
    this.agent = undefined;
    await a?.close().catch(() => {});
  }
}
