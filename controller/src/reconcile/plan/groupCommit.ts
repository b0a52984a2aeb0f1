/** How a {@link groupCommit} batches saves into one flush. */
export interface GroupCommitOptions {
  /**
   * How long a batch may wait for more saves before it is flushed (ms); 0 flushes at once. Bounds
   * the extra latency a save can see; {@link complete} usually ends the wait sooner.
   */
  lingerMs?: number;
  /**
   * Whether waiting longer is pointless, given how many callers are blocked on a save (this batch's
   * and the running flush's): e.g. every active worker is waiting, so nobody else can join.
   * Re-checked on every save, when a flush ends, and on {@link GroupCommit.poke}.
   */
  complete?: (blocked: number) => boolean;
}

export interface GroupCommit {
  /** Resolves once a flush that started after this call (and so saw the caller's change) is done. */
  (): Promise<void>;
  /** Re-checks {@link GroupCommitOptions.complete} (call when the number of workers drops). */
  poke(): void;
}

interface Batch {
  promise: Promise<void>;
  resolve(): void;
  reject(e: unknown): void;
  /** Callers that joined this batch. */
  waiting: number;
  /** To be flushed as soon as no flush runs (lingered long enough, or nobody else will join). */
  ready: boolean;
  timer?: NodeJS.Timeout;
}

/**
 * Coalesces calls of `flush`: callers join the open batch, which is flushed once no flush is running
 * and either it waited `lingerMs` or `complete` says nobody else will join; changes made in the same
 * tick as a save always join its flush. Each caller's promise settles with the flush it joined, so a
 * failed flush rejects only its own callers and the next one still runs.
 */
export function groupCommit(flush: () => Promise<void>, o: GroupCommitOptions = {}): GroupCommit {
  const lingerMs = o.lingerMs ?? 0;
  let running: Batch | undefined;
  let open: Batch | undefined;

  const start = (b: Batch) => {
    running = b;
    clearTimeout(b.timer);
    void (async () => {
      await null; // saves made in the same tick still join this flush
      if (open === b) open = undefined;
      try {
        await flush();
        b.resolve();
      } catch (e) {
        b.reject(e);
      } finally {
        running = undefined;
        tryStart();
      }
    })();
  };

  const tryStart = () => {
    const b = open;
    if (!b || running === b) return;
    // Callers blocked on the running flush cannot add to this batch either.
    b.ready ||= lingerMs <= 0 || (o.complete?.(b.waiting + (running?.waiting ?? 0)) ?? false);
    if (b.ready && !running) start(b);
  };

  const save = (() => {
    if (!open) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      const b: Batch = { promise, resolve, reject, waiting: 0, ready: false };
      if (lingerMs > 0) {
        b.timer = setTimeout(() => {
          b.ready = true;
          tryStart();
        }, lingerMs);
        b.timer.unref?.();
      }
      open = b;
    }
    const b = open;
    b.waiting++;
    tryStart();
    return b.promise;
  }) as GroupCommit;
  save.poke = tryStart;
  return save;
}
