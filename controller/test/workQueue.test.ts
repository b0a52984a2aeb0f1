import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, runWorkers, WorkQueue } from '../src/queue/workQueue.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('WorkQueue', () => {
  it('deduplicates keys that are queued but not yet processed', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands the same key to two workers; re-adds it after done when it changed meanwhile', async () => {
    const q = new WorkQueue();
    q.add('a');
    const k = await q.get();
    expect(k).toBe('a');
    q.add('a'); // changed while processing
    expect(q.length).toBe(0);
    q.done('a');
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('a');
  });

  it('backs off exponentially per key and forget() resets it', () => {
    expect(backoffDelay(0, 100, 1000)).toBe(0);
    expect(backoffDelay(1, 100, 1000)).toBe(100);
    expect(backoffDelay(3, 100, 1000)).toBe(400);
    expect(backoffDelay(10, 100, 1000)).toBe(1000);
    const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 1000 });
    expect(q.addRateLimited('x')).toBe(10);
    expect(q.addRateLimited('x')).toBe(20);
    expect(q.addRateLimited('y')).toBe(10);
    q.forget('x');
    expect(q.numRequeues('x')).toBe(0);
    q.shutdown();
  });

  it('addAfter keeps the earliest deadline and delivers the key once', async () => {
    // On a fake clock moved by hand: which deadline delivered the key is read off the clock, not
    // timed against a machine that may be busy.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const q = new WorkQueue();
    q.addAfter('k', 5000);
    q.addAfter('k', 20);
    let got: string | undefined;
    void q.get().then((k) => {
      got = k;
    });
    await vi.advanceTimersByTimeAsync(19);
    expect(got).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(got).toBe('k');
    q.done('k');
    // The later deadline was dropped: the key does not come again.
    await vi.advanceTimersByTimeAsync(5000);
    expect(q.length).toBe(0);
    q.shutdown();
  });

  it('limits the overall rate with a token bucket', async () => {
    const q = new WorkQueue({ qps: 20, burst: 1 });
    for (const k of ['a', 'b', 'c', 'd']) q.add(k);
    const t0 = Date.now();
    for (let i = 0; i < 4; i++) q.done((await q.get())!);
    // 1 from the burst, then 3 at 20/s = ~150ms
    expect(Date.now() - t0).toBeGreaterThanOrEqual(120);
  });

  it('runWorkers retries failures with backoff and stops on shutdown', async () => {
    const q = new WorkQueue({ baseDelayMs: 5 });
    let calls = 0;
    const errors: number[] = [];
    const done = new Promise<void>((resolve) => {
      void runWorkers(
        q,
        2,
        async () => {
          calls++;
          if (calls < 3) throw new Error('boom');
          resolve();
          return undefined;
        },
        (_k, _e, d) => errors.push(d),
      );
    });
    q.add('p');
    await done;
    expect(calls).toBe(3);
    expect(errors).toEqual([5, 10]);
    q.shutdown();
    expect(await q.get()).toBeUndefined();
  });
});

describe('unthrottled lane', () => {
  it('hands out keys without a token bucket when qps is Infinity', async () => {
    const q = new WorkQueue<string>({ qps: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 500; i++) q.add(`k${i}`);
    const got: string[] = [];
    for (let i = 0; i < 500; i++) {
      const k = await q.get();
      got.push(k!);
      q.done(k!);
    }
    expect(new Set(got).size).toBe(500);
  });
});
