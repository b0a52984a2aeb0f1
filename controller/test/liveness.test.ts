import { describe, expect, it } from 'vitest';
import { livenessVerdict } from '../src/observability/liveness.js';

const base = { eventLoopLagMs: 5, informerErrors: [], informerErrorsForMs: 0, leaderStale: false };

describe('livenessVerdict', () => {
  it('is alive when the loop runs, informers are fine and the lease is renewed', () => {
    expect(livenessVerdict(base)).toEqual({ ok: true, problems: [] });
  });
  it('fails on a blocked event loop, long-failing informers or a stale leader, saying which', () => {
    expect(livenessVerdict({ ...base, eventLoopLagMs: 12_000 }).problems).toEqual([
      'event loop blocked for 12000 ms (limit 10000 ms)',
    ]);
    const inf = livenessVerdict({ ...base, informerErrors: ['/apis/x: 500'], informerErrorsForMs: 301_000 });
    expect(inf.ok).toBe(false);
    expect(inf.problems[0]).toBe('informers failing for 301 s: /apis/x: 500');
    expect(livenessVerdict({ ...base, leaderStale: true }).problems).toEqual([
      'leading without a lease renewal within the renew deadline',
    ]);
  });
  it('tolerates transient trouble: a short informer error, a loop delay under the limit', () => {
    expect(livenessVerdict({ ...base, informerErrors: ['x'], informerErrorsForMs: 60_000 }).ok).toBe(true);
    expect(livenessVerdict({ ...base, eventLoopLagMs: 9_999 }).ok).toBe(true);
  });
});
