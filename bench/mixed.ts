// A sustained mixed load for the chaos run and the soak: creates, updates (PATCH), orders attached to
// customers and merges, spread round-robin over API processes. It remembers every order it sent with the
// outcome it saw (acknowledged, refused, or unknown because the server died or answered 5xx) so that the
// rows in the database can be checked against it afterwards.
import { ADMIN_KEY, V, customerBody, sleep } from './lib.ts';

export interface MixedStats {
  requests: number;
  byStatus: Record<string, number>;
  fiveXX: number;
  connectionErrors: number;
  creates: number;
  updates: number;
  orders: number;
  merges: number;
  fiveXXSamples: string[];
}

export interface MixedOptions {
  /** API base URLs (round-robin; a dead one is skipped for the next request). */
  targets: string[];
  concurrency?: number;
  /** Per-request deadline. */
  timeoutMs?: number;
  features: { orders: boolean; merges: boolean };
  prefix: string;
  /** Pause between requests of one loop (ms); 0 for as fast as possible. */
  pauseMs?: number;
}

export class MixedLoad {
  readonly stats: MixedStats = { requests: 0, byStatus: {}, fiveXX: 0, connectionErrors: 0, creates: 0, updates: 0, orders: 0, merges: 0, fiveXXSamples: [] };
  /** Customers acknowledged created and not (as far as we know) merged away. */
  readonly active: string[] = [];
  /** Every customer externalId acknowledged created. */
  readonly createdAcked = new Set<string>();
  /** Orders: externalId → 'acked' | 'unknown' (refused ones are dropped). */
  readonly orders = new Map<string, 'acked' | 'unknown'>();
  private n = 0;
  private rr = 0;
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(private o: MixedOptions) {}

  start(deadline: number) {
    this.running = true;
    for (let i = 0; i < (this.o.concurrency ?? 8); i++) this.loops.push(this.loop(deadline));
  }

  async stop() {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  private async loop(deadline: number) {
    // Bounded in time (deadline) and in count.
    for (let i = 0; i < 10_000_000 && this.running && Date.now() < deadline; i++) {
      try {
        await this.step();
      } catch {
        /* counted in req() */
      }
      if (this.o.pauseMs) await sleep(this.o.pauseMs);
    }
  }

  private pick<T>(a: T[]): T {
    return a[Math.floor(Math.random() * a.length)];
  }

  private async step() {
    const r = Math.random();
    if (this.active.length < 10 || r < 0.35) return this.create();
    if (r < 0.6) return this.update();
    if (this.o.features.orders && r < 0.9) return this.order();
    if (this.o.features.merges && this.active.length > 20) return this.merge();
    return this.update();
  }

  async create() {
    const ext = `${this.o.prefix}-c${this.n++}`;
    const res = await this.req('POST', `/crm/customers`, customerBody(ext));
    if (res?.status === 201) {
      this.stats.creates++;
      this.createdAcked.add(ext);
      this.active.push(ext);
    }
  }

  private async update() {
    const ext = this.pick(this.active);
    const res = await this.req('PATCH', `/crm/customers/${encodeURIComponent(ext)}`, { firstName: `Ada ${this.n++}` });
    if (res?.status === 200) this.stats.updates++;
  }

  private async order() {
    const ext = this.pick(this.active);
    const orderId = `${this.o.prefix}-o${this.n++}`;
    this.orders.set(orderId, 'unknown');
    const res = await this.req('POST', `/crm/customers/${encodeURIComponent(ext)}/orders`, {
      externalId: orderId,
      orderedAt: new Date().toISOString(),
      currency: 'EUR',
      total: '129.90',
      lineItems: [{ sku: 'SKU-1', name: 'Scarf', quantity: 1, price: '129.90' }],
    });
    if (res?.status === 201) {
      this.orders.set(orderId, 'acked');
      this.stats.orders++;
    } else if (res && res.status < 500) this.orders.delete(orderId); // refused (e.g. 409 customer disabled, or no server)
  }

  private async merge() {
    // Take the secondaries out of the pool first: they will be disabled. The primary stays (it can be
    // picked as a secondary by a concurrent merge: overlapping merges are part of the test).
    const take = () => this.active.splice(Math.floor(Math.random() * this.active.length), 1)[0];
    const secondaries = [take(), ...(Math.random() < 0.5 ? [take()] : [])];
    const primary = this.pick(this.active);
    const res = await this.req('POST', `/crm/customers/${encodeURIComponent(primary)}/merge`, { mergeWithCustomerIds: secondaries });
    if (res?.status === 200) this.stats.merges++;
    else if (res && res.status < 500) this.active.push(...secondaries); // refused: still active (or already merged; harmless)
  }

  private async req(method: string, path: string, body?: unknown): Promise<{ status: number; text: string } | undefined> {
    const targets = this.o.targets;
    const base = targets[this.rr++ % targets.length];
    this.stats.requests++;
    try {
      const r = await fetch(`${base}/api/${V}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000),
      });
      const text = await r.text();
      this.stats.byStatus[r.status] = (this.stats.byStatus[r.status] ?? 0) + 1;
      if (r.status >= 500) {
        this.stats.fiveXX++;
        if (this.stats.fiveXXSamples.length < 5) this.stats.fiveXXSamples.push(`${method} ${path} → ${r.status} ${text.slice(0, 200)}`);
      }
      return { status: r.status, text };
    } catch (err) {
      this.stats.connectionErrors++;
      await sleep(20); // the process is down: do not spin
      // Refused: the request never reached a server, so nothing can have happened.
      if ((err as any)?.cause?.code === 'ECONNREFUSED') return { status: 0, text: 'connection refused' };
      return undefined;
    }
  }
}
