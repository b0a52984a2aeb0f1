import { describe, expect, it } from 'vitest';
import { cellLabel, cellTitle, fleetGrid, isFleetPlan, isProblemPhase, problemsOnly } from './fleet';
import { type PromotionPlan, planProgress } from './types';

const plan = (status: PromotionPlan['status'], continuations?: PromotionPlan['spec']['continuations']) =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: 'p1', namespace: 'shop', uid: 'u1' },
    spec: { flow: 'shop', from: 'stable', to: 'prod', candidates: [], ...(continuations ? { continuations } : {}) },
    status,
  }) as PromotionPlan;

const fleet = plan({
  waves: [
    { name: 'canary', clusters: ['a'], phase: 'Succeeded', pause: true },
    { name: 'eu', clusters: ['b', 'c'], phase: 'Promoting', failureBudget: 1 },
    { name: 'rest', clusters: ['d'], phase: 'Pending' },
  ],
  targets: [
    { cluster: 'a', wave: 'canary', apps: [{ application: 'web', phase: 'Succeeded' }] },
    {
      cluster: 'b',
      wave: 'eu',
      apps: [
        { application: 'web', phase: 'Failed', reason: 'RolloutTimeout', message: `stuck at sha256:${'a'.repeat(64)}` },
        { application: 'api', phase: 'Succeeded' },
      ],
    },
    { cluster: 'c', wave: 'eu', apps: [{ application: 'web', phase: 'RollingOut' }] },
    // In status.targets but in no wave's list (an older controller): placed under its wave.
    { cluster: 'e', wave: 'eu', apps: [{ application: 'web', phase: 'Succeeded' }] },
  ],
});

describe('fleet plans', () => {
  it('tells fleet plans from plans into one cluster', () => {
    expect(isFleetPlan(planProgress(fleet))).toBe(true);
    expect(isFleetPlan(planProgress(plan({ phase: 'Promoting', apps: [] })))).toBe(false);
    expect(isFleetPlan(planProgress(plan(undefined)))).toBe(false);
  });

  it('lays out applications × clusters by wave; a cluster not started yet is Pending', () => {
    const g = fleetGrid(fleet, planProgress(fleet), ['api', 'web']);
    expect(g.waves).toEqual([
      { name: 'canary', clusters: ['a'] },
      { name: 'eu', clusters: ['b', 'c', 'e'] },
      { name: 'rest', clusters: ['d'] },
    ]);
    expect(g.clusters).toEqual(['a', 'b', 'c', 'e', 'd']);
    expect(g.applications).toEqual(['api', 'web']);
    expect(g.cell('web', 'd')).toEqual({ application: 'web', cluster: 'd', wave: 'rest', phase: 'Pending' });
    expect(g.cell('api', 'b').phase).toBe('Succeeded');
    expect([g.failed, g.inFlight]).toEqual([1, 1]);
    // Apps only the clusters list are added after the plan's.
    expect(fleetGrid(fleet, planProgress(fleet), ['api']).applications).toEqual(['api', 'web']);
  });

  it('keeps only the applications and clusters with a failed or in-flight cell', () => {
    const g = problemsOnly(fleetGrid(fleet, planProgress(fleet), ['api', 'web']));
    expect(g.applications).toEqual(['web']);
    expect(g.waves).toEqual([{ name: 'eu', clusters: ['b', 'c'] }]);
    expect(g.clusters).toEqual(['b', 'c']);
    expect(['Failed', 'RollingOut', 'Copying', 'Verifying'].every(isProblemPhase)).toBe(true);
    expect(['Succeeded', 'Pending', 'RolledBack', undefined].some(isProblemPhase)).toBe(false);
  });

  it('labels a cell for screen readers and explains a failure on hover', () => {
    const c = fleetGrid(fleet, planProgress(fleet)).cell('web', 'b');
    expect(cellLabel(c)).toBe('web in b: Failed');
    expect(cellTitle(c, (m) => m.replace(/[a-f0-9]{64}/, '…'))).toBe(
      'web in b: Failed – RolloutTimeout: stuck at sha256:… (wave eu)',
    );
    expect(cellTitle(fleetGrid(fleet, planProgress(fleet)).cell('web', 'a'))).toBe('web in a: Succeeded (wave canary)');
  });
});
