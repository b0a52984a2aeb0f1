import type { AgentPolicy, AgentPolicySpec } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { type AgentRequest, agentDecision } from '../../src/policy/agentPolicy.js';

const NS = 'team-a';
const policy = (name: string, spec: AgentPolicySpec, namespace = NS): AgentPolicy => ({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'AgentPolicy',
  metadata: { name, namespace },
  spec,
});
const devBot = policy('bots', {
  agents: ['release-bot'],
  rules: [
    {
      environments: ['dev', 'qa-*'],
      operations: ['plan', 'promote', 'rollback'],
      maxApplicationsPerPlan: 3,
      maxPlansPerHour: 2,
    },
    { operations: ['stopLine'] },
    // Weekdays 08:00-18:00 UTC only.
    {
      environments: ['stable'],
      operations: ['plan'],
      windows: [{ name: 'office', schedule: '0 8 * * 1-5', duration: '10h' }],
    },
  ],
});
const everyone = policy('all', { agents: ['*'], rules: [{ environments: ['dev'], operations: ['plan'] }] });
const killHere = policy('stop', { agents: ['nobody'], killSwitch: true });
const killEverywhere = policy('stop-all', { agents: ['nobody'], killSwitch: true }, 'kpromo');
const killElsewhere = policy('stop', { agents: ['nobody'], killSwitch: true }, 'team-b');

const MONDAY_NOON = new Date('2026-12-07T12:00:00Z');
const SUNDAY_NOON = new Date('2026-12-06T12:00:00Z');
const gated = { resource: 'PromotionFlow team-a/shop', field: 'spec.stages[1].approval' };
const req = (r: Partial<AgentRequest>): AgentRequest => ({
  agent: 'release-bot',
  operation: 'promote',
  namespace: NS,
  environment: 'dev',
  applications: 1,
  ...r,
});

describe('agentDecision', () => {
  it.each<[string, Partial<AgentRequest>, AgentPolicy[], { plans?: number; now?: Date }, string]>([
    ['reading needs no policy', { operation: 'read' }, [], {}, 'allowed'],
    ['no policy: only reading', {}, [], {}, 'AgentPolicies of namespace team-a spec.rules[].operations'],
    [
      'a policy of another agent allows nothing',
      { agent: 'other-bot' },
      [devBot],
      {},
      'AgentPolicies of namespace team-a spec.rules[].operations',
    ],
    [
      '"*" names every agent',
      { agent: 'other-bot', operation: 'plan' },
      [everyone],
      {},
      'AgentPolicy team-a/all spec.rules[0]',
    ],
    [
      'promote into dev within the limits',
      { applications: 3 },
      [devBot],
      { plans: 1 },
      'AgentPolicy team-a/bots spec.rules[0]',
    ],
    ['globs cover environments', { environment: 'qa-eu' }, [devBot], {}, 'AgentPolicy team-a/bots spec.rules[0]'],
    [
      'too many applications',
      { applications: 4 },
      [devBot],
      {},
      'AgentPolicy team-a/bots spec.rules[0].maxApplicationsPerPlan',
    ],
    ['too many plans this hour', {}, [devBot], { plans: 2 }, 'AgentPolicy team-a/bots spec.rules[0].maxPlansPerHour'],
    [
      'stopping the line is no plan: the hourly limit does not count it',
      { operation: 'stopLine', environment: undefined },
      [devBot],
      { plans: 9 },
      'AgentPolicy team-a/bots spec.rules[1]',
    ],
    [
      'an operation the rule does not list',
      { environment: 'stable' },
      [devBot],
      {},
      'AgentPolicies of namespace team-a spec.rules[].operations',
    ],
    [
      'inside its window',
      { operation: 'plan', environment: 'stable' },
      [devBot],
      { now: MONDAY_NOON },
      'AgentPolicy team-a/bots spec.rules[2]',
    ],
    [
      'outside its window',
      { operation: 'plan', environment: 'stable' },
      [devBot],
      { now: SUNDAY_NOON },
      'AgentPolicy team-a/bots spec.rules[2].windows',
    ],
    [
      'never promote into a gated stage, whatever the policy',
      { gatedBy: gated },
      [devBot],
      {},
      'PromotionFlow team-a/shop spec.stages[1].approval',
    ],
    [
      'a plan into a gated stage waits for a person: allowed as plan',
      { operation: 'plan', gatedBy: gated },
      [devBot],
      {},
      'AgentPolicy team-a/bots spec.rules[0]',
    ],
    [
      'a gated stage without a plan rule: the gate is named',
      { operation: 'plan', environment: 'other', gatedBy: gated },
      [devBot],
      {},
      'PromotionFlow team-a/shop spec.stages[1].approval',
    ],
    [
      'a request for every environment needs a rule covering all of them',
      { operation: 'rollback', environment: undefined },
      [devBot],
      {},
      'AgentPolicies of namespace team-a spec.rules[].operations',
    ],
    [
      'the kill switch of the namespace stops every agent',
      {},
      [devBot, killHere],
      {},
      'AgentPolicy team-a/stop spec.killSwitch',
    ],
    [
      'the kill switch of the line-stop namespace stops every agent everywhere',
      { operation: 'stopLine' },
      [devBot, killEverywhere],
      {},
      'AgentPolicy kpromo/stop-all spec.killSwitch',
    ],
    [
      'another namespace’s kill switch does not',
      {},
      [devBot, killElsewhere],
      {},
      'AgentPolicy team-a/bots spec.rules[0]',
    ],
    ['the kill switch leaves reading', { operation: 'read' }, [killHere], {}, 'allowed'],
  ])('%s', (_title, r, policies, o, expected) => {
    const v = agentDecision({
      request: req(r),
      policies,
      killSwitchNamespace: 'kpromo',
      plansInLastHour: o.plans ?? 0,
      now: o.now ?? MONDAY_NOON,
    });
    if (expected === 'allowed') return expect(v).toEqual({ allowed: true });
    if (v.allowed) return expect(v.by).toBe(expected);
    expect(`${v.resource} ${v.field}`).toBe(expected);
    // The refusal's message names the rule too, as the caller reads it.
    expect(v.message).toContain(`${v.resource} ${v.field}`);
  });

  it('a refusal names the agent, the operation and the environment', () => {
    const v = agentDecision({
      request: req({ applications: 9 }),
      policies: [devBot],
      plansInLastHour: 0,
      now: MONDAY_NOON,
    });
    expect(v).toMatchObject({ allowed: false });
    if (!v.allowed)
      expect(v.message).toBe(
        'agent release-bot may not promote into dev in namespace team-a: AgentPolicy team-a/bots spec.rules[0].maxApplicationsPerPlan is 3, the plan holds 9 applications',
      );
  });
});
