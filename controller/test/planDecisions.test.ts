import type { AppProgress, PromotionPlan } from '@kpromo/api';
import { app, dg, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { builtinDeliveryMethods } from '../src/delivery/registry.js';
import { registryOf } from '../src/extension/registry.js';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { appsToWorkOn } from '../src/reconcile/orderDecisions.js';
import { planContentDigest } from '../src/reconcile/planContent.js';
import {
  checkCandidatesInSource,
  claimKey,
  governanceProblems,
  planOutcome,
  promotionBlocker,
  tagDigestsToRead,
  validatePlan,
} from '../src/reconcile/planDecisions.js';

const plan = (spec: Partial<PromotionPlan['spec']>): PromotionPlan => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionPlan',
  metadata: { name: 'p', namespace: 'ns' },
  spec: {
    flow: 'main',
    from: 'dev',
    to: 'stable',
    candidates: [{ application: 'cart', from: { tag: 'v1', digest: dg('a') } }],
    ...spec,
  },
});

describe('validatePlan', () => {
  const cache = new MemoryCache();
  cache.envs = [env('dev'), env('stable'), env('prod')];
  cache.flowList = [flow(['dev', 'stable', 'prod'], { tagPattern: '^v\\d+' })];
  cache.apps = [app('cart')];
  it('resolves a good plan', () => {
    const v = validatePlan(plan({}), cache, builtinDeliveryMethods);
    expect(v.ok && v.resolved.apps.has('cart')).toBe(true);
  });
  it.each([
    [{ flow: 'nope' }, 'FlowNotFound'],
    [{ to: 'qa' }, 'EnvironmentNotFound'],
    [{ to: 'prod' }, 'NotAdjacent'],
    [{ from: 'stable', to: 'dev' }, 'NotAdjacent'],
    [{ candidates: [] }, 'NoCandidates'],
    [{ candidates: [{ application: 'ghost', from: { tag: 'v1', digest: dg('a') } }] }, 'ApplicationNotFound'],
    [{ action: 'rollback' as const, rollbackOf: 'missing', candidates: [] }, 'InvalidRollback'],
  ])('rejects %j with %s', (spec, reason) => {
    const v = validatePlan(plan(spec), cache, builtinDeliveryMethods);
    expect(v.ok ? 'ok' : v.reason).toBe(reason);
  });
  it.each([
    ['no uid label (kubectl, older API plans): the plan of that name', undefined, true],
    ['the uid of the plan rolled back', 'uid-rel', true],
    ['another uid: the plan was deleted and created again since', 'uid-old', false],
  ])('a rollback bound by the rollback-of-uid label, %s: starts %s', (_what, boundTo, starts) => {
    const c = new MemoryCache();
    c.envs = cache.envs;
    c.flowList = cache.flowList;
    c.apps = cache.apps;
    c.planList = [
      {
        ...plan({}),
        metadata: { name: 'rel', namespace: 'ns', uid: 'uid-rel' },
        status: {
          phase: 'Complete',
          apps: [{ application: 'cart', phase: 'Succeeded', written: true } as AppProgress],
        },
      },
    ];
    const rb = plan({ action: 'rollback', rollbackOf: 'rel', candidates: [] });
    if (boundTo) rb.metadata.labels = { 'promotions.kpromo.dev/rollback-of-uid': boundTo };
    const v = validatePlan(rb, c, builtinDeliveryMethods);
    expect(v.ok).toBe(starts);
    if (!v.ok)
      expect(v).toEqual({
        ok: false,
        reason: 'InvalidRollback',
        message:
          'PromotionPlan "rel" (spec.rollbackOf) is not the plan this rollback was made for: that was uid uid-old, it is now uid uid-rel (deleted and created again); roll the new plan back with a new rollback if that is wanted',
      });
  });
  it.each([
    [{ method: 'git' as const }, 'Environment stable: delivery.git is required when method is git'],
    [
      { method: 'helmRelease' as const },
      'Environment stable: delivery.helmRelease is required when method is helmRelease',
    ],
    [
      { method: 'argocd' as 'git' },
      'Environment stable: delivery.method "argocd" is not a registered delivery method (registered: patch, helmRelease, git, imagePolicy)',
    ],
  ])('rejects a target Environment whose delivery %j cannot be used', (delivery, message) => {
    const c = new MemoryCache();
    c.envs = [env('dev'), env('stable', { delivery })];
    c.flowList = cache.flowList;
    c.apps = cache.apps;
    expect(validatePlan(plan({}), c, builtinDeliveryMethods)).toEqual({
      ok: false,
      reason: 'InvalidEnvironment',
      message,
    });
  });
  it('refuses, before it starts, a fleet plan with more application x cluster entries than one object holds', () => {
    const c = new MemoryCache();
    const clusters = Array.from({ length: 100 }, (_, i) => ({ name: `prod-${i}`, cluster: { context: `prod-${i}` } }));
    c.envs = [env('dev'), env('stable', { clusters } as never)];
    c.flowList = cache.flowList;
    c.apps = Array.from({ length: 101 }, (_, i) => app(`app-${i}`));
    const candidates = (n: number) =>
      c.apps.slice(0, n).map((a) => ({ application: a.metadata.name, from: { tag: 'v1', digest: dg('a') } }));
    expect(validatePlan(plan({ candidates: candidates(100) }), c, builtinDeliveryMethods).ok).toBe(true);
    expect(validatePlan(plan({ candidates: candidates(101) }), c, builtinDeliveryMethods)).toEqual({
      ok: false,
      reason: 'FleetPlanTooLarge',
      message:
        '101 application(s) x 100 cluster(s) of Environment stable is 10100 entries; a plan journals at most 10000 in its status (one object in etcd): split the applications over several plans',
    });
    // A started plan keeps going: it fixed its clusters when it started.
    const started = {
      ...plan({ candidates: candidates(101) }),
      status: { apps: [{ application: 'app-0', phase: 'Pending' as const }] },
    };
    expect(validatePlan(started, c, builtinDeliveryMethods).ok).toBe(true);
  });
  it("refuses a plan whose applications' dependsOn form a cycle, naming it; a dependsOn outside the plan is ignored", () => {
    const c = new MemoryCache();
    c.envs = cache.envs;
    c.flowList = cache.flowList;
    const withDeps = (name: string, dependsOn: string[]) => {
      const a = app(name);
      return { ...a, spec: { ...a.spec, dependsOn } };
    };
    c.apps = [withDeps('cart', ['search']), withDeps('search', ['cart']), withDeps('web', ['cart'])];
    const candidate = (application: string) => ({ application, from: { tag: 'v1', digest: dg('a') } });
    expect(
      validatePlan(plan({ candidates: ['web', 'cart', 'search'].map(candidate) }), c, builtinDeliveryMethods),
    ).toEqual({
      ok: false,
      reason: 'DependencyCycle',
      message:
        'dependsOn cycle: cart → search → cart; remove one edge: search from spec.dependsOn of Application cart, or cart from spec.dependsOn of Application search',
    });
    // Without search in the plan, cart's dependsOn on it is ignored: no cycle.
    expect(validatePlan(plan({ candidates: ['web', 'cart'].map(candidate) }), c, builtinDeliveryMethods).ok).toBe(true);
  });
  it('checks the delivery method against the registry it is given', () => {
    const c = new MemoryCache();
    c.envs = [env('dev'), env('stable', { delivery: { method: 'argocd' as 'git' } })];
    c.flowList = cache.flowList;
    c.apps = cache.apps;
    const methods = registryOf('delivery method', [{ name: 'argocd', deliver: async () => undefined }], (m) => m.name);
    expect(validatePlan(plan({}), c, methods).ok).toBe(true);
  });
});

describe('plan decisions', () => {
  const ap = (application: string, phase: AppProgress['phase']): AppProgress => ({ application, phase });
  it('keeps in-flight apps and fills free slots with pending ones in order', () => {
    const apps = [
      ap('a', 'Succeeded'),
      ap('b', 'RollingOut'),
      ap('c', 'Pending'),
      ap('d', 'Pending'),
      ap('e', 'Pending'),
    ];
    expect(appsToWorkOn(apps, 3).map((a) => a.application)).toEqual(['b', 'c', 'd']);
    expect(appsToWorkOn(apps, 1).map((a) => a.application)).toEqual(['b']);
  });
  it('derives Complete/Incomplete only when every app is terminal', () => {
    expect(planOutcome([ap('a', 'Succeeded'), ap('b', 'Writing')])).toBeUndefined();
    expect(planOutcome([ap('a', 'Succeeded'), ap('b', 'Succeeded')])).toEqual({
      phase: 'Complete',
      succeeded: 2,
      failed: 0,
    });
    expect(planOutcome([ap('a', 'Succeeded'), ap('b', 'Failed')])).toEqual({
      phase: 'Incomplete',
      succeeded: 1,
      failed: 1,
    });
  });
});

describe('promotionBlocker', () => {
  const cand = (application: string) => ({ application, from: { tag: 'v1', digest: dg('a') } });
  const p = (
    name: string,
    created: string,
    over: Partial<PromotionPlan['spec']> & { approved?: boolean } = {},
    status?: PromotionPlan['status'],
  ): PromotionPlan => {
    const { approved = true, ...spec } = over;
    const x = plan({ candidates: [cand('cart'), cand('search')], ...spec });
    // The controller records whether the approval policy is met in status.gate.
    const gate = { approved, required: 1 };
    return { ...x, metadata: { ...x.metadata, name, creationTimestamp: created }, status: { ...status, gate } };
  };
  const apps = (phase: AppProgress['phase'], app = 'cart'): PromotionPlan['status'] => ({
    phase: 'Promoting',
    apps: [{ application: app, phase }],
  });
  const T1 = '2026-12-02T10:00:00Z';
  const T2 = '2026-12-02T10:05:00Z';

  it('waits for a plan that has the app in flight into the same environment, whatever the order', () => {
    const older = p('older', T1);
    for (const phase of ['Copying', 'Writing', 'RollingOut'] as const) {
      const newer = p('newer', T2, {}, apps(phase));
      expect(promotionBlocker(older, 'cart', [older, newer])?.metadata.name).toBe('newer');
    }
  });
  it('lets the app go when the other plan finished it, targets another environment or is not approved', () => {
    const me = p('me', T2);
    for (const other of [
      p('done', T1, {}, apps('Succeeded')),
      p('failed', T1, {}, apps('Failed')),
      p('terminal', T1, {}, { phase: 'Incomplete', apps: [{ application: 'cart', phase: 'RollingOut' }] }),
      p('elsewhere', T1, { to: 'prod' }, apps('RollingOut')),
      p('unapproved', T1, { approved: false }),
      p('other-app', T1, { candidates: [cand('search')] }),
      p('other-ns', T1, {}, apps('RollingOut')),
    ]) {
      if (other.metadata.name === 'other-ns') other.metadata.namespace = 'elsewhere';
      expect(promotionBlocker(me, 'cart', [me, other]), other.metadata.name).toBeUndefined();
    }
  });
  it('between plans that have not started the app, the older goes first (no deadlock, no race)', () => {
    const a = p('a', T1);
    const b = p('b', T2, {}, apps('Pending'));
    expect(promotionBlocker(b, 'cart', [a, b])?.metadata.name).toBe('a');
    expect(promotionBlocker(a, 'cart', [a, b])).toBeUndefined();
    // Same timestamp: by name.
    const b1 = p('b', T1);
    expect(promotionBlocker(b1, 'cart', [a, b1])?.metadata.name).toBe('a');
    expect(promotionBlocker(a, 'cart', [a, b1])).toBeUndefined();
  });
  it('honours a claim while the cache still shows the claiming plan Pending', () => {
    const older = p('older', T1);
    const newer = p('newer', T2, {}, apps('Pending')); // its Copying write is not cached yet
    const claims = new Map([[claimKey('ns', 'stable', 'cart'), 'newer']]);
    expect(promotionBlocker(older, 'cart', [older, newer], claims)?.metadata.name).toBe('newer');
    // A claim of a plan that finished (or vanished) blocks nothing.
    expect(promotionBlocker(older, 'cart', [older, p('newer', T2, {}, apps('Succeeded'))], claims)).toBeUndefined();
    expect(promotionBlocker(older, 'cart', [older], claims)).toBeUndefined();
  });
});

describe('governanceProblems and checkCandidatesInSource', () => {
  const apps = new Map([
    ['cart', app('cart')],
    ['search', app('search')],
  ]);
  const main = flow(['dev', 'stable'], { selector: { applications: ['cart'] } });
  it('refuses an app the named flow does not select, naming the selector', () => {
    const r = governanceProblems(
      plan({ candidates: [{ application: 'search', from: { tag: 'v1.0.0', digest: dg('a') } }] }),
      main,
      apps,
      [main],
    );
    expect(r).toEqual({
      reason: 'NotGovernedByFlow',
      message:
        "not promoted under PromotionFlow main's policy: search is not selected by PromotionFlow main (spec.selector)",
    });
  });
  it('refuses a tag outside the flow tag pattern (the default ^v\\d+\\.\\d+\\.\\d+)', () => {
    const r = governanceProblems(
      plan({ candidates: [{ application: 'cart', from: { tag: 'latest', digest: dg('a') } }] }),
      main,
      apps,
      [main],
    );
    expect(r?.reason).toBe('TagPatternMismatch');
    expect(r?.message).toContain('cart: tag latest does not match the tag pattern of PromotionFlow main');
  });
  it('refuses an app a second flow also governs into the same environment, not one into another environment', () => {
    const other = {
      ...flow(['dev', 'stable'], { selector: { applications: ['c*'] } }),
      metadata: { name: 'other', namespace: 'ns' },
    };
    const elsewhere = { ...flow(['dev', 'qa']), metadata: { name: 'qa-only', namespace: 'ns' } };
    const ok = plan({ candidates: [{ application: 'cart', from: { tag: 'v1.0.0', digest: dg('a') } }] });
    expect(governanceProblems(ok, main, apps, [main, elsewhere])).toBeUndefined();
    expect(governanceProblems(ok, main, apps, [main, other, elsewhere])).toEqual({
      reason: 'GovernedBySeveralFlows',
      message:
        "not promoted under PromotionFlow main's policy: cart is governed into stable by PromotionFlow main and also by PromotionFlow other: narrow their selectors so one flow governs it",
    });
  });
  const one = (tag: string, digest: string) => plan({ candidates: [{ application: 'cart', from: { tag, digest } }] });
  const notIn = (m: string) => ({
    refused: {
      reason: 'CandidateNotInSource',
      message: `candidates must be the version running in dev when the plan starts: ${m}; create a new plan from the candidates shown now (kpromo diff)`,
    },
  });
  const byTag = (m: string) => ({
    refused: {
      reason: 'CandidateDigestMismatch',
      message: `candidates must be the version running in dev when the plan starts (for a workload that runs a tag only, the digest that tag names in the registry of Environment dev): ${m}; create a new plan from the candidates shown now (kpromo diff), which carry the digest the tag names`,
    },
  });
  const waits = (m: string) => ({
    unread: `waiting to read the digest of the tag dev runs from the registry of Environment dev before starting (a candidate is bound to it; nothing starts until the registry answers): ${m}`,
  });
  it.each([
    ['pinned, same digest', one('v1', dg('a')), { tag: 'v1', digest: dg('a') }, undefined, {}],
    [
      'pinned, another digest',
      one('v1', dg('b')),
      { tag: 'v1', digest: dg('a') },
      undefined,
      notIn(`cart: dev runs v1@${dg('a')}, not the candidate v1@${dg('b')}`),
    ],
    [
      'runs nothing',
      one('v1', dg('a')),
      undefined,
      undefined,
      notIn(`cart: dev runs nothing, not the candidate v1@${dg('a')}`),
    ],
    [
      'tag only, another tag: refused without a look-up',
      one('v2', dg('a')),
      { tag: 'v1' },
      undefined,
      notIn(`cart: dev runs v1, not the candidate v2@${dg('a')}`),
    ],
    ['tag only, the tag names the candidate digest', one('v1', dg('a')), { tag: 'v1' }, { digest: dg('a') }, {}],
    [
      'tag only, the tag names another digest (an older build named)',
      one('v1', dg('0')),
      { tag: 'v1' },
      { digest: dg('a') },
      byTag(
        `cart: dev runs v1 by tag only, and v1 names ${dg('a')} in the registry of Environment dev, not the candidate's ${dg('0')}`,
      ),
    ],
    [
      'tag only, no such tag in the registry',
      one('v1', dg('a')),
      { tag: 'v1' },
      { digest: undefined },
      byTag(
        `cart: dev runs v1 by tag only, and the registry of Environment dev has no tag v1 for shop/cart: the candidate's ${dg('a')} cannot be bound to what runs`,
      ),
    ],
    [
      'tag only, the registry faulted: waits',
      one('v1', dg('a')),
      { tag: 'v1' },
      { error: '503 Service Unavailable' },
      waits('cart (dev runs v1 by tag only): 503 Service Unavailable'),
    ],
    [
      'tag only, not read: waits, never passes',
      one('v1', dg('a')),
      { tag: 'v1' },
      undefined,
      waits('cart (dev runs v1 by tag only): not read yet'),
    ],
  ] as const)('checkCandidatesInSource: %s', (_, p, runs, tagDigest, expected) => {
    expect(
      checkCandidatesInSource(
        p,
        apps,
        () => runs,
        () => tagDigest,
      ),
    ).toEqual(expected);
  });
  it('checkCandidatesInSource: a refusal wins over a registry that did not answer, and lists every problem', () => {
    const p = plan({
      candidates: [
        { application: 'cart', from: { tag: 'v1', digest: dg('a') } },
        { application: 'search', from: { tag: 'v2', digest: dg('b') } },
      ],
    });
    const r = checkCandidatesInSource(
      p,
      apps,
      (a) => (a.metadata.name === 'cart' ? { tag: 'v1' } : { tag: 'v2', digest: dg('c') }),
      () => ({ error: 'timeout' }),
    );
    expect(r).toEqual({
      refused: {
        reason: 'CandidateNotInSource',
        message: `candidates must be the version running in dev when the plan starts (for a workload that runs a tag only, the digest that tag names in the registry of Environment dev): search: dev runs v2@${dg('c')}, not the candidate v2@${dg('b')}; create a new plan from the candidates shown now (kpromo diff), which carry the digest the tag names`,
      },
    });
  });
  it('tagDigestsToRead: only candidates whose source runs their tag without a digest', () => {
    const p = plan({
      candidates: [
        { application: 'cart', from: { tag: 'v1', digest: dg('a') } },
        { application: 'search', from: { tag: 'v2', digest: dg('b') } },
      ],
    });
    const runs = new Map([
      ['cart', { tag: 'v1' }],
      ['search', { tag: 'v3' }],
    ]);
    expect(tagDigestsToRead(p, apps, (a) => runs.get(a.metadata.name)).map((a) => a.metadata.name)).toEqual(['cart']);
    expect(tagDigestsToRead(p, apps, () => ({ tag: 'v1', digest: dg('a') }))).toEqual([]);
  });
});

describe('planContentDigest', () => {
  const spec = plan({}).spec;
  it('ignores approvals and key order; changes with any content field', () => {
    const d = planContentDigest(spec);
    expect(d).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(planContentDigest({ ...spec, approvals: [{ user: 'alice' }] })).toBe(d);
    const reordered = JSON.parse(
      JSON.stringify({ candidates: spec.candidates, to: spec.to, from: spec.from, flow: spec.flow }),
    );
    expect(planContentDigest(reordered)).toBe(d);
    expect(planContentDigest({ ...spec, to: 'prod' })).not.toBe(d);
    expect(planContentDigest({ ...spec, requestedBy: 'mallory' })).not.toBe(d);
    expect(
      planContentDigest({ ...spec, candidates: [{ application: 'cart', from: { tag: 'v1', digest: dg('b') } }] }),
    ).not.toBe(d);
  });
});
