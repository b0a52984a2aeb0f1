import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { arrivalRate, type CoalescePolicy, coalesceWaitMs } from '../src/batching.js';
import { parseConfig } from '../src/config.js';
import { type EntitySink, Exporter } from '../src/exporter.js';
import { loadJq } from '../src/jq.js';
import { createLogger } from '../src/log.js';
import { type CompiledResource, compileResource, type MappedEntity } from '../src/mapEntity.js';
import type { KubeObject, WatchEvent } from '../src/watchResources.js';

// Live events are coalesced for a short window (or, under load, until a bulk call is full): one jq
// call and full bulk calls per burst, the newest event per object wins, and 20 waiting changes go at once.
// The windows and the rate estimate read the clock (setTimeout, performance.now): these tests run them
// on Vitest's fake clock and move it by hand, so a busy machine cannot stretch a 10 ms pause past a
// 40 ms window or space a 20/s stream out into a slower one.

const log = createLogger('silent');
let jqCalls = 0;
let restore: () => void;

beforeEach(async () => {
  const jq = await loadJq();
  jq.raw('null', '.', ['-c']);
  const raw = jq.raw.bind(jq);
  jqCalls = 0;
  jq.raw = (...a: Parameters<typeof jq.raw>) => {
    jqCalls++;
    return raw(...a);
  };
  restore = () => {
    jq.raw = raw;
  };
});
afterEach(() => {
  restore();
  vi.useRealTimers();
});

/** Moves the fake clock on, running the timers due and the promise callbacks they start. */
const elapse = (ms: number) => vi.advanceTimersByTimeAsync(ms);

const deployment = (name: string, replicas = 1): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'shop' },
  spec: { replicas },
});

async function setup(batchWindowMs: number, maxBatchDelayMs = 0) {
  const cfg = await parseConfig({
    resources: [
      {
        kind: 'apps/v1/deployments',
        port: {
          entity: {
            mappings: [
              { identifier: '.metadata.name', blueprint: '"workload"', properties: { replicas: '.spec.replicas' } },
            ],
          },
        },
      },
    ],
  });
  const puts: Array<{ m: MappedEntity; at: number }> = [];
  const removed: string[] = [];
  const sink: EntitySink = {
    put: (m) => void puts.push({ m, at: performance.now() }),
    remove: (_bp, id) => void removed.push(id),
  };
  const exporter = new Exporter({ config: cfg, clusters: [], sink, log, batchWindowMs, maxBatchDelayMs });
  const program: CompiledResource = compileResource(cfg.resources[0])('current');
  // The watcher's callback, as ResourceWatcher calls it for each event.
  const send = (e: WatchEvent) =>
    (
      exporter as unknown as {
        onEvent(s: string, p: CompiledResource, l: typeof log, e: WatchEvent): Promise<void> | undefined;
      }
    ).onEvent('current|apps/v1/deployments#0', program, log, e);
  jqCalls = 0;
  // From here on time moves only when a test says so (jq is loaded, the exporter built).
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'Date'] });
  return { exporter, puts, removed, send };
}

describe('live event coalescing', () => {
  it('maps a burst in one jq call per window; 20 waiting changes go at once', async () => {
    const { puts, send } = await setup(40);
    const pending: Array<Promise<void> | undefined> = [];
    for (let i = 0; i < 20; i++) pending.push(send({ type: 'upsert', object: deployment(`d${i}`) }));
    await Promise.all(pending);
    // A full window goes without waiting: the 20th event's callback resolves once it is handed over.
    expect(puts.length).toBe(20);
    for (let i = 20; i < 25; i++) void send({ type: 'upsert', object: deployment(`d${i}`) });
    await elapse(39);
    expect(puts.length).toBe(20);
    await elapse(1);
    expect(puts.length).toBe(25);
    expect(jqCalls).toBe(2);
  });

  it('the newest event per object wins; a delete in the same window drops the upsert', async () => {
    const { puts, removed, send } = await setup(20);
    void send({ type: 'upsert', object: deployment('a', 1) });
    void send({ type: 'upsert', object: deployment('b', 1) });
    // b's entity exists from an earlier window, so its delete reaches the sink.
    await elapse(20);
    expect(puts.length).toBe(2);
    puts.length = 0;
    for (let v = 2; v <= 6; v++) void send({ type: 'upsert', object: deployment('a', v) });
    void send({ type: 'upsert', object: deployment('b', 9) });
    void send({ type: 'delete', object: deployment('b', 9) });
    await elapse(20);
    expect(puts.map((p) => [p.m.entity.identifier, p.m.entity.properties.replicas])).toEqual([['a', 6]]);
    expect(removed).toEqual(['b']);
  });

  it('a window of 0 handles each event as it comes', async () => {
    const { puts, send } = await setup(0);
    await send({ type: 'upsert', object: deployment('x') });
    expect(puts.length).toBe(1);
  });
});

describe('coalescing decision (pure)', () => {
  const p: CoalescePolicy = { fullAt: 20, windowMs: 50, maxDelayMs: 1000 };

  it('a full bulk goes at once, whatever the rate', () => {
    expect(coalesceWaitMs({ pending: 20, ageMs: 0, ratePerSec: 0 }, p)).toBe(0);
    expect(coalesceWaitMs({ pending: 25, ageMs: 0, ratePerSec: 500 }, p)).toBe(0);
  });

  it('a lone change (no other expected within maxDelayMs) waits the short window from the first change', () => {
    // 1/s and 0.5/s bring the next change after the longest wait: nothing to share a call with.
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 0 }, p)).toBe(50);
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 0.5 }, p)).toBe(50);
    expect(coalesceWaitMs({ pending: 2, ageMs: 30, ratePerSec: 0.9 }, p)).toBe(20);
    expect(coalesceWaitMs({ pending: 2, ageMs: 80, ratePerSec: 0.9 }, p)).toBe(0);
  });

  it('in a stream, until the bulk is expected full, never beyond maxDelayMs from the first change', () => {
    // 1/s brings one more change within the 1 s maxDelayMs: a stream; 19 more would take 19 s, so the cap decides.
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 1 }, p)).toBe(1000);
    // 20/s: 19 more changes take 950 ms.
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 20 }, p)).toBeCloseTo(950);
    // 200/s: 10 more take 50 ms.
    expect(coalesceWaitMs({ pending: 10, ageMs: 40, ratePerSec: 200 }, p)).toBeCloseTo(50);
    // 10/s: cut at maxDelayMs from the first change.
    expect(coalesceWaitMs({ pending: 4, ageMs: 300, ratePerSec: 10 }, p)).toBe(700);
    expect(coalesceWaitMs({ pending: 11, ageMs: 1000, ratePerSec: 10 }, p)).toBe(0);
  });

  it('the default policy (window 50 ms, maxDelayMs 300): 10 changes/s wait at most 300 ms, 200/s fill a bulk in ~100 ms', () => {
    const d: CoalescePolicy = { fullAt: 20, windowMs: 50, maxDelayMs: 300 };
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 10 }, d)).toBe(300);
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 200 }, d)).toBeCloseTo(95);
    // 3/s: the next change is expected within 300 ms (0.9 of one): a lone change.
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 3 }, d)).toBe(50);
  });

  it('maxDelayMs at or below the short window turns waiting for full bulks off', () => {
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 1000 }, { ...p, maxDelayMs: 50 })).toBe(50);
    expect(coalesceWaitMs({ pending: 1, ageMs: 0, ratePerSec: 1000 }, { ...p, maxDelayMs: 0 })).toBe(50);
  });

  it('the rate estimate: recent arrivals over their span; one arrival is no stream; a burst is fast, not infinite', () => {
    const every50 = Array.from({ length: 100 }, (_, i) => i * 50);
    expect(arrivalRate(every50, 4950, 1000, 50)).toBeCloseTo(21, 0);
    // The second change of a 20/s stream already reads as load (40/s over 50 ms).
    expect(arrivalRate([0, 50], 50, 1000, 50)).toBe(40);
    expect(arrivalRate([0], 0, 1000, 50)).toBe(0);
    // 1/s: two arrivals a second apart are no load.
    expect(arrivalRate([0, 1000], 1000, 1000, 50)).toBe(2);
    // Ten at once: 200/s over the short window.
    expect(arrivalRate(Array(10).fill(7), 7, 1000, 50)).toBe(200);
    // Arrivals older than the horizon do not count once the stream stops.
    expect(arrivalRate(every50, 4950 + 1500, 1000, 50)).toBe(0);
  });
});

describe('live event coalescing under load', () => {
  it('waits for full bulk calls under a steady stream (20/s), and handles a lone change in the short window', async () => {
    const { puts, send } = await setup(30, 1000);
    const handed: number[] = [];
    let seen = 0;
    const tick = () => {
      handed.push(puts.length - seen);
      seen = puts.length;
    };
    // 3 s of 20 changes per second: after the rate estimate catches up, hand-overs are full bulks.
    for (let i = 0; i < 60; i++) {
      await send({ type: 'upsert', object: deployment(`s${i}`) });
      await elapse(50);
      if (puts.length !== seen) tick();
    }
    await elapse(1100);
    if (puts.length !== seen) tick();
    expect(puts.length).toBe(60);
    // A change or two go alone before the stream is seen; then full bulk calls, and the rest when it
    // ends (the short window alone would hand over about one change at a time: ~60 hand-overs).
    expect(handed.length, JSON.stringify(handed)).toBeLessThanOrEqual(5);
    expect(handed.filter((n) => n === 20).length, JSON.stringify(handed)).toBeGreaterThanOrEqual(2);
    // Once the stream has stopped, a lone change goes within the short window (30 ms), not later.
    await elapse(1000);
    const before = puts.length;
    void send({ type: 'upsert', object: deployment('lone') });
    await elapse(29);
    expect(puts.length).toBe(before);
    await elapse(1);
    expect(puts.length).toBe(before + 1);
  });
});
