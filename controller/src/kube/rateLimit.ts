/** Which requests go first when the client is at its limit. */
export type RequestPriority = 'normal' | 'low';

export interface RateLimitOptions {
  /** Sustained requests per second to one cluster; 0 turns the limit off. */
  qps: number;
  /** Requests that may go at once after a quiet spell. */
  burst: number;
  now?: () => number;
  /** Told of every request that had to wait, once it may go, with how long it waited (ms). */
  onWaited?: (ms: number, priority: RequestPriority) => void;
}

export const DEFAULT_RATE_LIMIT = { qps: 50, burst: 100 } as const;

/**
 * Client-side token bucket per cluster, as client-go's (QPS/Burst), with two priorities: a start or
 * a workload storm queues thousands of derived status writes, and the steps of a running promotion
 * (copy, write, rollout checks) must not wait behind them. Waiting `normal` requests are always
 * served before `low` ones; within a priority, first come first served.
 */
export class ClientRateLimiter {
  private tokens: number;
  private last: number;
  private readonly waiting: Record<RequestPriority, Array<() => void>> = { normal: [], low: [] };
  private timer?: NodeJS.Timeout;
  private readonly now: () => number;
  /** Requests that had to wait, and for how long in all (ms); `onWaited` exports them as metrics. */
  readonly stats = { delayed: 0, waitedMs: 0 };

  constructor(private readonly o: RateLimitOptions) {
    this.now = o.now ?? (() => performance.now());
    this.tokens = o.burst;
    this.last = this.now();
  }

  get enabled(): boolean {
    return this.o.qps > 0;
  }

  /** Resolves when the request may go. */
  take(priority: RequestPriority = 'normal'): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    this.refill();
    if (this.tokens >= 1 && !this.waiting.normal.length && !this.waiting.low.length) {
      this.tokens -= 1;
      return Promise.resolve();
    }
    const since = this.now();
    this.stats.delayed++;
    return new Promise((resolve) => {
      this.waiting[priority].push(() => {
        const waited = this.now() - since;
        this.stats.waitedMs += waited;
        this.o.onWaited?.(waited, priority);
        resolve();
      });
      this.schedule();
    });
  }

  get queued(): number {
    return this.waiting.normal.length + this.waiting.low.length;
  }

  private refill() {
    const t = this.now();
    this.tokens = Math.min(this.o.burst, this.tokens + ((t - this.last) / 1000) * this.o.qps);
    this.last = t;
  }

  private schedule() {
    if (this.timer) return;
    const wait = Math.max(0, ((1 - this.tokens) / this.o.qps) * 1000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refill();
      while (this.tokens >= 1) {
        const next = this.waiting.normal.shift() ?? this.waiting.low.shift();
        if (!next) break;
        this.tokens -= 1;
        next();
      }
      if (this.queued) this.schedule();
    }, wait);
    this.timer.unref?.();
  }
}

/** A {@link ConcurrencyBudget} had no room: too many in flight and its wait queue full (or waited too long). */
export class BudgetExhausted extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetExhausted';
  }
}

export interface ConcurrencyBudgetOptions {
  /** At most this many run at once. */
  maxInFlight: number;
  /** At most this many wait for a slot; beyond, {@link ConcurrencyBudget.run} fails at once. */
  maxQueued: number;
  /** A waiter that got no slot within this long fails (ms); 0: waits as long as it takes. */
  maxWaitMs: number;
}

/**
 * A bounded number of calls in flight with a bounded, time-limited wait queue: beyond it a call
 * fails at once with {@link BudgetExhausted} (a quick 503) instead of queueing without bound. Work
 * that strangers can trigger (TokenReviews of unknown tokens) goes through one.
 */
export class ConcurrencyBudget {
  private inFlight = 0;
  private readonly waiting: Array<{ go: () => void; timer?: NodeJS.Timeout }> = [];
  /** Calls refused for want of room (exported as a metric by the owner). */
  rejected = 0;

  constructor(private readonly o: ConcurrencyBudgetOptions) {}

  get running(): number {
    return this.inFlight;
  }
  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.inFlight < this.o.maxInFlight && !this.waiting.length) {
      this.inFlight++;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.o.maxQueued) {
      this.rejected++;
      return Promise.reject(new BudgetExhausted(`${this.inFlight} in flight and ${this.waiting.length} waiting`));
    }
    return new Promise((resolve, reject) => {
      const w: { go: () => void; timer?: NodeJS.Timeout } = { go: resolve };
      if (this.o.maxWaitMs > 0) {
        w.timer = setTimeout(() => {
          const i = this.waiting.indexOf(w);
          if (i >= 0) this.waiting.splice(i, 1);
          this.rejected++;
          reject(new BudgetExhausted(`no slot within ${this.o.maxWaitMs} ms`));
        }, this.o.maxWaitMs);
        w.timer.unref?.();
      }
      this.waiting.push(w);
    });
  }

  private release() {
    const next = this.waiting.shift();
    if (!next) {
      this.inFlight--;
      return;
    }
    // The slot passes straight to the next waiter: inFlight stays the same.
    if (next.timer) clearTimeout(next.timer);
    next.go();
  }
}

export interface KeyedRateLimitOptions {
  /** Sustained events per second per key; 0 turns the limit off. */
  qps: number;
  /** Events a key may have at once after a quiet spell. */
  burst: number;
  /** Keys remembered at most; beyond, the idlest are forgotten (a forgotten key starts full). */
  maxKeys?: number;
  now?: () => number;
}

/**
 * Token buckets per key (a client address), answering at once instead of waiting: {@link take}
 * says how long the caller should wait before trying again. Bounded in memory: beyond `maxKeys`
 * the least recently used key is forgotten (and starts full again).
 */
export class KeyedRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; last: number }>();
  private readonly now: () => number;
  private readonly maxKeys: number;

  constructor(private readonly o: KeyedRateLimitOptions) {
    this.now = o.now ?? (() => performance.now());
    this.maxKeys = o.maxKeys ?? 10_000;
  }

  get enabled(): boolean {
    return this.o.qps > 0;
  }

  get size(): number {
    return this.buckets.size;
  }

  private level(key: string): { tokens: number; last: number } {
    const t = this.now();
    const b = this.buckets.get(key);
    if (!b) return { tokens: this.o.burst, last: t };
    return { tokens: Math.min(this.o.burst, b.tokens + ((t - b.last) / 1000) * this.o.qps), last: t };
  }

  /** Seconds until `key` has a token again (0: it has one now); takes nothing. */
  peek(key: string): number {
    if (!this.enabled) return 0;
    const b = this.level(key);
    return b.tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / this.o.qps));
  }

  /** Takes a token for `key`: 0 when it had one, else the seconds to wait before trying again. */
  take(key: string): number {
    if (!this.enabled) return 0;
    const b = this.level(key);
    const wait = b.tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / this.o.qps));
    if (!wait) b.tokens -= 1;
    // Re-inserted: the Map's order is the order of last use, so a source that keeps trying (and
    // being refused) is never the one forgotten.
    this.buckets.delete(key);
    this.buckets.set(key, b);
    // Over the bound: forget the least recently used source (it starts with a full bucket again).
    for (const k of this.buckets.keys()) {
      if (this.buckets.size <= this.maxKeys) break;
      this.buckets.delete(k);
    }
    return wait;
  }
}
