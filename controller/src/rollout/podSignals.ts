import type { PodSignal } from './rolloutVerdict.js';

export interface PodSignalOptions {
  /** Pods are not read before a rollout has run this long: most finish sooner and need no pod reads. */
  minAgeMs?: number;
  /** One workload's pods are read at most this often; checks in between reuse the last answer. */
  intervalMs?: number;
  /** Workloads remembered (oldest reads forgotten first). */
  maxEntries?: number;
  now?: () => number;
}

/**
 * When a rolling-out workload's pods are listed for crash signals (CrashLoopBackOff,
 * ImagePullBackOff, restarts). Every workload event re-checks a rollout; listing pods on each cost a
 * LIST per event per app (thousands during a 500-app plan). Crash signals persist for minutes, so a
 * listing a few seconds old is as good, and a rollout younger than `minAgeMs` is not listed at all.
 */
export class PodSignalReads {
  private readonly last = new Map<string, { at: number; pods: PodSignal[] }>();
  private readonly o: Required<PodSignalOptions>;

  constructor(o: PodSignalOptions = {}) {
    this.o = { minAgeMs: 15_000, intervalMs: 10_000, maxEntries: 4096, now: Date.now, ...o };
  }

  /** The pods to judge `key`'s rollout with: listed now, the last listing, or none (too early). */
  async read(key: string, startedAt: Date, list: () => Promise<PodSignal[]>): Promise<PodSignal[] | undefined> {
    const now = this.o.now();
    if (now - startedAt.getTime() < this.o.minAgeMs) return undefined;
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.o.intervalMs) return seen.pods;
    const pods = await list();
    this.last.delete(key); // re-insert: Map order is the forgetting order
    this.last.set(key, { at: now, pods });
    while (this.last.size > this.o.maxEntries) this.last.delete(this.last.keys().next().value as string);
    return pods;
  }

  get size() {
    return this.last.size;
  }
}
