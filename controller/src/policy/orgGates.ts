import type {
  Environment,
  OrgPolicy,
  OrgRule,
  OrgRuleApplied,
  OrgRuleCovering,
  PromotionFlow,
  RequiredApprovers,
  Stage,
} from '@kpromo/api';
import { globMatcher } from '@kpromo/contract';
import { stageApprovalMode } from './approvalPolicy.js';
import { parseDuration } from './duration.js';
import type { SourcedWindow } from './freezeWindows.js';

/** One org rule covering a stage's Environment, with where it is written. */
export interface MatchedOrgRule {
  /** `<namespace>/<name>` of its OrgPolicy. */
  policy: string;
  rule: OrgRule;
  /** Its index in spec.rules, for the field it names. */
  index: number;
}

/** `OrgPolicy <ns>/<name> rule <rule>` as messages name it. */
export const orgRuleRef = (r: Pick<OrgRuleApplied, 'orgPolicy' | 'rule'>) => `OrgPolicy ${r.orgPolicy} rule ${r.rule}`;

const globMatches = (glob: string, s: string): boolean => {
  try {
    return globMatcher(glob, 'names').test(s);
  } catch {
    // A glob the matcher refuses matches nothing it was not written as.
    return glob === s;
  }
};

/** Pure: whether a rule's selector covers `env` (the Environment named `name`, undefined when unknown). */
export function ruleCovers(rule: OrgRule, name: string, env: Environment | undefined): boolean {
  const sel = rule.environments ?? {};
  if (sel.names?.length && !sel.names.some((g) => globMatches(g, name))) return false;
  if (sel.tiers?.length && !sel.tiers.includes(env?.spec.tier ?? 'development')) return false;
  const labels = env?.metadata.labels ?? {};
  return Object.entries(sel.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}

/**
 * Pure: the org rules covering the Environment `name`, from OrgPolicies in `orgNamespace` only (an
 * OrgPolicy anywhere else, where a team may be able to write it, counts for nothing), oldest policy
 * name first. No `orgNamespace`: no org rules.
 */
export function orgRulesFor(
  policies: readonly OrgPolicy[],
  name: string,
  env: Environment | undefined,
  orgNamespace: string | undefined,
): MatchedOrgRule[] {
  if (!orgNamespace) return [];
  return policies
    .filter((p) => p.metadata.namespace === orgNamespace && !p.metadata.deletionTimestamp)
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
    .flatMap((p) =>
      (p.spec.rules ?? []).flatMap((rule, index) =>
        ruleCovers(rule, name, env) ? [{ policy: `${orgNamespace}/${p.metadata.name}`, rule, index }] : [],
      ),
    );
}

/**
 * Pure: the org rules covering `env`, as its status.orgRules carries them for admission (the
 * kpromo-org-policy ValidatingAdmissionPolicy compares a flow's stage into it against them): only
 * the minimums a stage can fall short of, not freeze windows, which are added and never laxer.
 */
export function environmentOrgRules(
  policies: readonly OrgPolicy[],
  env: Environment,
  orgNamespace: string | undefined,
): OrgRuleCovering[] {
  return orgRulesFor(policies, env.metadata.name, env, orgNamespace).flatMap(({ policy, rule, index }) => {
    const { approvals, requireVerification, minSoakTime, requireSignatureVerification } = rule;
    const minimums = {
      ...(approvals?.minCount !== undefined || approvals?.forbidSelfApproval ? { approvals } : {}),
      ...(requireVerification ? { requireVerification } : {}),
      ...(minSoakTime ? { minSoakTime } : {}),
      ...(requireSignatureVerification ? { requireSignatureVerification } : {}),
    };
    return Object.keys(minimums).length ? [{ orgPolicy: policy, rule: rule.name, index, ...minimums }] : [];
  });
}

/** The gates of a stage with the org's minimums applied. */
export interface EffectiveGates {
  /** Whether plans into the stage need approvals: an org minCount makes an automatic stage need them. */
  mode: 'manual' | 'auto';
  /** The approvers to judge approvals by: the stage's, with count and forbidSelfApproval raised. */
  approvers?: RequiredApprovers;
  /** The longer of the stage's requiredSoakTime and every rule's minSoakTime. */
  requiredSoakTime?: string;
  /** The org rules' freeze windows, added to the Environment's and stage's own. */
  freezeWindows: SourcedWindow[];
  /** Every org requirement that applies, with what the flow has itself and whether the rule decides. */
  rules: OrgRuleApplied[];
  /** Requirements only the flow's owners can meet (a verification check, a signature policy): plans wait. */
  unmet: OrgRuleApplied[];
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** What one rule requires of a stage, each requirement against what the stage has. */
function applyRule(
  m: MatchedOrgRule,
  flow: PromotionFlow | undefined,
  stage: Stage | undefined,
  stageField: string,
  out: EffectiveGates,
): void {
  const { rule, index } = m;
  const add = (field: string, requires: string, flowHas: string, stricter: boolean, unmet = false) => {
    const r: OrgRuleApplied = {
      orgPolicy: m.policy,
      rule: rule.name,
      field: `spec.rules[${index}].${field}`,
      requires,
      flowHas,
      stricter,
      ...(unmet ? { unmet: true } : {}),
    };
    out.rules.push(r);
    if (unmet) out.unmet.push(r);
  };
  const a = rule.approvals;
  if (a?.minCount !== undefined) {
    const auto = out.mode === 'auto';
    const has = out.approvers?.count ?? 1;
    add(
      'approvals.minCount',
      `${plural(a.minCount, 'approval')} at least`,
      auto ? `${stageField}: approval auto (no approval)` : `${stageField}.approvers.count ${has}`,
      auto || a.minCount > has,
    );
    out.mode = 'manual';
    out.approvers = { ...out.approvers, count: Math.max(auto ? 1 : has, a.minCount) };
  }
  if (a?.forbidSelfApproval) {
    const has = !!out.approvers?.forbidSelfApproval;
    add(
      'approvals.forbidSelfApproval',
      "four eyes: the plan's creator does not count as an approver",
      `${stageField}.approvers.forbidSelfApproval ${has}`,
      !has,
    );
    out.approvers = { ...out.approvers, forbidSelfApproval: true };
  }
  if (rule.requireVerification) {
    const n = stage?.verification?.checks.length ?? 0;
    add(
      'requireVerification',
      'at least one verification check',
      `${stageField}.verification: ${plural(n, 'check')}`,
      n === 0,
      n === 0,
    );
  }
  if (rule.minSoakTime) {
    const has = out.requiredSoakTime;
    const longer = !has || parseDuration(rule.minSoakTime) > parseDuration(has);
    add(
      'minSoakTime',
      `soak ${rule.minSoakTime} at least`,
      `${stageField}.requiredSoakTime ${stage?.requiredSoakTime ?? 'unset'}`,
      longer,
    );
    if (longer) out.requiredSoakTime = rule.minSoakTime;
  }
  if (rule.requireSignatureVerification) {
    const own = stage?.signaturePolicy;
    const p = own ?? flow?.spec.signaturePolicy;
    const field = own ? `${stageField}.signaturePolicy` : 'signaturePolicy';
    const enforced = !!p && (p.mode ?? 'Enforce') === 'Enforce' && p.requireSignature !== false;
    const has = !p
      ? `${field}: none`
      : `${field}: mode ${p.mode ?? 'Enforce'}, requireSignature ${p.requireSignature !== false}`;
    add(
      'requireSignatureVerification',
      'a signature policy with mode Enforce and requireSignature',
      has,
      !enforced,
      !enforced,
    );
  }
  if (rule.freezeWindows?.length) {
    const source = `OrgPolicy ${m.policy} rule ${rule.name}`;
    for (const window of rule.freezeWindows) out.freezeWindows.push({ window, source });
    add(
      'freezeWindows',
      `freeze windows ${rule.freezeWindows.map((w) => w.name).join(', ')}`,
      `${stageField}.freezeWindows: ${plural(stage?.freezeWindows?.length ?? 0, 'window')}`,
      true,
    );
  }
}

/**
 * Pure: the effective gates of the stage into `environment` — the stricter of the flow's own stage
 * and every org rule covering it. Nothing of the flow is changed: each requirement is listed with
 * what the flow has, and those only the flow's owners can meet are `unmet` (the plan waits).
 */
export function effectiveGates(
  flow: PromotionFlow | undefined,
  environment: string,
  rules: readonly MatchedOrgRule[],
): EffectiveGates {
  const i = flow?.spec.stages.findIndex((s) => s.environment === environment) ?? -1;
  const stage = i >= 0 ? flow?.spec.stages[i] : undefined;
  const out: EffectiveGates = {
    mode: stageApprovalMode(flow?.spec.approval, stage?.approval),
    ...(stage?.approvers ? { approvers: { ...stage.approvers } } : {}),
    ...(stage?.requiredSoakTime ? { requiredSoakTime: stage.requiredSoakTime } : {}),
    freezeWindows: [],
    rules: [],
    unmet: [],
  };
  const stageField = `stages[${i < 0 ? '?' : i}]`;
  for (const m of rules) applyRule(m, flow, stage, stageField, out);
  return out;
}

/** The words a plan held by an unmet org rule shows: which rule, its field, what the flow lacks, and who fixes it. */
export function orgRuleMessage(r: OrgRuleApplied, flow: string, environment: string): string {
  return `${orgRuleRef(r)} (${r.field}) requires ${r.requires} for ${environment}; PromotionFlow ${flow} has ${r.flowHas}: the plan waits until the flow's owners meet it (kpromo does not change the flow)`;
}

/** Names the org rules that raise the approvals a stage needs, for "waiting for …" texts; '' when none. */
export function orgApprovalNote(rules: readonly OrgRuleApplied[]): string {
  const byRule = new Map<string, string[]>();
  for (const r of rules)
    if (r.stricter && r.field.includes('.approvals.'))
      byRule.set(orgRuleRef(r), [...(byRule.get(orgRuleRef(r)) ?? []), r.field]);
  return byRule.size
    ? ` (required by ${[...byRule].map(([rule, fields]) => `${rule}: ${fields.join(', ')}`).join('; ')})`
    : '';
}
