import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ClientRateLimiter } from '../src/kube/rateLimit.js';

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('client-side rate limit per cluster', () => {
  it('lets a burst through, then holds the rest to qps, promotion steps before derived statuses', async () => {
    let now = 0;
    const l = new ClientRateLimiter({ qps: 10, burst: 3, now: () => now });
    const order: string[] = [];
    const go = (name: string, p?: 'low') => l.take(p).then(() => order.push(name));
    await Promise.all([go('a'), go('b'), go('c')]);
    expect(order).toEqual(['a', 'b', 'c']); // the burst
    const waiting = [go('status-1', 'low'), go('status-2', 'low'), go('step-1'), go('step-2')];
    await tick();
    expect(order).toHaveLength(3);
    expect(l.queued).toBe(4);
    // 250 ms at 10/s: two tokens, and the normal-priority steps take them although they came later
    now = 250;
    await new Promise((r) => setTimeout(r, 120));
    expect(order.slice(3)).toEqual(['step-1', 'step-2']);
    now = 500;
    await Promise.all(waiting);
    expect(order.slice(5)).toEqual(['status-1', 'status-2']);
    expect(l.stats.delayed).toBe(4);
  });

  it('tells onWaited of each request that waited, with its wait and priority', async () => {
    let now = 0;
    const seen: Array<[number, string]> = [];
    const l = new ClientRateLimiter({ qps: 10, burst: 1, now: () => now, onWaited: (ms, p) => seen.push([ms, p]) });
    await l.take();
    const late = [l.take('low'), l.take()];
    // burst 1 holds one token at a time: the normal request goes at 100 ms, the low one at 200 ms
    now = 100;
    await late[1];
    now = 200;
    await late[0];
    expect(seen).toEqual([
      [100, 'normal'],
      [200, 'low'],
    ]);
  });

  it('is off with qps 0, and configured by kubeClient or KPROMO_KUBE_QPS/BURST', async () => {
    const off = new ClientRateLimiter({ qps: 0, burst: 1 });
    for (let i = 0; i < 1000; i++) await off.take();
    expect(off.stats.delayed).toBe(0);
    expect(loadConfig({ env: {} }).kubeClient).toEqual({ qps: 50, burst: 100 });
    expect(loadConfig({ env: { KPROMO_KUBE_QPS: '20', KPROMO_KUBE_BURST: '30' } }).kubeClient).toEqual({
      qps: 20,
      burst: 30,
    });
  });
});
