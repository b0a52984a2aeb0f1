/**
 * A keyed work queue in the style of client-go's workqueue:
 * - a key is queued at most once (dedup) and never processed by two workers at once; a key added
 *   while it is being processed is re-queued when that processing is done;
 * - per-key exponential backoff for failures (`addRateLimited`, reset by `forget`);
 * - a global token bucket limits the overall processing rate;
 * - delayed adds (`addAfter`) keep only the earliest pending deadline per key.
 */
export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Sustained keys per second across the queue; Infinity for no global throttle. */
  qps?: number;
  burst?: number;
}

export function backoffDelay(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
}

export class WorkQueue<K extends string = string> {
  private readonly queue: K[] = [];
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly failures = new Map<K, number>();
  private readonly timers = new Map<K, { at: number; timer: NodeJS.Timeout }>();
  private waiters: Array<(k: K | undefined) => void> = [];
  private shuttingDown = false;
  private tokens: number;
  private lastRefill = Date.now();
  private readonly opts: Required<WorkQueueOptions>;

  constructor(opts: WorkQueueOptions = {}) {
    this.opts = { baseDelayMs: 200, maxDelayMs: 5 * 60_000, qps: 50, burst: 100, ...opts };
    this.tokens = this.opts.burst;
  }

  get length(): number {
    return this.queue.length;
  }
  isProcessing(key: K): boolean {
    return this.processing.has(key);
  }
  numRequeues(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  add(key: K): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // picked up again in done()
    const w = this.waiters.shift();
    if (w) {
      this.dirty.delete(key);
      this.processing.add(key);
      w(key);
    } else this.queue.push(key);
  }

  addAfter(key: K, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const existing = this.timers.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref?.();
    this.timers.set(key, { at, timer });
  }

  /** Requeue after this key's next backoff step. Returns the delay used. */
  addRateLimited(key: K): number {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const d = backoffDelay(n, this.opts.baseDelayMs, this.opts.maxDelayMs);
    this.addAfter(key, d);
    return d;
  }

  forget(key: K): void {
    this.failures.delete(key);
  }

  private async takeToken(): Promise<void> {
    if (this.opts.qps === Number.POSITIVE_INFINITY) return; // unthrottled lane
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.opts.burst, this.tokens + ((now - this.lastRefill) / 1000) * this.opts.qps);
      this.lastRefill = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((r) => setTimeout(r, Math.ceil(((1 - this.tokens) / this.opts.qps) * 1000)));
    }
  }

  /** Next key to process, or undefined once shut down. Call done(key) afterwards. */
  async get(): Promise<K | undefined> {
    await this.takeToken();
    if (this.shuttingDown) return undefined;
    const k = this.queue.shift();
    if (k !== undefined) {
      this.dirty.delete(k);
      this.processing.add(k);
      return k;
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  shutdown(): void {
    this.shuttingDown = true;
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  /** Wait until nothing is being processed (graceful shutdown). */
  async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.processing.size > 0) {
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
    return true;
  }
}

export type ReconcileResult = { requeueAfterMs?: number } | undefined;

/**
 * Runs `workers` loops over the queue. A throw requeues the key with backoff; a result with
 * requeueAfterMs schedules a re-check (level-triggered timeouts); success resets the backoff.
 */
export function runWorkers<K extends string>(
  q: WorkQueue<K>,
  workers: number,
  handler: (key: K) => Promise<ReconcileResult>,
  onError?: (key: K, err: unknown, retryInMs: number) => void,
): Promise<unknown> {
  const loops = Array.from({ length: workers }, async () => {
    for (;;) {
      const key = await q.get();
      if (key === undefined) return;
      try {
        const r = await handler(key);
        q.forget(key);
        if (r?.requeueAfterMs !== undefined) q.addAfter(key, r.requeueAfterMs);
      } catch (e) {
        const d = q.addRateLimited(key);
        onError?.(key, e, d);
      } finally {
        q.done(key);
      }
    }
  });
  return Promise.all(loops);
}
