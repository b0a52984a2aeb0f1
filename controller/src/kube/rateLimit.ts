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
