import { API_VERSION, type LineStop, type PromotionFlow, type PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { lineStopMessage, stopsEveryNamespace, stopsHolding } from '../../src/policy/lineStop.js';
import { planGate } from '../../src/reconcile/planGate.js';

const stop = (
  namespace: string,
  name: string,
  spec: Partial<LineStop['spec']> = {},
  created = '2026-12-01T10:00:00Z',
) =>
  ({
    apiVersion: API_VERSION,
    kind: 'LineStop',
    metadata: { namespace, name, creationTimestamp: created },
    spec: { reason: `incident ${name}`, stoppedBy: 'oncall', ...spec },
  }) as LineStop;

const flow: PromotionFlow = {
  apiVersion: API_VERSION,
  kind: 'PromotionFlow',
  metadata: { namespace: 'shop', name: 'main' },
  spec: { stages: [{ environment: 'stable' }, { environment: 'prod', approvers: { count: 1 } }] },
} as PromotionFlow;

const plan = (
  approvals: Array<{ user: string; overrideFreeze?: boolean }>,
  action: 'promote' | 'rollback' = 'promote',
) =>
  ({
    apiVersion: API_VERSION,
    kind: 'PromotionPlan',
    metadata: { namespace: 'shop', name: 'p1', uid: 'u-1' },
    spec: {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      action,
      requestedBy: 'dev',
      candidates: [{ application: 'web', from: { tag: 'v2', digest: `sha256:${'a'.repeat(64)}` } }],
      approvals: approvals.map((a) => ({ ...a, at: '2026-12-01T09:00:00Z', planUID: 'u-1' })),
    },
  }) as unknown as PromotionPlan;

const cache = { getApplication: () => undefined };
const now = new Date('2026-12-01T12:00:00Z');

describe('which LineStops hold a plan (policy/lineStop.ts)', () => {
  const target = { namespace: 'shop', environment: 'prod' };

  it("holds plans of the LineStop's own namespace, into every environment or only the listed ones", () => {
    expect(stopsHolding([stop('shop', 'a')], target, undefined).map((s) => s.metadata.name)).toEqual(['a']);
    expect(stopsHolding([stop('shop', 'a', { environments: ['stable'] })], target, undefined)).toEqual([]);
    expect(stopsHolding([stop('shop', 'a', { environments: ['stable', 'prod'] })], target, undefined)).toHaveLength(1);
    expect(stopsHolding([stop('other', 'a')], target, undefined)).toEqual([]);
  });

  it('AllNamespaces reaches every namespace only from the configured line-stop namespace', () => {
    const global = stop('kpromo', 'all', { scope: 'AllNamespaces' });
    expect(stopsHolding([global], target, 'kpromo')).toHaveLength(1);
    expect(stopsEveryNamespace(global, 'kpromo')).toBe(true);
    // Not configured, or another namespace: a tenant cannot stop everyone's releases.
    expect(stopsHolding([global], target, undefined)).toEqual([]);
    expect(stopsHolding([stop('team-b', 'all', { scope: 'AllNamespaces' })], target, 'kpromo')).toEqual([]);
  });

  it('ignores a LineStop being deleted and reports the oldest first', () => {
    const lifted = { ...stop('shop', 'gone'), metadata: { ...stop('shop', 'gone').metadata, deletionTimestamp: 'x' } };
    const older = stop('shop', 'zz', {}, '2026-12-01T08:00:00Z');
    expect(stopsHolding([stop('shop', 'aa'), lifted, older], target, undefined).map((s) => s.metadata.name)).toEqual([
      'zz',
      'aa',
    ]);
  });

  it('names who stopped the line, why, and the ways on', () => {
    expect(lineStopMessage(stop('shop', 'inc-42', { reason: 'checkout 5xx', stoppedBy: 'alice' }))).toBe(
      'the line is stopped by alice (LineStop shop/inc-42): checkout 5xx; it goes on when the LineStop is lifted (kpromo line lift inc-42 -n shop), or for a hotfix with an approval by a holder of the override-freeze verb',
    );
  });
});

describe('planGate with a stopped line', () => {
  const stops = [stop('shop', 'inc-42', { reason: 'checkout 5xx', stoppedBy: 'alice' })];

  it('holds an approved plan as LineStopped and records the LineStop in the gate', () => {
    const g = planGate(plan([{ user: 'rm' }]), flow, undefined, cache, now, stops);
    expect(g.gate.approved).toBe(true);
    expect(g.hold?.reason).toBe('LineStopped');
    expect(g.hold?.message).toContain('LineStop shop/inc-42');
    expect(g.gate.lineStopped).toEqual({ lineStop: 'shop/inc-42', reason: 'checkout 5xx', stoppedBy: 'alice' });
  });

  it('lets a hotfix approved with overrideFreeze run, recording who overrode', () => {
    const g = planGate(plan([{ user: 'rm', overrideFreeze: true }]), flow, undefined, cache, now, stops);
    expect(g.hold).toBeUndefined();
    expect(g.gate.lineStopped?.overriddenBy).toBe('rm');
  });

  it('waits for approval first, and lets rollbacks through', () => {
    expect(planGate(plan([]), flow, undefined, cache, now, stops).hold?.reason).toBe('AwaitingApproval');
    const rb = planGate(plan([{ user: 'rm' }], 'rollback'), flow, undefined, cache, now, stops);
    expect(rb.hold).toBeUndefined();
  });

  it('runs as before without LineStops', () => {
    const g = planGate(plan([{ user: 'rm' }]), flow, undefined, cache, now);
    expect(g.hold).toBeUndefined();
    expect(g.gate.lineStopped).toBeUndefined();
  });
});
