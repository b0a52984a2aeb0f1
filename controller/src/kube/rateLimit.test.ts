import { describe, expect, it } from 'vitest';
import { BudgetExhausted, ConcurrencyBudget, KeyedRateLimiter } from './rateLimit.js';

describe('KeyedRateLimiter (per client address)', () => {
  it('lets a burst through per key, then says how long to wait, without waiting', () => {
    let now = 0;
    const l = new KeyedRateLimiter({ qps: 2, burst: 3, now: () => now });
    expect([l.take('a'), l.take('a'), l.take('a')]).toEqual([0, 0, 0]);
    expect(l.take('a')).toBe(1); // half a second to the next token: Retry-After rounds up to 1 s
    expect(l.peek('a')).toBe(1);
    // Another address is not affected.
    expect(l.take('b')).toBe(0);
    now = 500;
    expect(l.peek('a')).toBe(0);
    expect(l.take('a')).toBe(0);
    expect(l.take('a')).toBe(1);
  });

  it('a slow refill gives a longer Retry-After', () => {
    const l = new KeyedRateLimiter({ qps: 0.1 as number, burst: 1, now: () => 0 });
    l.take('a');
    expect(l.take('a')).toBe(10);
  });

  it('qps 0 is off', () => {
    const l = new KeyedRateLimiter({ qps: 0, burst: 1 });
    for (let i = 0; i < 100; i++) expect(l.take('a')).toBe(0);
    expect(l.enabled).toBe(false);
  });

  it('remembers at most maxKeys, forgetting the least recently used; a key that keeps trying stays', () => {
    const l = new KeyedRateLimiter({ qps: 1, burst: 1, maxKeys: 3, now: () => 0 });
    l.take('flooder');
    for (let i = 0; i < 50; i++) {
      expect(l.take('flooder')).toBeGreaterThan(0);
      l.take(`rotating-${i}`);
    }
    expect(l.size).toBe(3);
    expect(l.peek('flooder')).toBeGreaterThan(0);
  });
});

describe('ConcurrencyBudget', () => {
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((r) => {
      open = r;
    });
    return { p, open };
  };

  it('runs at most maxInFlight at once, queues maxQueued, refuses the rest at once', async () => {
    const b = new ConcurrencyBudget({ maxInFlight: 2, maxQueued: 2, maxWaitMs: 0 });
    const g = gate();
    let maxRunning = 0;
    const job = () =>
      b.run(async () => {
        maxRunning = Math.max(maxRunning, b.running);
        await g.p;
        return 'done';
      });
    const settled = Promise.allSettled(Array.from({ length: 7 }, job));
    await new Promise((r) => setImmediate(r));
    expect(b.running).toBe(2);
    expect(b.queued).toBe(2);
    expect(b.rejected).toBe(3);
    g.open();
    const r = await settled;
    expect(r.filter((x) => x.status === 'fulfilled')).toHaveLength(4);
    expect(r.filter((x) => x.status === 'rejected' && x.reason instanceof BudgetExhausted)).toHaveLength(3);
    expect(maxRunning).toBe(2);
    expect(b.running + b.queued).toBe(0);
  });

  it('a failing call frees its slot', async () => {
    const b = new ConcurrencyBudget({ maxInFlight: 1, maxQueued: 0, maxWaitMs: 0 });
    await expect(b.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(b.run(async () => 'ok')).resolves.toBe('ok');
  });
});
