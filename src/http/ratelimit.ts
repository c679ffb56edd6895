// Token buckets by key (SPEC §9: per token; also failed authentications per client address): `rate` a second, bursts up
// to `burst`. In-process.
import { ApiError } from './errors.ts';
export class RateLimiter {
  private buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private rate: number, private burst: number, private now: () => number = () => performance.now()) {}

  /** Takes one token; returns 0 if allowed, else the seconds to wait before retrying. */
  take(key: string): number {
    const b = this.bucket(key);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return this.waitOf(b);
  }

  /** Gives back a token taken for work that did not happen (never past the burst). */
  give(key: string): void {
    const b = this.buckets.get(key);
    if (b) b.tokens = Math.min(this.burst, b.tokens + 1);
  }

  /**
   * What take would answer, taking nothing, with `reserved` tokens counted as taken already: 0 while a token is left,
   * else the seconds until one is.
   */
  peek(key: string, reserved = 0): number {
    const b = this.buckets.get(key);
    const tokens = b ? (this.refill(b, this.now()), b.tokens) : this.burst;
    return tokens - reserved >= 1 ? 0 : this.waitOf({ tokens: tokens - reserved });
  }

  private bucket(key: string): { tokens: number; at: number } {
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size > 100_000) this.sweep(t);
      b = { tokens: this.burst, at: t };
      this.buckets.set(key, b);
    }
    this.refill(b, t);
    return b;
  }

  private refill(b: { tokens: number; at: number }, t: number): void {
    b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.rate);
    b.at = t;
  }

  private waitOf(b: { tokens: number }): number {
    return Math.max(1, Math.ceil((1 - b.tokens) / this.rate));
  }

  /** Forgets buckets that have refilled completely. */
  private sweep(t: number) {
    for (const [k, b] of this.buckets) if (b.tokens + ((t - b.at) / 1000) * this.rate >= this.burst) this.buckets.delete(k);
  }
}

/** The 429 for an address past its failed authentications (AuthFailures). */
export const tooManyFailures = (wait: number) =>
  new ApiError('RateLimited', 'too many requests with invalid credentials from this address', `retry after ${wait} s`).withHeader('Retry-After', String(wait));

/**
 * Failed authentications by client address: each unknown, revoked or expired token (or bad client secret) costs a
 * database lookup, so an address past its rate of failures is refused 429 before the lookup. A token in the cache is
 * admitted without asking (begin is asked only before a lookup): clients already signed in never wait for it.
 * A lookup in flight counts as a failure until it settles, so a burst of concurrent guesses cannot pass the limit
 * before the first of them is known to have failed.
 */
export class AuthFailures {
  private readonly buckets: RateLimiter;
  private readonly inFlight = new Map<string, number>();
  constructor(rate: number, burst: number, now?: () => number) {
    this.buckets = new RateLimiter(rate, burst, now);
  }

  /**
   * Before a lookup for `address`: 0 if it may be made (then call end once it settles), else the seconds until it
   * may (answer tooManyFailures, with no lookup).
   */
  begin(address: string): number {
    const n = this.inFlight.get(address) ?? 0;
    const wait = this.buckets.peek(address, n);
    if (wait === 0) this.inFlight.set(address, n + 1);
    return wait;
  }

  /** A lookup begun for `address` settled; a failed one costs the address a token. */
  end(address: string, failed: boolean): void {
    const n = (this.inFlight.get(address) ?? 1) - 1;
    if (n > 0) this.inFlight.set(address, n);
    else this.inFlight.delete(address);
    if (failed) this.buckets.take(address);
  }
}
