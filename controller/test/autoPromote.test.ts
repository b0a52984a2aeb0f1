import { type Candidate, type PromotionPlan, validateResource } from '@kpromo/api';
import { app, deployment, dg, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { Access } from '../src/api/access.js';
import type { ApiContext } from '../src/api/context.js';
import { flowView } from '../src/api/flows.js';
import { listEnvironments } from '../src/api/promotions.js';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { AUTO_LABEL, autoPlanDecision, autoPromote, autoStageRefusal } from '../src/reconcile/autoPromote.js';
import { flowStatus } from '../src/reconcile/reconcileStatus.js';

const cand = (application: string, d: string): Candidate => ({
  application,
  from: { tag: 'v2', digest: `sha256:${d.repeat(64)}` },
});
const auto = flow(['dev', 'qa', 'prod'], {});
auto.spec.stages[1] = { environment: 'qa', approval: 'auto', autoPromotion: { debounce: '10s' } };

function plan(name: string, candidates: Candidate[], phase?: string, created = '2026-12-01T00:00:00Z'): PromotionPlan {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name, namespace: 'ns', labels: { [AUTO_LABEL]: 'true' }, creationTimestamp: created },
    spec: { flow: 'main', from: 'dev', to: 'qa', action: 'promote', candidates },
    ...(phase ? { status: { phase } } : {}),
  } as PromotionPlan;
}

describe('automatic promotion decisions', () => {
  const now = Date.parse('2026-12-03T00:00:00Z');
  const cs = [cand('web', 'a'), cand('api', 'b')];

  it('refuses a manual stage and a paused auto stage before looking at candidates', () => {
    expect(autoStageRefusal(auto, 'prod')).toBe('manual stage');
    expect(autoStageRefusal(auto, 'nowhere')).toBe('manual stage');
    expect(autoStageRefusal(auto, 'qa')).toBeUndefined();
    const paused = structuredClone(auto);
    paused.spec.stages[1].autoPromotion = { paused: true };
    expect(autoStageRefusal(paused, 'qa')).toBe('automatic promotion is paused');
    // a flow-wide auto default makes every stage automatic unless the stage says manual
    expect(autoStageRefusal(flow(['dev', 'qa'], { approval: 'auto' }), 'qa')).toBeUndefined();
  });

  it('waits the debounce time with the same candidates, then creates a plan', () => {
    const first = autoPlanDecision({ flow: auto, to: 'qa', candidates: cs, plans: [], seen: undefined, now });
    expect(first).toEqual({ create: false, why: 'debouncing', recheckInMs: 10_000 });
    const seen = { fingerprint: `api@sha256:${'b'.repeat(64)},web@sha256:${'a'.repeat(64)}`, since: now };
    const later = autoPlanDecision({ flow: auto, to: 'qa', candidates: cs, plans: [], seen, now: now + 10_000 });
    expect(later).toEqual({ create: true, candidates: cs });
  });

  it('keeps one open automatic plan per stage and never retries the same candidates', () => {
    const seen = { fingerprint: 'x', since: 0 };
    const open = autoPlanDecision({ flow: auto, to: 'qa', candidates: cs, plans: [plan('p1', cs)], seen, now });
    expect(open).toMatchObject({ create: false, why: 'automatic plan p1 is still open' });
    const failed = plan('p2', [cs[1], cs[0]], 'Failed');
    const again = autoPlanDecision({ flow: auto, to: 'qa', candidates: cs, plans: [failed], seen, now });
    expect(again).toMatchObject({ create: false, why: 'plan p2 already tried these candidates' });
    expect(autoPlanDecision({ flow: auto, to: 'qa', candidates: [], plans: [], seen, now })).toMatchObject({
      why: 'no candidates',
    });
  });

  it('a stage with a cooldown waits for a quiet source, showing what it will take; then the debounce applies as before', () => {
    const cooled = structuredClone(auto);
    cooled.spec.stages[1].autoPromotion = { cooldown: '10m', debounce: '10s' };
    const seen = { fingerprint: `api@sha256:${'b'.repeat(64)},web@sha256:${'a'.repeat(64)}`, since: now - 3_600_000 };
    const input = { flow: cooled, to: 'qa', candidates: cs, plans: [], seen };
    expect(autoPlanDecision({ ...input, sourceChangedAt: now - 60_000, now })).toEqual({
      create: false,
      why: 'cooling down',
      recheckInMs: 540_000,
      cooldown: { until: now + 540_000, takes: cs },
    });
    expect(autoPlanDecision({ ...input, sourceChangedAt: now - 600_000, now })).toEqual({
      create: true,
      candidates: cs,
    });
    // The candidates of the last automatic plan are not tried again, so no wait is shown for them.
    const tried = autoPlanDecision({ ...input, plans: [plan('p3', cs, 'Failed')], sourceChangedAt: now, now });
    expect(tried).toEqual({ create: false, why: 'plan p3 already tried these candidates' });
  });

  it('does not read applications for a flow whose stages are all manual', async () => {
    const cache = new MemoryCache();
    const manual = flow(['dev', 'qa', 'prod']);
    cache.flowList = [manual];
    cache.envs = [env('dev'), env('qa'), env('prod')];
    let reads = 0;
    cache.applications = () => {
      reads++;
      return [];
    };
    const control = { create: async () => expect.fail('no plan may be created') } as never;
    await expect(autoPromote(cache, control, new Map(), 'ns', 'main')).resolves.toEqual({ created: [], cooldowns: [] });
    expect(reads).toBe(0);
  });

  it("a stage its cooldown holds: the wait is in the flow's status, and GET /flows and /environments show it from there", async () => {
    const cache = new MemoryCache();
    const f = flow(['dev', 'qa'], {});
    f.spec.stages[1] = { environment: 'qa', approval: 'auto', autoPromotion: { cooldown: '10m' } };
    cache.flowList = [f];
    cache.envs = [env('dev'), env('qa')];
    // web v1.4.2 arrived in dev 3 minutes ago (its status says so); qa runs v1.4.0.
    const web = app('web');
    web.status = {
      versions: [
        { environment: 'dev', tag: 'v1.4.2', digest: dg('a'), health: 'Healthy', updatedAt: '2026-12-02T23:57:00Z' },
      ],
    };
    cache.apps = [web];
    cache.workloads.set('dev/Deployment/web', deployment('web', `r/${web.spec.image.repository}:v1.4.2@${dg('a')}`));
    cache.workloads.set('qa/Deployment/web', deployment('web', `r/${web.spec.image.repository}:v1.4.0@${dg('b')}`));
    const control = { create: async () => expect.fail('no plan before the cooldown ends') } as never;
    const a = await autoPromote(cache, control, new Map(), 'ns', 'main', new Date(now));
    expect(a).toMatchObject({ created: [], requeueAfterMs: 420_000 });
    const message = 'cooldown: waiting until 00:07:00 UTC for dev to be quiet for 10m; will take web v1.4.2';
    const wait = {
      environment: 'qa',
      until: '2026-12-03T00:07:00Z',
      candidates: 1,
      takes: [{ application: 'web', tag: 'v1.4.2', digest: dg('a') }],
      message,
    };
    expect(a.cooldowns).toEqual([wait]);
    f.status = flowStatus(f, cache, new Date(now), a.cooldowns);
    expect(f.status.cooldowns).toEqual([wait]);
    // The status is one the CRD schema admits (the apiserver would refuse the write otherwise).
    expect(validateResource(f)).toMatchObject({ ok: true });
    expect(flowView(f).stages[1]).toMatchObject({ cooldown: '10m', cooldownWait: wait });
    const ctx: ApiContext = {
      cache,
      control: undefined as never,
      access: new Access({ check: async () => ({ allowed: true, reason: 'test' }) }),
      namespace: 'ns',
      resolveDigest: async () => undefined,
    };
    const envs = await listEnvironments(ctx, { username: 'alice', groups: [], source: 'static' }, { namespace: 'ns' });
    expect(envs.find((e) => e.name === 'qa')?.cooldowns).toEqual([{ flow: 'main', ...wait }]);
    expect(envs.find((e) => e.name === 'dev')).not.toHaveProperty('cooldowns');
    // Once no stage waits (its plan was created), the status drops the entry it kept.
    expect(flowStatus(f, cache, new Date(now), []).cooldowns).toBeUndefined();
  });
});
