import type { Candidate, PromotionPlan } from '@kpromo/api';
import { env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { AUTO_LABEL, autoPlanDecision, autoPromote, autoStageRefusal } from '../src/reconcile/autoPromote.js';

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
    await expect(autoPromote(cache, control, new Map(), 'ns', 'main')).resolves.toEqual({ created: [] });
    expect(reads).toBe(0);
  });
});
