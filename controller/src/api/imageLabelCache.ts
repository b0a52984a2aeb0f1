import type { ImageSourceLabels } from '@kpromo/contract';

// Image source labels for GET /diff. Registry calls cost (a manifest, maybe an index, a config blob
// per image) and the pipeline view asks for every transition every few seconds, so labels are read
// lazily, once per digest (content-addressed: the same digest has the same labels in every
// registry), a few at a time, and an answer waits for them only for a short budget: what is not read
// by then is `pending` and arrives with a later answer.

const LABELS: Record<keyof ImageSourceLabels, string> = {
  source: 'org.opencontainers.image.source',
  revision: 'org.opencontainers.image.revision',
  version: 'org.opencontainers.image.version',
  url: 'org.opencontainers.image.url',
};
/** Longer label values are dropped, not cut: a cut URL would link somewhere else. */
export const MAX_LABEL_LENGTH = 512;

/**
 * Pure: the source labels among an image's labels, trimmed; values that are no single line of at
 * most {@link MAX_LABEL_LENGTH} characters are left out. They stay untrusted text: clients check
 * URLs before linking.
 */
export function sourceLabelsOf(labels: Record<string, string>): ImageSourceLabels {
  const out: ImageSourceLabels = {};
  for (const [field, key] of Object.entries(LABELS) as Array<[keyof ImageSourceLabels, string]>) {
    const v = labels[key]?.trim();
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (v && v.length <= MAX_LABEL_LENGTH && !/[\u0000-\u001f\u007f]/.test(v)) out[field] = v;
  }
  return out;
}

export type LabelState = 'read' | 'pending' | 'unavailable';
export interface LabelLookup {
  state: LabelState;
  labels?: ImageSourceLabels;
}

export interface ImageLabelCacheOptions {
  /** Digests remembered (least recently used go first). */
  maxEntries?: number;
  /** How long read labels are kept (a digest's labels never change; this bounds staleness of mistakes). */
  ttlMs?: number;
  /** How long a failed read is remembered before the registry is asked again. */
  failureTtlMs?: number;
  /** Registry reads at once, over all answers. */
  concurrency?: number;
  /** Reads waiting for a slot; beyond it a digest stays `pending` until a later answer asks again. */
  maxQueued?: number;
  /** One read (manifests and config blob) is aborted after this long. */
  readTimeoutMs?: number;
  now?: () => number;
}

type Entry = { labels?: ImageSourceLabels; at: number };
export type LabelReader = (signal: AbortSignal) => Promise<Record<string, string>>;

/** Source labels per digest: bounded, expiring, read a few at a time, each read at most once at a time. */
export class ImageLabelCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly queue: Array<() => void> = [];
  private running = 0;
  private readonly o: Required<ImageLabelCacheOptions>;

  constructor(o: ImageLabelCacheOptions = {}) {
    this.o = {
      // A 500-app transition asks for up to 1,000 digests: keep a few transitions' worth (labels are
      // at most four short strings, so this stays a few MiB).
      maxEntries: 8192,
      ttlMs: 6 * 3600_000,
      failureTtlMs: 60_000,
      concurrency: 4,
      maxQueued: 2048,
      readTimeoutMs: 10_000,
      now: Date.now,
      ...o,
    };
  }

  /** What is known about `digest` now; starts reading it with `read` when nothing (fresh) is. */
  lookup(digest: string, read: LabelReader): LabelLookup & { done?: Promise<void> } {
    const e = this.entries.get(digest);
    if (e && this.o.now() - e.at < (e.labels ? this.o.ttlMs : this.o.failureTtlMs)) {
      this.entries.delete(digest); // most recently used last
      this.entries.set(digest, e);
      return e.labels ? { state: 'read', labels: e.labels } : { state: 'unavailable' };
    }
    const running = this.inflight.get(digest);
    if (running) return { state: 'pending', done: running };
    if (this.queue.length >= this.o.maxQueued) return { state: 'pending' };
    const done = this.slot()
      .then(async (release) => {
        try {
          const labels = await read(AbortSignal.timeout(this.o.readTimeoutMs));
          this.remember(digest, { labels: sourceLabelsOf(labels), at: this.o.now() });
        } catch {
          this.remember(digest, { at: this.o.now() });
        } finally {
          release();
        }
      })
      .finally(() => this.inflight.delete(digest));
    this.inflight.set(digest, done);
    return { state: 'pending', done };
  }

  /**
   * The labels of every digest, waiting at most `budgetMs` for the ones being read; those still
   * being read then are `pending` (their reads go on and fill the cache).
   */
  async within(wanted: ReadonlyArray<{ digest: string; read: LabelReader }>, budgetMs: number) {
    const first = wanted.map((w) => this.lookup(w.digest, w.read));
    const waits = first.map((l) => l.done).filter((d): d is Promise<void> => !!d);
    if (waits.length) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(waits),
        new Promise<void>((r) => {
          timer = setTimeout(r, budgetMs);
        }),
      ]);
      clearTimeout(timer);
    }
    const out = new Map<string, LabelLookup>();
    for (const w of wanted) {
      const e = this.entries.get(w.digest);
      out.set(
        w.digest,
        e ? (e.labels ? { state: 'read', labels: e.labels } : { state: 'unavailable' }) : { state: 'pending' },
      );
    }
    return out;
  }

  get size(): number {
    return this.entries.size;
  }

  private remember(digest: string, e: Entry) {
    this.entries.delete(digest);
    this.entries.set(digest, e);
    while (this.entries.size > this.o.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }

  private slot(): Promise<() => void> {
    const release = () => {
      this.running--;
      this.queue.shift()?.();
    };
    if (this.running < this.o.concurrency) {
      this.running++;
      return Promise.resolve(release);
    }
    return new Promise((resolve) =>
      this.queue.push(() => {
        this.running++;
        resolve(release);
      }),
    );
  }
}
