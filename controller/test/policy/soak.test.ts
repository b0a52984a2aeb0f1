import type { Candidate, EnvironmentVersion } from '@kpromo/api';
import { dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { soakGate } from '../../src/policy/soak.js';

const HOUR = 3_600_000;
const now = new Date('2026-03-02T12:00:00Z');
const cand = (application: string, digest = dg('a')): Candidate => ({ application, from: { tag: 'v1.2.3', digest } });
const version = (over: Partial<EnvironmentVersion>): EnvironmentVersion => ({
  environment: 'stable',
  digest: dg('a'),
  health: 'Healthy',
  ...over,
});
const gate = (candidates: Candidate[], versions: Record<string, EnvironmentVersion>, requiredMs = HOUR) =>
  soakGate({ candidates, source: (a) => versions[a], requiredMs, now });

describe('soakGate', () => {
  it('lets through a candidate that has been Healthy long enough', () => {
    const g = gate([cand('cart')], { cart: version({ healthySince: '2026-03-02T10:00:00Z' }) });
    expect(g.waiting).toEqual([]);
    expect(g.eligibleAt).toBeUndefined();
  });

  it('is eligible exactly when healthySince + required is reached', () => {
    const g = gate([cand('cart')], { cart: version({ healthySince: '2026-03-02T11:00:00Z' }) });
    expect(g.waiting).toEqual([]);
  });

  it('waits until the last candidate has soaked', () => {
    const g = gate([cand('cart'), cand('shop')], {
      cart: version({ healthySince: '2026-03-02T11:30:00Z' }),
      shop: version({ healthySince: '2026-03-02T11:45:00Z' }),
    });
    expect(g.waiting).toEqual([
      {
        application: 'cart',
        eligibleAt: new Date('2026-03-02T12:30:00Z'),
        reason: 'soaking until 2026-03-02T12:30:00.000Z',
      },
      {
        application: 'shop',
        eligibleAt: new Date('2026-03-02T12:45:00Z'),
        reason: 'soaking until 2026-03-02T12:45:00.000Z',
      },
    ]);
    expect(g.eligibleAt).toEqual(new Date('2026-03-02T12:45:00Z'));
  });

  it('a source running another digest has no eligibility time', () => {
    const g = gate([cand('cart'), cand('shop')], {
      cart: version({ digest: dg('b'), healthySince: '2026-03-01T00:00:00Z' }),
      shop: version({ healthySince: '2026-03-02T11:45:00Z' }),
    });
    expect(g.waiting[0].application).toBe('cart');
    expect(g.waiting[0].eligibleAt).toBeUndefined();
    expect(g.waiting[0].reason).toBe('source runs sha256:bbbbbbbbbbbb… not the candidate sha256:aaaaaaaaaaaa…');
    expect(g.waiting[1].eligibleAt).toEqual(new Date('2026-03-02T12:45:00Z'));
    expect(g.eligibleAt).toBeUndefined();
  });

  it('an unhealthy source waits with its health', () => {
    const g = gate([cand('cart')], { cart: version({ health: 'Degraded', healthySince: '2026-03-01T00:00:00Z' }) });
    expect(g.waiting).toEqual([{ application: 'cart', reason: 'not Healthy in source (Degraded)' }]);
    expect(g.eligibleAt).toBeUndefined();
  });

  it('waits when healthySince or the source version is missing', () => {
    const g = gate([cand('cart'), cand('ghost')], { cart: version({}) });
    expect(g.waiting.map((w) => w.application)).toEqual(['cart', 'ghost']);
    expect(g.waiting.every((w) => w.eligibleAt === undefined && w.reason.length > 0)).toBe(true);
    expect(g.eligibleAt).toBeUndefined();
  });

  it('requiredMs 0: nothing waits', () => {
    const g = gate([cand('cart')], { cart: version({ health: 'Degraded' }) }, 0);
    expect(g).toEqual({ waiting: [] });
  });
});
