import type { Logger } from './logger.js';

export interface SampledLogOptions {
  /** Lines written per interval; the rest are counted. */
  lines: number;
  intervalMs: number;
  /** What the summary line counts, e.g. "requests refused". */
  what: string;
  now?: () => number;
}

/**
 * Log lines that a stranger can cause (refused requests) sampled: the first `lines` per interval
 * are written, the rest only counted, and one summary line ("N more requests refused in the last
 * 10s") follows the interval. A flood of junk writes a handful of lines, not one per request.
 */
export class SampledLog {
  private windowStart = Number.NEGATIVE_INFINITY;
  private written = 0;
  private suppressed = 0;
  private timer?: NodeJS.Timeout;
  private readonly now: () => number;
  /** Lines suppressed since the start (for tests and metrics). */
  totalSuppressed = 0;

  constructor(
    private readonly log: Pick<Logger, 'warn'> | undefined,
    private readonly o: SampledLogOptions,
  ) {
    this.now = o.now ?? (() => Date.now());
  }

  warn(fields: object, message: string): void {
    const t = this.now();
    if (t - this.windowStart >= this.o.intervalMs) {
      this.flush();
      this.windowStart = t;
    }
    if (this.written < this.o.lines) {
      this.written++;
      this.log?.warn(fields, message);
      return;
    }
    this.suppressed++;
    this.totalSuppressed++;
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), Math.max(0, this.windowStart + this.o.intervalMs - t));
      this.timer.unref?.();
    }
  }

  /** Writes the summary of what was suppressed (if anything) and starts a new interval. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.suppressed) {
      const seconds = Math.max(1, Math.round((this.now() - this.windowStart) / 1000));
      this.log?.warn(
        { suppressed: this.suppressed, seconds },
        `${this.suppressed} more ${this.o.what} in the last ${seconds}s`,
      );
    }
    this.suppressed = 0;
    this.written = 0;
    this.windowStart = this.now();
  }

  close(): void {
    this.flush();
  }
}
