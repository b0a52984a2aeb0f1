/** Port's documented bulk limits. */
export const MAX_BULK_ENTITIES = 20;
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Splits items into request bodies of at most `maxCount` items and `maxBytes` of JSON
 * (`{"entities":[...]}`). Items too large on their own come back in `tooLarge`.
 */
export function chunkByCountAndSize<T>(
  items: Iterable<T>,
  maxCount = MAX_BULK_ENTITIES,
  maxBytes = MAX_BODY_BYTES,
  sizeOf: (item: T) => number = (item) => Buffer.byteLength(JSON.stringify(item)),
): { chunks: T[][]; tooLarge: T[] } {
  const tooLarge: T[] = [];
  const chunks = [...chunksOf(items, maxCount, maxBytes, sizeOf, (item) => tooLarge.push(item))];
  return { chunks, tooLarge };
}

/**
 * {@link chunkByCountAndSize} as it goes: each chunk is made when asked for, pulling only the items
 * it needs from `items`, so a caller sending a few chunks at a time never holds every item at once
 * (the exporter's initial sync hands tens of thousands of entities to the sink). Items too large on
 * their own go to `onTooLarge`.
 */
export function* chunksOf<T>(
  items: Iterable<T>,
  maxCount = MAX_BULK_ENTITIES,
  maxBytes = MAX_BODY_BYTES,
  sizeOf: (item: T) => number = (item) => Buffer.byteLength(JSON.stringify(item)),
  onTooLarge: (item: T) => void = () => {},
): Generator<T[]> {
  const overhead = Buffer.byteLength('{"entities":[]}');
  let cur: T[] = [];
  let size = overhead;
  for (const item of items) {
    const n = sizeOf(item);
    if (overhead + n > maxBytes) {
      onTooLarge(item);
      continue;
    }
    const add = n + (cur.length ? 1 : 0);
    if (cur.length >= maxCount || size + add > maxBytes) {
      yield cur;
      cur = [];
      size = overhead;
    }
    size += n + (cur.length ? 1 : 0);
    cur.push(item);
  }
  if (cur.length) yield cur;
}

/** Owned identifiers present in Port but no longer desired: what a resync deletes. */
export function staleIdentifiers(owned: Iterable<string>, desired: ReadonlySet<string>): string[] {
  return [...owned].filter((id) => !desired.has(id)).sort();
}

/** How live changes are coalesced before they are mapped and sent (see {@link coalesceWaitMs}). */
export interface CoalescePolicy {
  /** A full bulk call: this many waiting changes go at once. */
  fullAt: number;
  /** Short window: a change that no other is expected to join waits this long (from the first one). */
  windowMs: number;
  /** In a stream, changes wait up to this long (from the first one) for others to share the bulk call. */
  maxDelayMs: number;
}

/**
 * How much longer the waiting changes may wait before they are handed over (0: now). A full bulk
 * goes at once. In a stream (the recent rate brings at least one more change within `maxDelayMs`)
 * they wait for the bulk to fill, at most `maxDelayMs` from the first change: each call carries what
 * arrived meanwhile, so calls fall as the rate rises (one per 20 changes once 20 arrive within
 * `maxDelayMs`) while no change waits longer than that. A lone change waits the short window only.
 * The wait is re-decided when it ends (the rate may have changed).
 *
 * Why `maxDelayMs` bounds the latency rather than the call count: at 10 changes/s a median under
 * 250 ms allows at most ~5 changes per call; Port's exporter waits 2 s and sends ~20 per call, at the
 * cost of a ~1 s median. Raise `maxDelayMs` to trade freshness for fewer calls.
 */
export function coalesceWaitMs(s: { pending: number; ageMs: number; ratePerSec: number }, p: CoalescePolicy): number {
  if (s.pending >= p.fullAt) return 0;
  const stream = p.maxDelayMs > p.windowMs && (s.ratePerSec * p.maxDelayMs) / 1000 >= 1;
  if (stream) {
    const fillMs = ((p.fullAt - s.pending) / s.ratePerSec) * 1000;
    return Math.max(0, Math.min(p.maxDelayMs - s.ageMs, fillMs));
  }
  return Math.max(0, p.windowMs - s.ageMs);
}

/**
 * The recent arrival rate of live changes, in changes per second: arrivals within the last
 * `horizonMs` over the time since the first of them (at least `minSpanMs`, so a burst reads as fast,
 * not infinite). Fewer than two arrivals say nothing about a stream: 0.
 */
export function arrivalRate(times: readonly number[], now: number, horizonMs: number, minSpanMs: number): number {
  let first = -1;
  for (let i = 0; i < times.length; i++)
    if (times[i] >= now - horizonMs) {
      first = i;
      break;
    }
  if (first < 0 || times.length - first < 2) return 0;
  return ((times.length - first) * 1000) / Math.max(now - times[first], minSpanMs, 1);
}
