import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

export interface LivenessInput {
  /** Worst event-loop delay seen in the last sampling window (ms). */
  eventLoopLagMs: number;
  /** Informer errors, and since when (ms) some have been reported without a break. */
  informerErrors: string[];
  informerErrorsForMs: number;
  /** This replica believes it leads, but its last renew is older than the renew deadline. */
  leaderStale: boolean;
}

export interface LivenessLimits {
  maxEventLoopLagMs: number;
  maxInformerErrorMs: number;
}

export const DEFAULT_LIVENESS: LivenessLimits = { maxEventLoopLagMs: 10_000, maxInformerErrorMs: 300_000 };

/**
 * Pure: is the process alive in the sense a kubelet should act on (restart it)? A blocked event
 * loop, informers failing for minutes, or a leader that stopped renewing but still thinks it leads.
 * Transient trouble (one failed list, a slow GC) stays healthy.
 */
export function livenessVerdict(
  i: LivenessInput,
  l: LivenessLimits = DEFAULT_LIVENESS,
): { ok: boolean; problems: string[] } {
  const problems: string[] = [];
  if (i.eventLoopLagMs > l.maxEventLoopLagMs)
    problems.push(`event loop blocked for ${Math.round(i.eventLoopLagMs)} ms (limit ${l.maxEventLoopLagMs} ms)`);
  if (i.informerErrors.length && i.informerErrorsForMs > l.maxInformerErrorMs)
    problems.push(
      `informers failing for ${Math.round(i.informerErrorsForMs / 1000)} s: ${i.informerErrors.slice(0, 3).join('; ')}`,
    );
  if (i.leaderStale) problems.push('leading without a lease renewal within the renew deadline');
  return { ok: problems.length === 0, problems };
}

/** Samples the event loop and informer errors for {@link livenessVerdict}. */
export class LivenessMonitor {
  private readonly h: IntervalHistogram = monitorEventLoopDelay({ resolution: 20 });
  private lastMaxMs = 0;
  private errorsSince?: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly sources: { informerErrors(): string[]; leaderStale(): boolean },
    private readonly limits: LivenessLimits = DEFAULT_LIVENESS,
    windowMs = 10_000,
  ) {
    this.h.enable();
    this.timer = setInterval(() => {
      this.lastMaxMs = this.h.max / 1e6;
      this.h.reset();
    }, windowMs);
    this.timer.unref();
  }

  check(now = Date.now()): { ok: boolean; problems: string[]; eventLoopLagMs: number } {
    const errors = this.sources.informerErrors();
    if (!errors.length) this.errorsSince = undefined;
    else this.errorsSince ??= now;
    // The current window counts too: a loop blocked right now shows up at the next request.
    const lag = Math.max(this.lastMaxMs, this.h.max / 1e6);
    const v = livenessVerdict(
      {
        eventLoopLagMs: lag,
        informerErrors: errors,
        informerErrorsForMs: this.errorsSince === undefined ? 0 : now - this.errorsSince,
        leaderStale: this.sources.leaderStale(),
      },
      this.limits,
    );
    return { ...v, eventLoopLagMs: Math.round(lag) };
  }

  stop(): void {
    clearInterval(this.timer);
    this.h.disable();
  }
}
