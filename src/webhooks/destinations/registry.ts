// The choice of sender by destination, for the dispatcher: HTTP URLs go to sender.ts, broker URLs here. Each
// subscription with a broker destination has its own publisher (one connection, opened lazily), replaced when its
// URL or credential changes or its connection breaks, closed when idle for LANE_IDLE_MS (a deleted or inactive
// subscription gets no more attempts, so it goes idle). Every publish has the HTTP attempt's deadline
// (BULB_WEBHOOK_TIMEOUT_MS): a broker that hangs is a failed attempt (BROKER_TIMEOUT), never a stalled lane.
import type { Claimed } from '../claimed.ts';
import { clientTlsOf, type Abort } from '../sender.ts';
import type { SendResult } from '../outcome.ts';
import { LANE_IDLE_MS } from '../lanes.ts';
import { AmqpPublisher } from './amqp.ts';
import { NatsPublisher } from './nats.ts';
import { failure, type BrokerMessage, type PublishOutcome, type Publisher, type PublisherOptions } from './publisher.ts';
import { destinationKind } from './url.ts';

export { destinationKind } from './url.ts';

interface Entry {
  /** The URL, credential and mutual TLS the publisher was opened with: another one means a new publisher. */
  key: string;
  publisher: Publisher;
  inflight: number;
  lastUsed: number;
}

export class BrokerDestinations {
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly opts: Omit<PublisherOptions, 'name' | 'subscription'>, private readonly idleMs = LANE_IDLE_MS) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(5_000, idleMs));
    this.sweeper.unref();
  }

  /** Subscriptions with an open (or opening) broker connection. */
  get open(): number {
    return this.entries.size;
  }

  /** Publishes one event to a claimed delivery's broker (row.url is amqp or nats), as one attempt. */
  async send(row: Claimed, msg: BrokerMessage, abort?: Abort): Promise<SendResult> {
    const t0 = performance.now();
    const e = this.entryOf(row);
    e.inflight++;
    e.lastUsed = Date.now();
    // One promise settled by the first of the publish's outcome, the deadline and an abort (no race of three).
    const out = await new Promise<PublishOutcome>((resolve) => {
      let settled = false;
      const settle = (o: PublishOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        abort?.bind(undefined);
        resolve(o);
      };
      const timer = setTimeout(() => settle(e.publisher.stalled?.() ?? failure('BROKER_TIMEOUT', `no confirm from the broker within ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
      abort?.bind((reason) => settle(failure('BROKER_UNREACHABLE', String(reason.message))));
      e.publisher.publish(msg).then(settle, (err) => settle(failure('BROKER_UNREACHABLE', String(err?.message ?? err))));
    });
    e.inflight--;
    e.lastUsed = Date.now();
    // A connection that missed the deadline is not trusted with the next publish (it may hang for good).
    if (!out.ok && out.errorCode === 'BROKER_TIMEOUT' && this.entries.get(row.subscription_id) === e) this.drop(row.subscription_id, e);
    const durationMs = Math.round(performance.now() - t0);
    return out.ok
      ? { ok: true, statusCode: null, errorCode: null, responseBody: null, retryAfterMs: null, durationMs }
      : { ok: false, statusCode: null, errorCode: out.errorCode, responseBody: out.message.slice(0, 4096), retryAfterMs: null, durationMs };
  }

  private entryOf(row: Claimed): Entry {
    const tls = clientTlsOf(row) ?? undefined;
    const key = [row.url, row.destination_password ?? '', tls?.cert ?? '', tls?.key ?? '', tls?.ca ?? ''].join('\u0000');
    let e = this.entries.get(row.subscription_id);
    if (e && (e.key !== key || e.publisher.broken)) {
      this.drop(row.subscription_id, e);
      e = undefined;
    }
    if (!e) {
      const opts = { ...this.opts, name: `bulb subscription ${row.subscription_uuid}`, subscription: row.subscription_uuid, tls };
      const publisher = destinationKind(row.url) === 'amqp'
        ? new AmqpPublisher(row.url, row.destination_password, opts)
        : new NatsPublisher(row.url, row.destination_password, opts);
      e = { key, publisher, inflight: 0, lastUsed: Date.now() };
      this.entries.set(row.subscription_id, e);
    }
    return e;
  }

  /** Forgets a publisher and closes it (publishes still in flight on it fail, and are retried as any failed attempt). */
  private drop(id: string, e: Entry): void {
    this.entries.delete(id);
    void e.publisher.close();
  }

  private closeIdle(now = Date.now()): void {
    for (const [id, e] of this.entries) if (e.inflight === 0 && (e.publisher.broken || now - e.lastUsed >= this.idleMs)) this.drop(id, e);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => e.publisher.close()));
  }
}
