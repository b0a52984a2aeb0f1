import type { Condition } from '@kpromo/api';
import { app, deployment, dg, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { groupCommit } from '../src/reconcile/plan/index.js';
import { environmentStatus, flowStatus } from '../src/reconcile/reconcileStatus.js';

const now = new Date('2026-12-02T10:00:00Z');
const later = new Date('2026-12-02T11:00:00Z');
const ready = (s: { conditions?: Condition[] }) => s.conditions?.find((c) => c.type === 'Ready');

function cache() {
  const c = new MemoryCache();
  c.envs = [env('dev'), env('stable'), env('prod')];
  c.apps = [app('cart'), app('search'), app('legacy')];
  c.workloads.set('dev/Deployment/cart', deployment('cart', `r/shop/cart:v1.2.0@${dg('a')}`));
  c.workloads.set('stable/Deployment/cart', deployment('cart', `r/shop/cart:v1.1.0@${dg('b')}`));
  c.workloads.set('prod/Deployment/cart', deployment('cart', `r/shop/cart:v1.0.0@${dg('c')}`));
  c.workloads.set('dev/Deployment/search', deployment('search', `r/shop/search:v3.0.0@${dg('d')}`));
  c.workloads.set('stable/Deployment/search', deployment('search', `r/shop/search:v3.0.0@${dg('d')}`));
  return c;
}

describe('flowStatus', () => {
  it('lists the org rules stricter than its stages (status.orgRules), from the org-policy namespace only; the flow is not changed', () => {
    const c = cache();
    c.envs = [env('dev'), env('stable'), env('prod', { tier: 'production' })];
    const policy = (namespace: string) => ({
      apiVersion: 'promotions.kpromo.dev/v1alpha1' as const,
      kind: 'OrgPolicy' as const,
      metadata: { name: 'platform', namespace },
      spec: {
        rules: [
          {
            name: 'prod-gates',
            environments: { tiers: ['production' as const] },
            approvals: { minCount: 2 },
            minSoakTime: '1h',
          },
        ],
      },
    });
    c.orgPolicyList = [policy('kpromo-system'), policy('ns')];
    const f = flow(['dev', 'stable', 'prod']);
    f.spec.stages[2] = { environment: 'prod', approvers: { count: 1 }, requiredSoakTime: '2h' };
    const s = flowStatus(f, c, now, [], 'kpromo-system');
    // The soak of the flow is longer: only the approvals rule decides, once (the team's copy counts for nothing).
    expect(s.orgRules).toEqual([
      {
        environment: 'prod',
        orgPolicy: 'kpromo-system/platform',
        rule: 'prod-gates',
        field: 'spec.rules[0].approvals.minCount',
        requires: '2 approvals at least',
        flowHas: 'stages[2].approvers.count 1',
        stricter: true,
      },
    ]);
    expect(f.spec.stages[2].approvers).toEqual({ count: 1 });
    // Without an org-policy namespace there are none; a status that had some loses them.
    expect(flowStatus({ ...f, status: s }, c, now).orgRules).toBeUndefined();
  });

  it('counts candidates per stage transition and is Ready with observedGeneration', () => {
    const f = { ...flow(['dev', 'stable', 'prod']), metadata: { name: 'main', namespace: 'ns', generation: 3 } };
    const s = flowStatus(f, cache(), now);
    // dev -> stable: cart; stable -> prod: cart and search.
    expect(s.pendingCandidates).toBe(3);
    expect(s.observedGeneration).toBe(3);
    expect(ready(s)).toMatchObject({ status: 'True', reason: 'Ready', observedGeneration: 3 });
    expect(ready(s)?.message).toBe('3 release candidate(s) pending (dev -> stable: 1, stable -> prod: 2)');
  });

  it('is stable: recomputing from its own status changes nothing (no status churn)', () => {
    const c = cache();
    const f = flow(['dev', 'stable', 'prod']);
    const s1 = flowStatus(f, c, now);
    const s2 = flowStatus({ ...f, status: s1 }, c, later);
    expect(s2).toEqual(s1);
  });

  it('names an unknown Environment', () => {
    const s = flowStatus(flow(['dev', 'qa', 'prod', 'uat']), cache(), now);
    expect(ready(s)).toMatchObject({ status: 'False', reason: 'EnvironmentNotFound' });
    expect(ready(s)?.message).toBe(
      'Environment "qa" (stage 2), "uat" (stage 4) do not exist in namespace ns; fix spec.stages',
    );
    expect(s.pendingCandidates).toBeUndefined();
  });

  it('reports a broken stage cluster and keeps the last count while a cluster syncs', () => {
    const c = cache();
    c.envStates.set('stable', { synced: false, helmReleases: false, error: 'kubeconfig has no context "x"' });
    const f = { ...flow(['dev', 'stable']), status: { pendingCandidates: 7 } };
    const s = flowStatus(f, c, now);
    expect(ready(s)).toMatchObject({ status: 'False', reason: 'EnvironmentNotReady' });
    expect(ready(s)?.message).toBe('Environment "stable": kubeconfig has no context "x"');
    expect(s.pendingCandidates).toBe(7);
    c.envStates.set('stable', { synced: false, helmReleases: false });
    expect(ready(flowStatus(f, c, now))).toMatchObject({ status: 'Unknown', reason: 'ClusterNotSynced' });
  });

  it('reports an invalid tag pattern', () => {
    const s = flowStatus(flow(['dev', 'stable'], { tagPattern: '(' }), cache(), now);
    expect(ready(s)).toMatchObject({ status: 'False', reason: 'InvalidFlow' });
    expect(ready(s)?.message).toMatch(/invalid regular expression/);
  });
});

describe('environmentStatus', () => {
  const e = { ...env('stable'), metadata: { name: 'stable', namespace: 'ns', generation: 2 } };
  it('Ready with the applications observed', () => {
    const s = environmentStatus(e, { synced: true, helmReleases: true }, 2, now);
    expect(s).toMatchObject({ applications: 2, observedGeneration: 2 });
    expect(ready(s)).toMatchObject({ status: 'True', reason: 'Synced', observedGeneration: 2 });
    expect(ready(s)?.message).toMatch(/HelmReleases in namespace app-stable of cluster context:stable; 2 application/);
    expect(environmentStatus({ ...e, status: s }, { synced: true, helmReleases: true }, 2, later)).toEqual(s);
  });
  it('the exact cluster error', () => {
    const err = 'kubeconfig has no context "nowhere"; add it or fix Environment spec.cluster.context';
    const s = environmentStatus(e, { synced: false, helmReleases: false, error: err }, 0, now);
    expect(ready(s)).toMatchObject({ status: 'False', reason: 'ClusterUnreachable', message: err });
    expect(s.applications).toBeUndefined();
  });
  it('a failing watch, and Unknown while syncing', () => {
    const s = environmentStatus(e, { synced: false, helmReleases: false, watchError: 'forbidden' }, 0, now);
    expect(ready(s)).toMatchObject({ status: 'False', reason: 'WatchFailed' });
    expect(ready(s)?.message).toMatch(/: forbidden$/);
    expect(ready(environmentStatus(e, { synced: false, helmReleases: false }, 0, now))?.status).toBe('Unknown');
  });
  it('Drifted: which applications run what kpromo did not deliver; False without drift; none when not judged', () => {
    const drift = {
      environment: 'stable',
      expected: { tag: 'v2.0.0', digest: 'sha256:new', plan: 'p1' },
      found: { tag: 'v1.0.0', digest: 'sha256:old' },
      since: now.toISOString(),
      changedBy: 'kubectl-patch',
    };
    const cond = (s: ReturnType<typeof environmentStatus>) => s.conditions?.find((c) => c.type === 'Drifted');
    const synced = { synced: true, helmReleases: false };
    const d = cond(environmentStatus(e, synced, 2, now, undefined, [{ application: 'web', drift }]));
    expect(d).toMatchObject({ status: 'True', reason: 'DriftDetected', observedGeneration: 2 });
    expect(d?.message).toBe(
      '1 application(s) run what kpromo did not deliver (their status.drift): web: stable runs v1.0.0 (sha256:old), not v2.0.0 (sha256:new) that plan p1 delivered; image last written by field manager kubectl-patch',
    );
    expect(cond(environmentStatus(e, synced, 2, now, undefined, []))).toMatchObject({
      status: 'False',
      reason: 'AsDelivered',
    });
    expect(cond(environmentStatus(e, synced, 2, now))).toBeUndefined();
  });
});

describe('groupCommit (plan status writes)', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  it('coalesces concurrent saves; each caller waits for a flush that saw its change', async () => {
    let value = 0;
    const flushed: number[] = [];
    const save = groupCommit(async () => {
      const v = value;
      await sleep(10);
      flushed.push(v);
    });
    value = 1;
    const a = save();
    value = 2;
    const b = save();
    await Promise.resolve();
    await Promise.resolve(); // the first flush has started (it saw 2)
    value = 3;
    const c = save();
    value = 4;
    const d = save();
    await Promise.all([a, b, c, d]);
    expect(flushed).toEqual([2, 4]);
    value = 5;
    await save();
    expect(flushed).toEqual([2, 4, 5]);
  });
  it('a failed flush rejects its callers only; the next flush still runs', async () => {
    let fail = true;
    const save = groupCommit(async () => {
      const f = fail;
      fail = false;
      await sleep(1);
      if (f) throw new Error('conflict');
    });
    const a = save();
    await Promise.resolve();
    await Promise.resolve();
    const b = save();
    await expect(a).rejects.toThrow('conflict');
    await expect(b).resolves.toBeUndefined();
  });
});
