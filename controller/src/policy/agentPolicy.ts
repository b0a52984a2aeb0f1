import type { AgentOperation, AgentPolicy, AgentRule } from '@kpromo/api';
import { globMatcher } from '@kpromo/contract';
import { evaluateFreeze } from './freezeWindows.js';

// Pure decisions on what an agent may do alone (docs/agents.md, "Agents as principals"). Kubernetes
// RBAC of whoever the agent acts as (itself, or the person it acts for) is checked apart, by the
// operation layer; this decides the other half of the intersection: the AgentPolicies.

export interface AgentRequest {
  /** The agent's name (controller config auth.agents), as AgentPolicy spec.agents lists it. */
  agent: string;
  operation: AgentOperation;
  namespace: string;
  /** The target environment; absent for a stop of every environment (then a rule must cover all). */
  environment?: string;
  /** Applications the plan would hold (plan, promote, rollback). */
  applications?: number;
  /**
   * The target stage when it needs a person's approval (approval: manual): where it is configured,
   * for the refusal. Absent for a non-gated (approval: auto) stage.
   */
  gatedBy?: { resource: string; field: string };
}

export type AgentVerdict =
  | { allowed: true /** The rule that allowed it; absent for a read. */; by?: string }
  | {
      allowed: false /** The object that refused, e.g. `AgentPolicy team-a/bots`. */;
      resource: string;
      field: string;
      message: string;
    };

const ref = (p: AgentPolicy) => `AgentPolicy ${p.metadata.namespace ?? ''}/${p.metadata.name}`;
const what = (r: AgentRequest) =>
  `agent ${r.agent} may not ${r.operation}${r.environment ? ` into ${r.environment}` : ' in every environment'} in namespace ${r.namespace}`;
const refuse = (r: AgentRequest, resource: string, field: string, why: string): AgentVerdict => ({
  allowed: false,
  resource,
  field,
  message: `${what(r)}: ${resource} ${field} ${why}`,
});

/** Whether a rule's environments cover the request's (a request for every environment needs a rule for all). */
function covers(rule: AgentRule, environment: string | undefined): boolean {
  if (!rule.environments?.length) return true;
  if (environment === undefined) return false;
  return rule.environments.some((g) => globMatcher(g, 'environments').test(environment));
}

/** Why `rule` (index `i` of `p`) refuses the request within its limits, or undefined when it allows it. */
function ruleRefusal(
  p: AgentPolicy,
  i: number,
  rule: AgentRule,
  r: AgentRequest,
  plansInLastHour: number,
  now: Date,
): AgentVerdict | undefined {
  const field = `spec.rules[${i}]`;
  const apps = r.applications;
  if (rule.maxApplicationsPerPlan !== undefined && apps !== undefined && apps > rule.maxApplicationsPerPlan)
    return refuse(
      r,
      ref(p),
      `${field}.maxApplicationsPerPlan`,
      `is ${rule.maxApplicationsPerPlan}, the plan holds ${apps} applications`,
    );
  const counted = r.operation === 'plan' || r.operation === 'promote' || r.operation === 'rollback';
  if (counted && rule.maxPlansPerHour !== undefined && plansInLastHour >= rule.maxPlansPerHour)
    return refuse(
      r,
      ref(p),
      `${field}.maxPlansPerHour`,
      `is ${rule.maxPlansPerHour}, the agent created ${plansInLastHour} plans in the last hour`,
    );
  if (rule.windows?.length) {
    // Every window is an allow window: the agent acts only while one is open; a window that cannot be
    // evaluated refuses (fail closed), as a broken freeze window freezes.
    const v = evaluateFreeze(
      rule.windows.map((w) => ({ window: { ...w, kind: 'allow' as const }, source: `${ref(p)} ${field}` })),
      now,
    );
    if (v.frozen)
      return refuse(
        r,
        ref(p),
        `${field}.windows`,
        v.invalid
          ? `cannot be evaluated (${v.invalid})`
          : `are all closed now${v.until ? ` (the next opens ${v.until.toISOString()})` : ''}`,
      );
  }
  return undefined;
}

/**
 * Pure: may the agent do this alone? Reading always; anything else needs no kill switch on (an
 * AgentPolicy with killSwitch in the namespace, or in `killSwitchNamespace`, the controller's
 * line-stop namespace, for every namespace), and a rule of an AgentPolicy of the namespace that
 * names the agent (or "*"), covers the environment, lists the operation, and whose limits and
 * windows hold now. Promoting means a plan that runs without a person, so never into a gated stage.
 * `policies`: those of the namespace and of `killSwitchNamespace`; `plansInLastHour`: the plans the
 * agent created in the namespace in the last hour.
 */
export function agentDecision(input: {
  request: AgentRequest;
  policies: readonly AgentPolicy[];
  killSwitchNamespace?: string;
  plansInLastHour: number;
  now: Date;
}): AgentVerdict {
  const { request: r, policies, killSwitchNamespace, plansInLastHour, now } = input;
  if (r.operation === 'read') return { allowed: true };
  const killed = policies.find(
    (p) =>
      p.spec.killSwitch === true &&
      (p.metadata.namespace === r.namespace || (!!killSwitchNamespace && p.metadata.namespace === killSwitchNamespace)),
  );
  if (killed)
    return refuse(
      r,
      ref(killed),
      'spec.killSwitch',
      `is on: every agent is stopped${killed.metadata.namespace === r.namespace ? ' in this namespace' : ''} until it is turned off`,
    );
  if (r.operation === 'promote' && r.gatedBy)
    return refuse(
      r,
      r.gatedBy.resource,
      r.gatedBy.field,
      'gates the stage: a gated stage always needs a person’s approval, never an agent’s; create the plan (operation plan) and have a person approve it',
    );
  const mine = policies.filter(
    (p) => p.metadata.namespace === r.namespace && p.spec.agents.some((a) => a === '*' || a === r.agent),
  );
  let first: AgentVerdict | undefined;
  for (const p of mine)
    for (const [i, rule] of (p.spec.rules ?? []).entries()) {
      if (!rule.operations.includes(r.operation as (typeof rule.operations)[number]) || !covers(rule, r.environment))
        continue;
      const no = ruleRefusal(p, i, rule, r, plansInLastHour, now);
      if (!no) return { allowed: true, by: `${ref(p)} spec.rules[${i}]` };
      first ??= no;
    }
  // A plan into a gated stage is what an agent may do at most there: say the stage is gated.
  if (!first && r.operation === 'plan' && r.gatedBy)
    return refuse(
      r,
      r.gatedBy.resource,
      r.gatedBy.field,
      `gates the stage: an agent may only create plans there that wait for a person (operation plan), and no AgentPolicy rule of namespace ${r.namespace} lets agent ${r.agent} plan into it`,
    );
  return (
    first ??
    refuse(
      r,
      `AgentPolicies of namespace ${r.namespace}`,
      'spec.rules[].operations',
      `have no rule for agent ${r.agent} with operation ${r.operation}${r.environment ? ` covering environment ${r.environment}` : ' covering every environment'} (an agent may only read until one does)`,
    )
  );
}
