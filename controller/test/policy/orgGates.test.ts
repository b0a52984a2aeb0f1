import {
  API_VERSION,
  type Environment,
  type OrgPolicy,
  type OrgRule,
  type PromotionFlow,
  type PromotionPlan,
  type Stage,
} from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { selfApprovalRefusal } from '../../src/api/promotions.js';
import {
  effectiveGates,
  environmentOrgRules,
  type MatchedOrgRule,
  orgRulesFor,
  ruleCovers,
} from '../../src/policy/orgGates.js';
import { planGate } from '../../src/reconcile/planGate.js';

const ORG = 'kpromo-system';
const KEYS = { keys: [{ name: 'build' }] };

const policy = (namespace: string, name: string, rules: OrgRule[]): OrgPolicy => ({
  apiVersion: API_VERSION,
  kind: 'OrgPolicy',
  metadata: { namespace, name },
  spec: { rules },
});

const env = (name: string, tier?: Environment['spec']['tier'], labels?: Record<string, string>): Environment =>
  ({
    apiVersion: API_VERSION,
    kind: 'Environment',
    metadata: { namespace: 'shop', name, ...(labels ? { labels } : {}) },
    spec: { namespace: 'shop', ...(tier ? { tier } : {}) },
  }) as Environment;

const flowWith = (prod: Omit<Stage, 'environment'>, spec: Partial<PromotionFlow['spec']> = {}): PromotionFlow =>
  ({
    apiVersion: API_VERSION,
    kind: 'PromotionFlow',
    metadata: { namespace: 'shop', name: 'main' },
    spec: { stages: [{ environment: 'stable' }, { environment: 'prod', ...prod }], ...spec },
  }) as PromotionFlow;

const matched = (rule: Omit<OrgRule, 'name'>, index = 0): MatchedOrgRule => ({
  policy: `${ORG}/platform`,
  rule: { name: 'prod-gates', ...rule },
  index,
});

describe('which org rules cover an Environment (policy/orgGates.ts)', () => {
  it.each([
    ['no selector: every Environment', {}, env('dev'), true],
    ['by name', { names: ['prod'] }, env('prod'), true],
    ['by glob', { names: ['prod-*'] }, env('prod-eu'), true],
    ['a name that does not match', { names: ['prod'] }, env('production'), false],
    ['by tier', { tiers: ['production' as const] }, env('live', 'production'), true],
    ['tier unset reads as development', { tiers: ['production' as const] }, env('live'), false],
    ['by labels, every one', { matchLabels: { pci: 'true' } }, env('pay', undefined, { pci: 'true' }), true],
    ['a missing label', { matchLabels: { pci: 'true' } }, env('pay'), false],
    ['every field must match', { names: ['prod'], tiers: ['production' as const] }, env('prod', 'staging'), false],
  ])('%s', (_title, environments, e, covers) => {
    expect(ruleCovers({ name: 'r', environments, requireVerification: true }, e.metadata.name, e)).toBe(covers);
  });

  it("counts only OrgPolicies of the org-policy namespace: a team's own OrgPolicy is ignored", () => {
    const rules = [{ name: 'r', approvals: { minCount: 2 } }];
    const policies = [policy('shop', 'mine', [{ name: 'weak', approvals: { minCount: 1 } }]), policy(ORG, 'p', rules)];
    expect(orgRulesFor(policies, 'prod', env('prod'), ORG).map((m) => m.policy)).toEqual([`${ORG}/p`]);
    expect(orgRulesFor(policies, 'prod', env('prod'), undefined)).toEqual([]);
  });
});

describe("an Environment's status.orgRules: what admission judges a flow's stage into it by", () => {
  const rules: OrgRule[] = [
    { name: 'prod-gates', environments: { tiers: ['production'] }, approvals: { minCount: 2 }, minSoakTime: '1h' },
    {
      name: 'freeze-only',
      freezeWindows: [{ name: 'ye', start: '2026-12-20T00:00:00Z', end: '2027-01-04T00:00:00Z' }],
    },
    {
      name: 'signed',
      environments: { names: ['prod*'] },
      requireSignatureVerification: true,
      requireVerification: true,
    },
  ];
  const policies = [
    policy(ORG, 'platform', rules),
    policy('shop', 'mine', [{ name: 'weak', requireVerification: true }]),
  ];

  it('resolves tiers and names for admission, keeping index and minimums; freeze windows are never laxer', () => {
    expect(environmentOrgRules(policies, env('prod', 'production'), ORG)).toEqual([
      { orgPolicy: `${ORG}/platform`, rule: 'prod-gates', index: 0, approvals: { minCount: 2 }, minSoakTime: '1h' },
      {
        orgPolicy: `${ORG}/platform`,
        rule: 'signed',
        index: 2,
        requireVerification: true,
        requireSignatureVerification: true,
      },
    ]);
  });
  it('a development Environment named outside every rule: none; no org-policy namespace: none', () => {
    expect(environmentOrgRules(policies, env('dev'), ORG)).toEqual([]);
    expect(environmentOrgRules(policies, env('prod', 'production'), undefined)).toEqual([]);
  });
});

describe('effective gates: the stricter of the flow and the org (table)', () => {
  it.each<{
    title: string;
    stage: Omit<Stage, 'environment'>;
    flowSpec?: Partial<PromotionFlow['spec']>;
    rule: Omit<OrgRule, 'name'>;
    want: Partial<ReturnType<typeof effectiveGates>>;
    decides: string[];
    unmet?: string[];
  }>([
    {
      title: 'org count 2 over the flow count 1: 2',
      stage: { approvers: { count: 1 } },
      rule: { approvals: { minCount: 2 } },
      want: { mode: 'manual', approvers: { count: 2 } },
      decides: ['spec.rules[0].approvals.minCount'],
    },
    {
      title: 'flow count 3 over the org count 2: 3, the rule does not decide',
      stage: { approvers: { count: 3, groups: ['sre'] } },
      rule: { approvals: { minCount: 2 } },
      want: { approvers: { count: 3, groups: ['sre'] } },
      decides: [],
    },
    {
      title: 'an automatic stage needs the org count',
      stage: { approval: 'auto' },
      rule: { approvals: { minCount: 1 } },
      want: { mode: 'manual', approvers: { count: 1 } },
      decides: ['spec.rules[0].approvals.minCount'],
    },
    {
      title: 'four eyes from the org where the flow allows self-approval',
      stage: { approvers: { count: 1 } },
      rule: { approvals: { forbidSelfApproval: true } },
      want: { approvers: { count: 1, forbidSelfApproval: true } },
      decides: ['spec.rules[0].approvals.forbidSelfApproval'],
    },
    {
      title: 'soak: the longer one',
      stage: { requiredSoakTime: '30m' },
      rule: { minSoakTime: '2h' },
      want: { requiredSoakTime: '2h' },
      decides: ['spec.rules[0].minSoakTime'],
    },
    {
      title: "soak: the flow's when longer",
      stage: { requiredSoakTime: '3h' },
      rule: { minSoakTime: '2h' },
      want: { requiredSoakTime: '3h' },
      decides: [],
    },
    {
      title: 'no verification check: unmet, the flow is not changed',
      stage: {},
      rule: { requireVerification: true },
      want: {},
      decides: ['spec.rules[0].requireVerification'],
      unmet: ['spec.rules[0].requireVerification'],
    },
    {
      title: 'a verification check of the stage meets it',
      stage: { verification: { checks: [{ name: 'errors', query: 'q', successCondition: 'result < 1' }] } as never },
      rule: { requireVerification: true },
      want: {},
      decides: [],
    },
    {
      title: 'signatures audited only: unmet',
      stage: {},
      flowSpec: { signaturePolicy: { mode: 'Audit', ...KEYS } },
      rule: { requireSignatureVerification: true },
      want: {},
      decides: ['spec.rules[0].requireSignatureVerification'],
      unmet: ['spec.rules[0].requireSignatureVerification'],
    },
    {
      title: "the flow's enforced signature policy meets it",
      stage: {},
      flowSpec: { signaturePolicy: KEYS },
      rule: { requireSignatureVerification: true },
      want: {},
      decides: [],
    },
    {
      title: 'org freeze windows are added',
      stage: {},
      rule: { freezeWindows: [{ name: 'eoy', start: '2026-12-20T00:00:00Z', end: '2027-01-02T00:00:00Z' }] },
      want: {},
      decides: ['spec.rules[0].freezeWindows'],
    },
  ])('$title', ({ stage, flowSpec, rule, want, decides, unmet = [] }) => {
    const g = effectiveGates(flowWith(stage, flowSpec), 'prod', [matched(rule)]);
    expect(g).toMatchObject(want);
    expect(g.rules.filter((r) => r.stricter).map((r) => r.field)).toEqual(decides);
    expect(g.unmet.map((r) => r.field)).toEqual(unmet);
    for (const r of g.rules) expect(r).toMatchObject({ orgPolicy: `${ORG}/platform`, rule: 'prod-gates' });
  });

  it('without org rules the gates are the flow stage’s own', () => {
    const g = effectiveGates(flowWith({ approvers: { count: 1 }, requiredSoakTime: '1h' }), 'prod', []);
    expect(g).toEqual({
      mode: 'manual',
      approvers: { count: 1 },
      requiredSoakTime: '1h',
      freezeWindows: [],
      rules: [],
      unmet: [],
    });
  });

  it('several rules: each minimum from the strictest', () => {
    const g = effectiveGates(flowWith({}), 'prod', [
      matched({ approvals: { minCount: 2 }, minSoakTime: '1h' }, 0),
      matched({ approvals: { minCount: 3 }, minSoakTime: '30m' }, 1),
    ]);
    expect(g.approvers?.count).toBe(3);
    expect(g.requiredSoakTime).toBe('1h');
  });
});

const plan = (approvals: string[], requestedBy = 'dev'): PromotionPlan =>
  ({
    apiVersion: API_VERSION,
    kind: 'PromotionPlan',
    metadata: { namespace: 'shop', name: 'p1', uid: 'u-1' },
    spec: {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      action: 'promote',
      requestedBy,
      candidates: [{ application: 'web', from: { tag: 'v2', digest: `sha256:${'a'.repeat(64)}` } }],
      approvals: approvals.map((user) => ({ user, at: '2026-12-01T09:00:00Z', planUID: 'u-1' })),
    },
  }) as unknown as PromotionPlan;
const cache = { getApplication: () => undefined };
const now = new Date('2026-12-01T12:00:00Z');

describe('attacks: a team flow weaker than the org', () => {
  const teamFlow = flowWith({ approvers: { count: 1 } });
  const org = [matched({ approvals: { minCount: 2, forbidSelfApproval: true } })];

  it('a flow with count 1 into prod where the org says 2: one approval does not start the plan, the second does', () => {
    const one = planGate(plan(['rm']), teamFlow, env('prod'), cache, now, [], undefined, org);
    expect(one.gate).toMatchObject({ approved: false, required: 2 });
    expect(one.hold?.reason).toBe('AwaitingApproval');
    expect(one.gate.waitingFor).toBe(
      `1 more approval (required by OrgPolicy ${ORG}/platform rule prod-gates: spec.rules[0].approvals.minCount, spec.rules[0].approvals.forbidSelfApproval)`,
    );
    const two = planGate(plan(['rm', 'lead']), teamFlow, env('prod'), cache, now, [], undefined, org);
    expect(two.gate.approved).toBe(true);
    expect(two.hold).toBeUndefined();
    // The same flow without the org rule: one approval was enough (the flow alone is weaker).
    expect(planGate(plan(['rm']), teamFlow, env('prod'), cache, now).gate.approved).toBe(true);
  });

  it("the plan's creator approving their own plan does not count under the org's four eyes", () => {
    const g = planGate(plan(['dev', 'rm'], 'dev'), teamFlow, env('prod'), cache, now, [], undefined, org);
    expect(g.gate.approved).toBe(false);
    expect(g.gate.approvers?.find((a) => a.user === 'dev')).toMatchObject({
      counted: false,
      why: 'creator of the plan',
    });
    // Every door refuses the self-approval up front, naming the org rule.
    const withGate = { ...plan([], 'dev'), status: { gate: g.gate } } as PromotionPlan;
    expect(selfApprovalRefusal(withGate, 'dev')).toBe(
      `dev requested this plan, and OrgPolicy ${ORG}/platform rule prod-gates (spec.rules[0].approvals.forbidSelfApproval) forbids approving your own plan into prod: another person must approve`,
    );
    expect(selfApprovalRefusal(withGate, 'rm')).toBeUndefined();
  });

  it('a stage without the verification check the org requires holds the approved plan, naming the rule', () => {
    const g = planGate(plan(['rm']), teamFlow, env('prod'), cache, now, [], undefined, [
      matched({ requireVerification: true }),
    ]);
    expect(g.gate.approved).toBe(true);
    expect(g.hold?.reason).toBe('OrgPolicy');
    expect(g.hold?.message).toBe(
      `OrgPolicy ${ORG}/platform rule prod-gates (spec.rules[0].requireVerification) requires at least one verification check for prod; PromotionFlow main has stages[1].verification: 0 checks: the plan waits until the flow's owners meet it (kpromo does not change the flow)`,
    );
    expect(g.gate.orgRules).toEqual([
      {
        orgPolicy: `${ORG}/platform`,
        rule: 'prod-gates',
        field: 'spec.rules[0].requireVerification',
        requires: 'at least one verification check',
        flowHas: 'stages[1].verification: 0 checks',
        stricter: true,
        unmet: true,
      },
    ]);
  });

  it('a rollback needs the org approvals but is held by none of the rest, and lists only what applies to it', () => {
    const rollback = {
      ...plan(['rm', 'lead']),
      spec: { ...plan(['rm', 'lead']).spec, action: 'rollback' },
    } as PromotionPlan;
    const rules = [matched({ approvals: { minCount: 2 }, requireVerification: true, minSoakTime: '1h' })];
    const g = planGate(rollback, teamFlow, env('prod'), cache, now, [], undefined, rules);
    expect(g.hold).toBeUndefined();
    expect(g.gate.required).toBe(2);
    expect(g.gate.orgRules?.map((r) => r.field)).toEqual(['spec.rules[0].approvals.minCount']);
    const one = { ...rollback, spec: { ...rollback.spec, approvals: rollback.spec.approvals?.slice(0, 1) } };
    expect(planGate(one, teamFlow, env('prod'), cache, now, [], undefined, rules).hold?.reason).toBe(
      'AwaitingApproval',
    );
  });

  it("the org's soak holds a plan the flow would let start, naming the rule", () => {
    const g = planGate(plan(['rm']), teamFlow, env('prod'), cache, now, [], undefined, [
      matched({ minSoakTime: '1h' }),
    ]);
    expect(g.hold?.reason).toBe('Soaking');
    expect(g.hold?.message).toContain(`for 1h (OrgPolicy ${ORG}/platform rule prod-gates, spec.rules[0].minSoakTime)`);
  });

  it('an org freeze window holds the plan, named as its source', () => {
    const g = planGate(plan(['rm']), teamFlow, env('prod'), cache, now, [], undefined, [
      matched({ freezeWindows: [{ name: 'eoy', start: '2026-12-01T00:00:00Z', end: '2026-12-02T00:00:00Z' }] }),
    ]);
    expect(g.hold?.reason).toBe('Frozen');
    expect(g.hold?.message).toContain(`OrgPolicy ${ORG}/platform rule prod-gates window eoy`);
  });
});
