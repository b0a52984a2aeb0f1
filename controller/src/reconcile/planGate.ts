import {
  type Environment,
  type EnvironmentVersion,
  isRollback,
  type LineStop,
  type OrgRuleApplied,
  type PlanGate,
  type PromotionFlow,
  type PromotionPlan,
} from '@kpromo/api';
import { type AgentsConfig, agentName } from '../auth/agents.js';
import type { CacheView } from '../kube/cacheView.js';
import { evaluateApprovals } from '../policy/approvalPolicy.js';
import { parseDuration } from '../policy/duration.js';
import { evaluateFreeze, type SourcedWindow } from '../policy/freezeWindows.js';
import { lineStopMessage } from '../policy/lineStop.js';
import {
  effectiveGates,
  type MatchedOrgRule,
  orgApprovalNote,
  orgRuleMessage,
  orgRuleRef,
} from '../policy/orgGates.js';
import type { PersonMapping } from '../policy/persons.js';
import { soakGate } from '../policy/soak.js';
import { soakingSince, verifiedAt } from '../verification/verifiedSince.js';
import { AUTO_LABEL } from './autoPromote.js';
import { approvalSourceOf, combineApprovals, pullRequestApprovals } from './pullRequestDecisions.js';
import { iso } from './time.js';

/** Why a plan that is not running yet must wait, as a condition reason and message. */
export interface Hold {
  reason: 'AwaitingApproval' | 'OrgPolicy' | 'Frozen' | 'LineStopped' | 'Soaking';
  message: string;
  /** Re-check then (the freeze ends, the soak is over); undefined when only a write can unblock it. */
  recheckAt?: Date;
}

/**
 * Pure: everything that decides whether a plan may start now, from the plan, its flow stage and
 * target Environment (approvals, freeze windows, a stopped line, soak time). Rollbacks restore
 * known-good versions: they need approvals (the rollback verb) but are held by neither freezes, a
 * stopped line nor soak time. `stops`: the LineStops holding this plan, oldest first
 * (policy/lineStop.ts stopsHolding); an approval with overrideFreeze passes them as it passes a freeze.
 * `persons`: the platform's identity -> person mapping (config persons), recorded with each approver.
 * `orgRules`: the org rules covering the target (policy/orgGates.ts orgRulesFor): the gate is the
 * stricter of them and the stage; a requirement only the flow can meet (a verification check, a
 * signature policy) holds the plan (OrgPolicy). Automatic rollbacks stay exempt, as from the stage's.
 */
export function planGate(
  plan: PromotionPlan,
  flow: PromotionFlow | undefined,
  toEnv: Environment | undefined,
  /** getPlan and plans: automatic rollbacks and verified soak times (neither without them). */
  cache: Pick<CacheView, 'getApplication'> & Partial<Pick<CacheView, 'getPlan' | 'plans'>>,
  now: Date,
  stops: readonly LineStop[] = [],
  persons?: PersonMapping,
  orgRules: readonly MatchedOrgRule[] = [],
  /** Which identities are agents (config auth.agents): their approvals never count. */
  agents?: AgentsConfig,
): { gate: PlanGate; hold?: Hold } {
  const stage = flow?.spec.stages.find((s) => s.environment === plan.spec.to);
  const eff = effectiveGates(flow, plan.spec.to, orgRules);
  const rollback = isRollback(plan);
  const approvals = plan.spec.approvals ?? [];
  // An automatic stage runs the controller's own plans without approval; a plan someone else created
  // into it is approved like any other (admission lets only the controller, recognised by its
  // username, set the automatic label).
  const automatic = plan.metadata.labels?.[AUTO_LABEL] === 'true' && !rollback;
  // An agent's plan (only the controller records requestedByAgent, after the agent's policy allowed
  // it) into a non-gated stage runs as the controller's own would; into a gated one it waits.
  const agentPlan = !!plan.spec.requestedByAgent;
  const judge = (given: typeof approvals, approvers = eff.approvers) =>
    evaluateApprovals({
      mode: ((automatic || agentPlan) && eff.mode === 'auto') || automaticRollback(plan, cache) ? 'auto' : 'manual',
      approvers,
      approvals: given,
      requestedBy: plan.spec.requestedBy,
      planUID: plan.metadata.uid,
      persons,
      agentOf: (user) => agentName(user, agents),
    });
  // Through a pull request the stage's approvals may be the forge's reviews and merge
  // (pullRequestDecisions.ts): judged by the same policy, persons and self-approval rule.
  const source = approvalSourceOf(flow, plan.spec.to, toEnv);
  const inKpromo = judge(approvals);
  // On the forge the requester's own review or merge never counts, whatever the stage says.
  const onPr =
    source === 'kpromo'
      ? undefined
      : judge(pullRequestApprovals(plan.status?.pullRequest), { ...eff.approvers, forbidSelfApproval: true });
  const v = combineApprovals(source, inKpromo, onPr);
  const waitingFor = v.waitingFor ? `${v.waitingFor}${orgApprovalNote(eff.rules)}` : undefined;
  // A rollback answers to the org's approvals only (as to the stage's): the rest is not listed.
  const listed = rollback ? eff.rules.filter((r) => r.field.includes('.approvals.')) : eff.rules;
  const gate: PlanGate = {
    approved: v.approved,
    required: v.required,
    ...(v.approvers.length
      ? {
          approvers: v.approvers.map((a) => ({
            user: a.user,
            person: a.person,
            counted: a.counted,
            ...(a.why ? { why: a.why } : {}),
            ...(a.overrideFreeze ? { overrideFreeze: true } : {}),
          })),
        }
      : {}),
    ...(v.requestedByPerson !== undefined ? { requestedByPerson: v.requestedByPerson } : {}),
    ...(waitingFor ? { waitingFor } : {}),
    ...(listed.length ? { orgRules: listed } : {}),
  };
  // Reviews need the pull request, which the started plan opens: with approvalSource pullRequest the
  // approvals hold the merge (kpromo/approval), not the start.
  if (source === 'pullRequest' ? false : !inKpromo.approved)
    return {
      gate,
      hold: { reason: 'AwaitingApproval', message: `waiting for approval: ${waitingFor ?? ''}`.trim() },
    };
  if (rollback) return { gate };
  const unmet = eff.unmet[0];
  if (unmet)
    return { gate, hold: { reason: 'OrgPolicy', message: orgRuleMessage(unmet, plan.spec.flow, plan.spec.to) } };

  const windows: SourcedWindow[] = [
    ...(toEnv?.spec.freezeWindows ?? []).map((window) => ({ window, source: `Environment ${plan.spec.to}` })),
    ...(stage?.freezeWindows ?? []).map((window) => ({
      window,
      source: `stage ${plan.spec.to} of PromotionFlow ${plan.spec.flow}`,
    })),
    ...eff.freezeWindows,
  ];
  const f = evaluateFreeze(windows, now);
  if (f.frozen) {
    gate.frozen = {
      window: f.window ?? 'freeze',
      ...(f.reason || f.invalid ? { reason: f.invalid ?? f.reason } : {}),
      ...(f.until ? { until: iso(f.until) } : {}),
      ...(v.overrideFreezeBy ? { overriddenBy: v.overrideFreezeBy } : {}),
    };
    if (!v.overrideFreezeBy) {
      const until = f.until ? ` until ${iso(f.until)}` : '';
      return {
        gate,
        hold: {
          reason: 'Frozen',
          message: `${plan.spec.to} is frozen by ${f.source ?? 'a freeze window'} window ${f.window ?? ''}${until}${f.invalid ? `: ${f.invalid}` : f.reason ? `: ${f.reason}` : ''}; an approver with the override-freeze verb can override`,
          recheckAt: f.until,
        },
      };
    }
  }

  const stop = stops[0];
  if (stop) {
    gate.lineStopped = {
      lineStop: `${stop.metadata.namespace}/${stop.metadata.name}`,
      reason: stop.spec.reason,
      ...(stop.spec.stoppedBy ? { stoppedBy: stop.spec.stoppedBy } : {}),
      ...(v.overrideFreezeBy ? { overriddenBy: v.overrideFreezeBy } : {}),
    };
    if (!v.overrideFreezeBy) return { gate, hold: { reason: 'LineStopped', message: lineStopMessage(stop) } };
  }

  const soak = eff.requiredSoakTime;
  if (soak) {
    const s = soakGate({
      candidates: plan.spec.candidates,
      source: soakSources(plan, cache),
      requiredMs: parseDuration(soak),
      now,
      resets: plan.status?.soakResets,
    });
    if (s.eligibleAt) gate.eligibleAt = iso(s.eligibleAt);
    if (s.waiting.length)
      return {
        gate,
        hold: {
          reason: 'Soaking',
          message: `candidates must run Healthy in ${plan.spec.from} for ${soak}${soakNote(eff.rules)} first${
            s.restart ? ` (the soak restarted at ${s.restart.at}: ${s.restart.reason})` : ''
          }: ${s.waiting.map((w) => `${w.application} ${w.reason}`).join('; ')}`,
          recheckAt: s.eligibleAt,
        },
      };
  }
  return { gate };
}

/** Names the org rule whose minSoakTime decides the soak, for the Soaking message; '' when the stage's does. */
function soakNote(rules: readonly OrgRuleApplied[]): string {
  const r = rules.filter((x) => x.stricter && x.field.endsWith('.minSoakTime')).at(-1);
  return r ? ` (${orgRuleRef(r)}, ${r.field})` : '';
}

/**
 * Each candidate's version in the plan's source as soak time sees it: a version verified after it
 * became Healthy soaks from the end of its verification (soakingSince). For the gate and for the
 * alerts that restart a soak alike.
 */
export function soakSources(
  plan: PromotionPlan,
  cache: Pick<CacheView, 'getApplication'> & Partial<Pick<CacheView, 'plans'>>,
): (application: string) => EnvironmentVersion | undefined {
  const ns = plan.metadata.namespace ?? 'default';
  // Read once for every candidate: which plans verified what, where.
  const plans = cache.plans?.(ns) ?? [];
  const versions = new Map(
    plan.spec.candidates.map((c) => {
      const app = cache.getApplication(ns, c.application);
      const v = app?.status?.versions?.find((x) => x.environment === plan.spec.from);
      return [c.application, soakingSince(v, verifiedAt(plans, c.application, plan.spec.from, v?.digest))] as const;
    }),
  );
  return (a) => versions.get(a);
}

/**
 * Whether `plan` is the rollback a failed verification made the controller create: labelled
 * automatic (admission lets only the controller add or remove that label) and bound by the uid its
 * create returned in the reverted plan's status (only the controller writes status); a plan of
 * the same name but another uid is not it. It runs without approval: the stage's onFailure policy,
 * written by the flow's owners, is the approval.
 */
export function automaticRollback(plan: PromotionPlan, cache: Partial<Pick<CacheView, 'getPlan'>>): boolean {
  if (!isRollback(plan) || plan.metadata.labels?.[AUTO_LABEL] !== 'true') return false;
  if (!plan.spec.rollbackOf) return false;
  const original = cache.getPlan?.(plan.metadata.namespace ?? 'default', plan.spec.rollbackOf);
  return !!original?.status?.automaticRollbacks?.some(
    (a) => !!a.planUID && a.planUID === plan.metadata.uid && a.plan === plan.metadata.name,
  );
}
