import { type Approval, overrideApproval, type RequiredApprovers } from '@kpromo/api';
import { type PersonMapping, personOf } from './persons.js';

export type ApprovalMode = 'manual' | 'auto';

export interface ApprovalVerdict {
  approved: boolean;
  /** Qualifying approvals needed; 0 for auto stages. */
  required: number;
  /** Each approval, with the person it is (config persons) and whether it counts, and why not. */
  approvers: Array<{ user: string; person: string; counted: boolean; why?: string; overrideFreeze?: boolean }>;
  /** The person of spec.requestedBy; set when it is. */
  requestedByPerson?: string;
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
 * decides which entries count: listed users or groups (anyone when neither is listed), each person
 * once, never the plan's creator's person under forbidSelfApproval. Persons come from the
 * platform's mapping (`persons`) applied to the admission-verified user names, never from a field
 * someone wrote: one human approving as `user:default/alice` and as `port:alice@example.com` is one
 * approver. Required `users` are matched against the identity itself (a mapping never makes
 * someone a required approver).
 */
export function evaluateApprovals(input: {
  mode: ApprovalMode;
  approvers?: RequiredApprovers;
  approvals: readonly Approval[];
  requestedBy?: string;
  /** The plan's metadata.uid: an approval naming another plan (planUID) never counts. */
  planUID?: string;
  /** The platform's identity -> person mapping (config persons); none: each identity is a person. */
  persons?: PersonMapping;
  /** The agent an identity is (config auth.agents): an agent's approval never counts. */
  agentOf?: (user: string) => string | undefined;
}): ApprovalVerdict {
  const { mode, approvers: policy = {}, approvals, requestedBy, planUID, persons, agentOf } = input;
  const person = (user: string) => personOf(user, persons);
  const requester = requestedBy ? person(requestedBy) : undefined;
  const forOtherPlan = (a: Approval) => !!a.planUID && !!planUID && a.planUID !== planUID;
  // An override is recorded even when its approval does not count: admission checked the verb.
  const overrideFreezeBy = overrideApproval({ metadata: { uid: planUID }, spec: { approvals } })?.user;
  const common = {
    ...(overrideFreezeBy !== undefined ? { overrideFreezeBy } : {}),
    ...(requester !== undefined ? { requestedByPerson: requester } : {}),
  };
  const entry = (a: Approval, counted: boolean, why?: string) => ({
    user: a.user,
    person: person(a.user),
    counted,
    ...(why ? { why } : {}),
    ...(a.overrideFreeze ? { overrideFreeze: true } : {}),
  });

  if (mode === 'auto') {
    return {
      approved: true,
      required: 0,
      approvers: approvals.map((a) => entry(a, false, 'stage needs no approval (auto)')),
      ...common,
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
      ...common,
    };
  }

  // Person -> the user whose approval counted for them.
  const seen = new Map<string, string>();
  const listed: ApprovalVerdict['approvers'] = [];
  for (const a of approvals) {
    const p = person(a.user);
    if (forOtherPlan(a)) {
      listed.push(entry(a, false, `approved another plan (uid ${a.planUID})`));
      continue;
    }
    // An agent is no second pair of eyes: its approval never counts toward count or four-eyes.
    const agent = agentOf?.(a.user);
    if (agent !== undefined) {
      listed.push(entry(a, false, `agent ${agent}: an agent's approval never counts`));
      continue;
    }
    const counted = seen.get(p);
    if (counted !== undefined) {
      listed.push(
        entry(
          a,
          false,
          counted === a.user ? 'already counted for this user' : `already counted for ${p}: same person as ${counted}`,
        ),
      );
      continue;
    }
    if (policy.forbidSelfApproval && p === requester) {
      listed.push(
        entry(
          a,
          false,
          a.user === requestedBy ? 'creator of the plan' : `creator of the plan: ${p} requested it as ${requestedBy}`,
        ),
      );
      continue;
    }
    if (anyone || users.includes(a.user) || (a.groups ?? []).some((g) => groups.includes(g))) {
      seen.set(p, a.user);
      listed.push(entry(a, true));
    } else {
      listed.push(entry(a, false, 'not a required approver'));
    }
  }
  const missing = required - seen.size;
  if (missing <= 0) return { approved: true, required, approvers: listed, ...common };
  const from = [users.length ? `users ${users.join(', ')}` : '', groups.length ? `groups ${groups.join(', ')}` : '']
    .filter(Boolean)
    .join(' or ');
  return {
    approved: false,
    required,
    approvers: listed,
    waitingFor: `${missing} more approval${missing === 1 ? '' : 's'}${from ? ` from ${from}` : ''}`,
    ...common,
  };
}
