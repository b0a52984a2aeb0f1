// Automatic rollbacks are bound by uid, not guessed by name (issue 48 item 1), and what a rollback
// restores is what the controller observed, never what a plan's creator typed (item 3).
import type { AppProgress, PromotionPlan, TargetProgress, WaveProgress } from '@kpromo/api';
import { dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { AUTO_LABEL } from '../../src/reconcile/autoPromote.js';
import { observedPrevious } from '../../src/reconcile/plan/appSteps.js';
import { reconcilePlan } from '../../src/reconcile/plan/index.js';
import {
  ensureRollback,
  ownRollback,
  personsRollback,
  ROLLBACK_OF_UID_LABEL,
  rollbackNamePrefix,
} from '../../src/reconcile/plan/onFailure.js';
import { planRun } from '../../src/reconcile/plan/run.js';
import { automaticRollback } from '../../src/reconcile/planGate.js';
import { waveRollbackCause } from '../../src/reconcile/waveDecisions.js';
import { type PlanWorld, planWorld } from '../support/planWorld.js';

const rb = (
  name: string,
  o: {
    labels?: Record<string, string>;
    status?: PromotionPlan['status'];
    applications?: string[];
    rollbackOf?: string;
    action?: 'rollback' | 'promote';
  } = {},
): PromotionPlan =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, labels: o.labels ?? {} },
    spec: {
      flow: 'main',
      from: 'dev',
      to: 'stable',
      action: o.action ?? 'rollback',
      rollbackOf: o.rollbackOf ?? 'rel',
      candidates: [],
      ...(o.applications ? { applications: o.applications } : {}),
    },
    ...(o.status ? { status: o.status } : {}),
  }) as PromotionPlan;

const approved = { phase: 'Promoting' as const, gate: { approved: true, required: 1 } };

describe('rollbackNamePrefix', () => {
  it('is a generateName: ends in "-", the apiserver adds the unpredictable part, within its 58 characters', () => {
    expect(rollbackNamePrefix('rel-42')).toBe('rel-42-rollback-');
    expect(rollbackNamePrefix('rel-42', 'web')).toBe('rel-42-rollback-web-');
    const long = rollbackNamePrefix('p'.repeat(240), 'web');
    expect(long.length).toBeLessThanOrEqual(58);
    expect(long).toMatch(/^p+-$/);
    // Cut at 57 characters, never ending in '.' or '-' before the suffix's separator.
    expect(rollbackNamePrefix(`${'a'.repeat(56)}.bcd`)).toBe(`${'a'.repeat(56)}-`);
  });
});

describe('personsRollback: who the controller stands back for', () => {
  const cases: Array<[string, PromotionPlan, readonly string[], boolean]> = [
    ['a decoy: created, never approved', rb('rel-rollback'), ['web'], false],
    ['a decoy under any other name', rb('whatever'), ['web'], false],
    ['approved and going', rb('mine', { status: approved }), ['web'], true],
    ['approved but over', rb('mine', { status: { ...approved, phase: 'Failed' } }), ['web'], false],
    ['approved, rolled back already', rb('mine', { status: { ...approved, phase: 'RolledBack' } }), ['web'], false],
    [
      'gate recorded as not approved',
      rb('mine', { status: { phase: 'Pending', gate: { approved: false, required: 1 } } }),
      ['web'],
      false,
    ],
    ['approved, of another plan', rb('mine', { status: approved, rollbackOf: 'other' }), ['web'], false],
    ['approved, a promotion', rb('mine', { status: approved, action: 'promote' }), ['web'], false],
    [
      'approved, automatic (the controller binds its own by uid)',
      rb('mine', { status: approved, labels: { [AUTO_LABEL]: 'true' } }),
      ['web'],
      false,
    ],
    [
      'approved, restores only some of the apps',
      rb('mine', { status: approved, applications: ['web'] }),
      ['web', 'cart'],
      false,
    ],
    ['approved, restores the app', rb('mine', { status: approved, applications: ['web'] }), ['web'], true],
  ];
  it.each(cases)('%s', (_what, p, apps, defers) => {
    expect(personsRollback([p], 'rel', apps)?.metadata.name).toBe(defers ? p.metadata.name : undefined);
  });
});

describe('ownRollback: the controller finds its own plan after a crash', () => {
  const own = { [AUTO_LABEL]: 'true', [ROLLBACK_OF_UID_LABEL]: 'uid-rel' };
  const cases: Array<[string, PromotionPlan, 'app' | 'release', boolean]> = [
    ['its release rollback', rb('rel-rollback-ab12c', { labels: own }), 'release', true],
    ['its rollback of web', rb('rel-rollback-web-ab12c', { labels: own, applications: ['web'] }), 'app', true],
    [
      'a rollback of web is not the release rollback',
      rb('x', { labels: own, applications: ['web'] }),
      'release',
      false,
    ],
    ['a rollback of another app', rb('x', { labels: own, applications: ['cart'] }), 'app', false],
    ['no auto label', rb('x', { labels: { [ROLLBACK_OF_UID_LABEL]: 'uid-rel' } }), 'release', false],
    [
      'of an earlier plan of the same name',
      rb('x', { labels: { ...own, [ROLLBACK_OF_UID_LABEL]: 'uid-old' } }),
      'release',
      false,
    ],
    ['of another plan', rb('x', { labels: own, rollbackOf: 'other' }), 'release', false],
  ];
  it.each(cases)('%s', (_what, p, scope, found) => {
    expect(ownRollback([p], 'rel', 'uid-rel', scope, 'web')?.metadata.name).toBe(found ? p.metadata.name : undefined);
  });
});

describe('observedPrevious: what a rollback restores comes from the controller', () => {
  const cases: Array<[string, Parameters<typeof observedPrevious>, ReturnType<typeof observedPrevious>]> = [
    ['the workload it reads', [{ tag: 'v1', digest: dg('b') }], { tag: 'v1', digest: dg('b') }],
    ['a workload pinned by tag', [{ tag: 'v1' }], { tag: 'v1' }],
    [
      'cluster not synced: the version it recorded',
      [{}, { tag: 'v1', digest: dg('b') }],
      { tag: 'v1', digest: dg('b') },
    ],
    [
      'a fleet cluster: that cluster’s recorded version',
      [
        {},
        { tag: 'v9', digest: dg('9'), clusters: [{ cluster: 'eu', tag: 'v1', digest: dg('b'), health: 'Healthy' }] },
        'eu',
      ],
      { tag: 'v1', digest: dg('b') },
    ],
    ['a fleet cluster it never recorded', [{}, { tag: 'v9', digest: dg('9'), clusters: [] }, 'us'], undefined],
    ['nothing known: none', [{}, undefined], undefined],
  ];
  it.each(cases)('%s', (_what, args, want) => expect(observedPrevious(...args)).toEqual(want));
});

describe('waveRollbackCause: a failed wave rolls back by the bound path', () => {
  const failed: WaveProgress = {
    name: 'second',
    clusters: ['b'],
    phase: 'Failed',
    message: '1 of 1 cluster(s) failed',
  };
  const targets: TargetProgress[] = [
    { cluster: 'a', wave: 'first', apps: [{ application: 'cart', phase: 'Succeeded' }] },
    { cluster: 'b', wave: 'second', apps: [{ application: 'cart', phase: 'Failed' }] },
  ];
  const written: AppProgress[] = [{ application: 'cart', phase: 'Failed', written: true }];
  const cases: Array<[string, Parameters<typeof waveRollbackCause>[3], AppProgress[], boolean]> = [
    [
      'onWaveFailure rollback, an app written',
      { onWaveFailure: 'rollback', isRollback: false, environment: 'prod' },
      written,
      true,
    ],
    ['onWaveFailure halt', { onWaveFailure: 'halt', isRollback: false, environment: 'prod' }, written, false],
    ['no onWaveFailure (halt)', { isRollback: false, environment: 'prod' }, written, false],
    ['a rollback plan', { onWaveFailure: 'rollback', isRollback: true, environment: 'prod' }, written, false],
    [
      'nothing written',
      { onWaveFailure: 'rollback', isRollback: false, environment: 'prod' },
      [{ application: 'cart', phase: 'Failed' }],
      false,
    ],
  ];
  it.each(cases)('%s', (_what, o, apps, rolls) => {
    const cause = waveRollbackCause(failed, targets, apps, o);
    if (!rolls) expect(cause).toBeUndefined();
    else
      expect(cause).toEqual({
        application: 'cart',
        check: 'wave second',
        message: '1 of 1 cluster(s) failed',
        causedBy: 'wave second of prod',
      });
  });
});

/** A promotion p1 of cart into stable that completed (cart written), for ensureRollback to act on. */
async function promoted(): Promise<PlanWorld> {
  const w = planWorld();
  for (const e of ['dev', 'stable', 'prod']) w.deploy(e, 'cart', `reg-${e}.local:5000/shop/cart:v1@${dg('b')}`);
  w.addPlan('p1');
  for (let i = 0; i < 6 && w.plan('p1').status?.phase !== 'Complete'; i++) {
    await reconcilePlan(w.deps, 'ns', 'p1');
    w.syncPlan('p1');
    w.tick(1000);
  }
  expect(w.plan('p1').status?.phase).toBe('Complete');
  return w;
}
const creates = (w: PlanWorld) =>
  w.trace.filter((e) => e.op === 'write' && e.method === 'POST' && e.path.endsWith('/promotionplans'));
const waveCause = () =>
  waveRollbackCause(
    { name: 'second', clusters: ['b'], phase: 'Failed', message: 'wave failed' },
    [{ cluster: 'b', wave: 'second', apps: [{ application: 'cart', phase: 'Failed' }] }],
    [{ application: 'cart', phase: 'Failed', written: true }],
    { onWaveFailure: 'rollback', isRollback: false, environment: 'stable' },
  )!;

describe('ensureRollback (the path of failed verifications and failed waves)', () => {
  it('a decoy rollback plan named <plan>-rollback, unapproved, does not stop the automatic rollback: a plan of its own, bound by uid', async () => {
    const w = await promoted();
    w.addPlan('p1-rollback', { action: 'rollback', rollbackOf: 'p1', candidates: [], approvals: [] });
    await ensureRollback(planRun(w.deps, w.plan('p1'), 'ns', 'p1'), waveCause(), 'release');
    const [entry] = w.plan('p1').status?.automaticRollbacks ?? [];
    expect(entry).toMatchObject({ scope: 'release', application: 'cart', check: 'wave second' });
    expect(entry?.plan).toMatch(/^p1-rollback-[a-z0-9]{5}$/);
    const mine = w.plan(entry!.plan!);
    expect(entry?.planUID).toBe(mine.metadata.uid);
    expect(mine.metadata.labels).toMatchObject({ [AUTO_LABEL]: 'true', [ROLLBACK_OF_UID_LABEL]: 'uid-p1' });
    expect(mine.spec).toMatchObject({ action: 'rollback', rollbackOf: 'p1', candidates: [] });
    expect(mine.spec.applications).toBeUndefined();
    // Only the bound plan runs without approval; the decoy waits for approval like any plan.
    w.syncPlan('p1');
    w.syncPlan(mine.metadata.name);
    expect(automaticRollback(mine, w.cache)).toBe(true);
    expect(automaticRollback(w.plan('p1-rollback'), w.cache)).toBe(false);
    expect(w.plan('p1').status?.conditions?.find((c) => c.type === 'RolledBackBy')).toBeUndefined();
  });

  it('stands back for a person’s rollback that is approved and going', async () => {
    const w = await promoted();
    w.addPlan(
      'by-hand',
      { action: 'rollback', rollbackOf: 'p1', candidates: [] },
      { status: { phase: 'Promoting', gate: { approved: true, required: 1 } } },
    );
    await ensureRollback(planRun(w.deps, w.plan('p1'), 'ns', 'p1'), waveCause(), 'release');
    expect(creates(w)).toHaveLength(0);
    expect(w.plan('p1').status?.automaticRollbacks ?? []).toEqual([]);
    expect(w.plan('p1').status?.conditions?.find((c) => c.type === 'RolledBackBy')).toMatchObject({
      status: 'True',
      message: 'by-hand',
    });
  });

  it('after a crash between the create and recording its uid, the next pass binds the plan it created and creates no second one', async () => {
    const w = await promoted();
    const run = planRun(w.deps, w.plan('p1'), 'ns', 'p1');
    let fences = 0;
    w.deps.fence = () => {
      // 1: the intent's save, 2: the create, 3: the save of its uid (the replica dies here).
      if (++fences === 3) throw new Error('lost the lease');
    };
    await expect(ensureRollback(run, waveCause(), 'release')).rejects.toThrow('lost the lease');
    expect(creates(w)).toHaveLength(1);
    const stored = w.plan('p1').status?.automaticRollbacks ?? [];
    expect(stored).toHaveLength(1);
    expect(stored[0]?.planUID).toBeUndefined(); // only the intent reached the status
    w.deps.fence = undefined;
    // A new leader: the plan as stored; the cache has not seen the rollback plan (listed from the apiserver).
    await ensureRollback(planRun(w.deps, w.plan('p1'), 'ns', 'p1'), waveCause(), 'release');
    expect(creates(w)).toHaveLength(1);
    const [entry] = w.plan('p1').status?.automaticRollbacks ?? [];
    expect(entry?.planUID).toBe(w.plan(entry!.plan!).metadata.uid);
    // And again: bound, nothing more.
    await ensureRollback(planRun(w.deps, w.plan('p1'), 'ns', 'p1'), waveCause(), 'release');
    expect(creates(w)).toHaveLength(1);
  });
});

describe('previous is never the version typed into the plan', () => {
  const typed = { tag: 'v1', digest: dg('e') }; // the creator's candidates[].to
  const world = () => {
    const w = planWorld();
    w.deploy('dev', 'cart', `reg-dev.local:5000/shop/cart:v2@${dg('a')}`);
    w.deploy('stable', 'cart', `reg-stable.local:5000/shop/cart:v1@${dg('b')}`);
    return w;
  };
  async function drive(w: PlanWorld, name: string, between?: () => void) {
    for (let i = 0; i < 8; i++) {
      await reconcilePlan(w.deps, 'ns', name);
      w.syncPlan(name);
      between?.();
      const phase = w.plan(name).status?.phase;
      if (phase && ['Complete', 'Incomplete', 'Failed', 'RolledBack'].includes(phase)) return;
      w.tick(1000);
    }
  }
  const cart = (p: PromotionPlan) => p.status?.apps?.find((a) => a.application === 'cart');

  it('stable not synced when the plan starts, nothing recorded: no previous, and its rollback is refused saying what to do', async () => {
    const w = world();
    w.cache.envStates.set('stable', { synced: false, helmReleases: false });
    w.addPlan('p1', { candidates: [{ application: 'cart', from: { tag: 'v2', digest: dg('a') }, to: typed }] });
    await drive(w, 'p1', () => w.cache.envStates.delete('stable'));
    expect(w.plan('p1').status?.phase).toBe('Complete');
    expect(cart(w.plan('p1'))?.previous).toBeUndefined();
    w.addPlan('rb', { action: 'rollback', rollbackOf: 'p1', candidates: [] });
    await drive(w, 'rb');
    expect(cart(w.plan('rb'))).toMatchObject({ phase: 'Failed', reason: 'NoPreviousVersion' });
    expect(cart(w.plan('rb'))?.message).toMatch(/never restores a version written into a plan; restore cart by hand/);
    const image = JSON.stringify([...w.clusters.get('stable')!.objects.values()]);
    expect(image).not.toContain(typed.digest);
  });

  it('stable not synced, the version the controller recorded in the Application status: that one', async () => {
    const w = world();
    w.cache.apps[0]!.status = {
      versions: [{ environment: 'stable', tag: 'v1', digest: dg('b'), health: 'Unknown' }],
    };
    w.cache.envStates.set('stable', { synced: false, helmReleases: false });
    w.addPlan('p1', { candidates: [{ application: 'cart', from: { tag: 'v2', digest: dg('a') }, to: typed }] });
    await drive(w, 'p1', () => w.cache.envStates.delete('stable'));
    expect(cart(w.plan('p1'))?.previous).toEqual({ tag: 'v1', digest: dg('b') });
  });

  it('a workload pinned by tag: the digest the target registry names for it, not the typed one', async () => {
    const w = world();
    w.deploy('stable', 'cart', 'reg-stable.local:5000/shop/cart:v1');
    const asked: string[] = [];
    w.deps.resolveDigest = async (ep, repo, tag) => {
      asked.push(`${ep.host}/${repo}:${tag}`);
      return dg('b');
    };
    w.addPlan('p1', { candidates: [{ application: 'cart', from: { tag: 'v2', digest: dg('a') }, to: typed }] });
    await drive(w, 'p1');
    expect(asked).toEqual(['reg-stable.local:5000/shop/cart:v1']);
    expect(cart(w.plan('p1'))?.previous).toEqual({ tag: 'v1', digest: dg('b') });
  });
});
