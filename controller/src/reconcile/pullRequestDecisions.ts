import type {
  Approval,
  Environment,
  PlanGate,
  PromotionFlow,
  PromotionPlan,
  PullRequestRecord,
  PullRequestReview,
} from '@kpromo/api';
import type { CommitStatus, Review } from '@kpromo/forge';
import type { ApprovalVerdict } from '../policy/approvalPolicy.js';

/** The Environment's pull-request delivery (git delivery with delivery.git.pullRequest), or undefined. */
export function pullRequestDelivery(env: Environment | undefined) {
  return env?.spec.delivery?.method === 'git' ? env.spec.delivery.git?.pullRequest : undefined;
}

export type ApprovalSource = 'kpromo' | 'pullRequest' | 'both';

/** Where the target stage's approvals happen: the stage's approvalSource when its Environment delivers through pull requests, else kpromo. */
export function approvalSourceOf(
  flow: PromotionFlow | undefined,
  to: string,
  env: Environment | undefined,
): ApprovalSource {
  if (!pullRequestDelivery(env)) return 'kpromo';
  return flow?.spec.stages.find((s) => s.environment === to)?.approvalSource ?? 'kpromo';
}

/** The branch a plan's promotion commit goes to: one per plan, so a new leader finds it again. */
export const pullRequestBranch = (plan: PromotionPlan) => `kpromo/${plan.metadata.name}`;

/** How a forge login is named as a Kubernetes user (and so judged by RBAC and the persons mapping). */
export function forgeUser(pr: { forge: string; identityPrefix?: string }, login: string): string {
  return `${pr.identityPrefix ?? `${pr.forge}:`}${login}`;
}

/**
 * Pure: each reviewer's standing review (their latest approval, change request or dismissal; a
 * comment after an approval does not take it back, as on the forges), and the merge when there is
 * one, judged before RBAC: offered to the approval policy only when it approves kpromo's own commit
 * (`commit`), which is still the head, and is not kpromo's own. RBAC (the approve verb) is checked
 * by the caller for the entries offered.
 */
export function judgeReviews(
  reviews: readonly Review[],
  o: {
    /** kpromo's promotion commit. */
    commit: string;
    /** Why the pull request is no longer kpromo's proposal (its head or base changed): then nothing is offered. */
    changed?: string;
    /** The pull request's head now (the commit a merge took). */
    head: string;
    /** kpromo's own login on the forge. */
    self: string;
    user: (login: string) => string;
    merged?: { by: string; commit: string };
  },
): PullRequestReview[] {
  const standing = new Map<string, Review>();
  for (const r of reviews)
    if (r.state === 'APPROVED' || r.state === 'CHANGES_REQUESTED' || r.state === 'DISMISSED') standing.set(r.user, r);
  const changed = o.changed ?? pullRequestChanged({ commit: o.commit, head: o.head });
  const out: PullRequestReview[] = [...standing.values()].map((r) => {
    const why =
      r.user === o.self
        ? "kpromo's own review"
        : r.state !== 'APPROVED'
          ? `review state ${r.state}`
          : r.stale
            ? 'the forge marked it stale or dismissed'
            : r.commit !== o.commit
              ? `given on ${r.commit.slice(0, 12)}, not on kpromo's promotion commit ${o.commit.slice(0, 12)}: a review counts only on the commit it saw`
              : changed;
    return {
      login: r.user,
      user: o.user(r.user),
      state: r.state,
      commit: r.commit,
      eligible: !why,
      ...(why ? { why } : {}),
    };
  });
  if (o.merged) {
    const why = o.merged.by === o.self ? "kpromo's own merge" : changed;
    out.push({
      login: o.merged.by,
      user: o.user(o.merged.by),
      state: 'MERGED',
      commit: o.head,
      merger: true,
      eligible: !why,
      ...(why ? { why } : {}),
    });
  }
  return out;
}

/**
 * Pure: why a pull request is no longer exactly kpromo's proposal: its head is not kpromo's
 * promotion commit (someone pushed to the branch), or it was retargeted to another base.
 */
export function pullRequestChanged(o: { commit: string; head: string; base?: string; wantBase?: string }) {
  if (o.head !== o.commit)
    return `its head ${o.head.slice(0, 12)} is not kpromo's promotion commit ${o.commit.slice(0, 12)}: someone pushed to its branch`;
  if (o.base !== undefined && o.base !== o.wantBase)
    return `it was retargeted to ${o.base}, not the environment branch ${o.wantBase}`;
  return undefined;
}

/** The approvals a plan's pull request offers to the stage's approval policy (each person once, judged there). */
export function pullRequestApprovals(record: PullRequestRecord | undefined): Approval[] {
  const seen = new Set<string>();
  const out: Approval[] = [];
  for (const r of record?.reviews ?? []) {
    if (!r.eligible || seen.has(r.user)) continue;
    seen.add(r.user);
    out.push({ user: r.user, comment: r.merger ? 'merged the pull request' : 'approved the pull request' });
  }
  return out;
}

/**
 * Pure: the stage's approval verdict from where its approvals happen: kpromo's, the pull request's,
 * or both (each judged by the same policy; both must hold, and every approver of either is listed).
 */
export function combineApprovals(
  source: ApprovalSource,
  inKpromo: ApprovalVerdict,
  onPr: ApprovalVerdict | undefined,
): ApprovalVerdict {
  if (source === 'kpromo' || !onPr) return inKpromo;
  // An emergency override is kpromo's verb (with its reason), whoever approves.
  const override = inKpromo.overrideFreezeBy !== undefined ? { overrideFreezeBy: inKpromo.overrideFreezeBy } : {};
  const pr = {
    ...onPr,
    ...override,
    ...(onPr.waitingFor ? { waitingFor: `${onPr.waitingFor} on the pull request` } : {}),
  };
  if (source === 'pullRequest') return pr;
  const waiting = [inKpromo.waitingFor && `${inKpromo.waitingFor} in kpromo`, pr.waitingFor].filter(Boolean);
  return {
    ...inKpromo,
    approved: inKpromo.approved && onPr.approved,
    required: inKpromo.required + onPr.required,
    approvers: [...inKpromo.approvers, ...onPr.approvers],
    ...(waiting.length ? { waitingFor: waiting.join('; and ') } : { waitingFor: undefined }),
  };
}

/** Who merges: kpromo, once the gate is open, unless the stage's approvals are the forge's (pullRequest) on a manual stage. */
export const kpromoMerges = (source: ApprovalSource, gate: Pick<PlanGate, 'required'>) =>
  source !== 'pullRequest' || gate.required === 0;

const MAX = 140;
const cut = (s: string) => (s.length > MAX ? `${s.slice(0, MAX - 1)}…` : s);

/**
 * Pure: the commit statuses kpromo reports on its promotion commit, for branch protection to
 * require: the approval policy, the gates (freeze, line stop, org policy, soak), the signatures,
 * and the source stage's verification of what it brings.
 */
export function pullRequestStatuses(
  gate: PlanGate | undefined,
  /** The gate's hold (planGate.ts Hold), if any. */
  hold: { reason: string; message: string } | undefined,
  signatures: ReadonlyArray<{ application: string; verdict?: string; mode?: string }>,
  targetUrl?: string,
  /**
   * Each application's verification in the source stage (the latest that judged the digest it
   * brings): its verdict, or undefined when none judged it. Absent for a rollback (a known-good version).
   */
  verifications?: ReadonlyArray<{ application: string; verdict?: string }>,
): CommitStatus[] {
  const url = targetUrl ? { targetUrl } : {};
  const gateHold = hold && hold.reason !== 'AwaitingApproval' ? hold : undefined;
  // An Audit policy records its verdict without refusing: only Enforce fails the status.
  const failed = signatures.filter((s) => s.verdict && s.verdict !== 'Verified' && s.mode !== 'Audit');
  return [
    {
      context: 'kpromo/approval',
      state: gate?.approved ? 'success' : 'pending',
      description: cut(gate?.approved ? 'approved' : `waiting for ${gate?.waitingFor ?? 'approval'}`),
      ...url,
    },
    {
      context: 'kpromo/gates',
      state: gateHold ? 'pending' : 'success',
      description: cut(gateHold ? `${gateHold.reason}: ${gateHold.message}` : 'no freeze, line stop or soak holds it'),
      ...url,
    },
    {
      context: 'kpromo/signatures',
      state: failed.length ? 'failure' : 'success',
      description: cut(
        failed.length
          ? `not verified: ${failed.map((s) => `${s.application} ${s.verdict}`).join(', ')}`
          : signatures.length
            ? `${signatures.length} image(s) checked against the stage's signature policy`
            : 'no signature policy applies',
      ),
      ...url,
    },
    verificationStatus(verifications, url),
  ];
}

/** kpromo/verification: the source stage's verification of what the pull request brings. */
function verificationStatus(
  v: ReadonlyArray<{ application: string; verdict?: string }> | undefined,
  url: { targetUrl?: string },
): CommitStatus {
  const context = 'kpromo/verification';
  if (!v) return { context, state: 'success', description: 'a rollback restores versions that ran before', ...url };
  const failed = v.filter((x) => x.verdict && x.verdict !== 'Passed');
  const unjudged = v.filter((x) => !x.verdict);
  return {
    context,
    state: failed.length ? 'failure' : 'success',
    description: cut(
      failed.length
        ? `failed in the source stage: ${failed.map((x) => `${x.application} ${x.verdict}`).join(', ')}`
        : unjudged.length === v.length
          ? 'the source stage verified none of these versions (it has no checks)'
          : `passed in the source stage${unjudged.length ? `; not verified there: ${unjudged.map((x) => x.application).join(', ')}` : ''}`,
    ),
    ...url,
  };
}
