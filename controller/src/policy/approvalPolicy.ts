import type { Approval, RequiredApprovers } from '@kpromo/api';

export type ApprovalMode = 'manual' | 'auto';

export interface ApprovalVerdict {
  approved: boolean;
  /** Qualifying approvals needed; 0 for auto stages. */
  required: number;
  approvers: Array<{ user: string; counted: boolean; why?: string; overrideFreeze?: boolean }>;
  /** Who still must approve, in words; set while not approved. */
  waitingFor?: string;
  /** User of the first approval asking to override a freeze window. */
  overrideFreezeBy?: string;
}

/** The approval mode of a stage: the stage's own setting, else the flow's, else manual. */
export function stageApprovalMode(
  flowApproval: ApprovalMode | undefined,
  stageApproval: ApprovalMode | undefined,
): ApprovalMode {
  return stageApproval ?? flowApproval ?? 'manual';
}

/**
 * Whether a plan's approvals satisfy the target stage. Admission has already checked that each
 * entry names its own user and groups and that the user holds the approve verb, so this only
 * decides which entries count: listed users or groups (anyone when neither is listed), each user
 * once, never the plan's creator under forbidSelfApproval.
 */
export function evaluateApprovals(input: {
  mode: ApprovalMode;
  approvers?: RequiredApprovers;
  approvals: readonly Approval[];
  requestedBy?: string;
  /** The plan's metadata.uid: an approval naming another plan (planUID) never counts. */
  planUID?: string;
}): ApprovalVerdict {
  const { mode, approvers: policy = {}, approvals, requestedBy, planUID } = input;
  // An override is recorded even when its approval does not count: admission checked the verb.
  const forOtherPlan = (a: Approval) => !!a.planUID && !!planUID && a.planUID !== planUID;
  const overrideFreezeBy = approvals.find((a) => a.overrideFreeze && !forOtherPlan(a))?.user;
  const withOverride = overrideFreezeBy !== undefined ? { overrideFreezeBy } : {};
  const entry = (a: Approval, counted: boolean, why?: string) => ({
    user: a.user,
    counted,
    ...(why ? { why } : {}),
    ...(a.overrideFreeze ? { overrideFreeze: true } : {}),
  });

  if (mode === 'auto') {
    return {
      approved: true,
      required: 0,
      approvers: approvals.map((a) => entry(a, false, 'stage needs no approval (auto)')),
      ...withOverride,
    };
  }

  const required = policy.count ?? 1;
  const users = policy.users ?? [];
  const groups = policy.groups ?? [];
  const anyone = users.length === 0 && groups.length === 0;

  if (policy.forbidSelfApproval && !requestedBy) {
    // Without the creator nobody can be ruled out, so nothing counts.
    return {
      approved: false,
      required,
      approvers: approvals.map((a) => entry(a, false, 'spec.requestedBy is unset')),
      waitingFor:
        'spec.requestedBy is unset, so self-approval cannot be ruled out (forbidSelfApproval); recreate the plan',
      ...withOverride,
    };
  }

  const seen = new Set<string>();
  const listed: ApprovalVerdict['approvers'] = [];
  for (const a of approvals) {
    if (forOtherPlan(a)) {
      listed.push(entry(a, false, `approved another plan (uid ${a.planUID})`));
      continue;
    }
    if (seen.has(a.user)) {
      listed.push(entry(a, false, 'already counted for this user'));
      continue;
    }
    if (policy.forbidSelfApproval && a.user === requestedBy) {
      listed.push(entry(a, false, 'creator of the plan'));
      continue;
    }
    if (anyone || users.includes(a.user) || (a.groups ?? []).some((g) => groups.includes(g))) {
      seen.add(a.user);
      listed.push(entry(a, true));
    } else {
      listed.push(entry(a, false, 'not a required approver'));
    }
  }
  const missing = required - seen.size;
  if (missing <= 0) return { approved: true, required, approvers: listed, ...withOverride };
  const from = [users.length ? `users ${users.join(', ')}` : '', groups.length ? `groups ${groups.join(', ')}` : '']
    .filter(Boolean)
    .join(' or ');
  return {
    approved: false,
    required,
    approvers: listed,
    waitingFor: `${missing} more approval${missing === 1 ? '' : 's'}${from ? ` from ${from}` : ''}`,
    ...withOverride,
  };
}
