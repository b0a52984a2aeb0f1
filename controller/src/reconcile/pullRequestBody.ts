import type { AppProgress, PlanGate, PromotionPlan, VerificationProgress } from '@kpromo/api';
import { isRollback } from '@kpromo/api';
import type { ApprovalSource } from './pullRequestDecisions.js';

/** What the body says of one application. */
export interface BodyApp {
  application: string;
  tag?: string;
  digest?: string;
  /** The stage's signature verdict of the digest ("Verified", "Unsigned", …) and its message. */
  signature?: { verdict: string; message?: string };
  /** The verification that passed for this digest in the source stage (the plan that promoted it there). */
  sourceVerification?: VerificationProgress;
}

/** GitHub refuses bodies over 65,536 characters; Gitea stores more, but nobody reads that much. */
const MAX_BODY = 60_000;

/** Cell text: no table-breaking pipes or newlines, nothing that renders as markup from untrusted values. */
const cell = (s: string) => s.replace(/[|\r\n]+/g, ' ').replace(/[<>`*_[\]]/g, (c) => `\\${c}`);

const SOURCE_TEXT: Record<ApprovalSource, string> = {
  kpromo:
    'Approvals happen in kpromo; kpromo merges this pull request once the stage gate is open, so the pull request is the record.',
  pullRequest:
    "Reviews on this pull request are the approvals: an approving review of kpromo's promotion commit by someone Kubernetes RBAC lets approve into the stage, and the merge, count; the requester's own review or merge never counts, and a commit pushed after a review invalidates it. Merge once the `kpromo/approval` status is green.",
  both: "Both must hold: the approvals in kpromo and the reviews here (on kpromo's promotion commit). kpromo merges once both do.",
};

/**
 * Pure: the pull request's body: everything an approver needs without leaving the forge: each
 * application with its version, digest and signature verdict, the source stage's verification
 * values, the approvals the stage requires and who gave them, and the plan. Values from CRs and the
 * forge are untrusted text: escaped so they cannot render as links or markup.
 */
export function pullRequestBody(o: {
  plan: PromotionPlan;
  apps: readonly BodyApp[];
  gate?: PlanGate;
  source: ApprovalSource;
  planURL?: string;
  /** A rollback: the failure that caused it (the original plan's automatic rollback record). */
  cause?: { application: string; check: string; message: string };
}): string {
  const { plan } = o;
  const ref = `${plan.metadata.namespace}/${plan.metadata.name}`;
  const rollback = isRollback(plan);
  const lines: string[] = [
    `### ${rollback ? 'Rollback' : 'Promotion'} into \`${cell(plan.spec.to)}\` by kpromo`,
    '',
    `PromotionPlan ${o.planURL ? `[${cell(ref)}](${o.planURL})` : `\`${cell(ref)}\``}, flow \`${cell(plan.spec.flow)}\`${
      rollback
        ? `, rolling back \`${cell(plan.spec.rollbackOf ?? '')}\``
        : ` (${cell(plan.spec.from)} → ${cell(plan.spec.to)})`
    }; requested by \`${cell(plan.spec.requestedBy ?? '(nobody recorded)')}\`${
      plan.spec.requestedByAgent ? ` through agent \`${cell(plan.spec.requestedByAgent)}\`` : ''
    }.`,
    '',
  ];
  if (o.cause)
    lines.push(
      `**Why:** verification check \`${cell(o.cause.check)}\` of ${cell(o.cause.application)} failed: ${cell(o.cause.message)}`,
      '',
    );
  lines.push('| Application | Version | Digest | Signature | Verified in the source stage |', '|---|---|---|---|---|');
  for (const a of o.apps)
    lines.push(
      `| ${cell(a.application)} | ${cell(a.tag ?? '')} | \`${cell(a.digest ?? '')}\` | ${cell(
        a.signature ? `${a.signature.verdict}${a.signature.message ? `: ${a.signature.message}` : ''}` : 'no policy',
      )} | ${cell(verificationText(a.sourceVerification))} |`,
    );
  lines.push('', '#### Approval', '', SOURCE_TEXT[o.source], '');
  const g = o.gate;
  if (g) {
    lines.push(
      `Required: ${g.required} approval(s); ${g.approved ? 'the policy is satisfied' : `waiting for ${cell(g.waitingFor ?? 'approval')}`}.`,
    );
    for (const a of g.approvers ?? [])
      lines.push(
        `- \`${cell(a.user)}\`${a.person && a.person !== a.user ? ` (${cell(a.person)})` : ''}: ${a.counted ? 'counts' : `does not count: ${cell(a.why ?? '')}`}`,
      );
  }
  lines.push(
    '',
    '<sub>Written by kpromo from the plan and its stage; the commit statuses `kpromo/approval`, `kpromo/gates`, `kpromo/signatures` and `kpromo/verification` report the gates for branch protection.</sub>',
  );
  const body = lines.join('\n');
  return body.length > MAX_BODY ? `${body.slice(0, MAX_BODY)}\n\n(cut: the plan has more applications than fit)` : body;
}

function verificationText(v: VerificationProgress | undefined): string {
  if (!v) return 'no verification recorded';
  const checks = v.checks.map((c) => {
    const last = c.samples?.at(-1);
    const value = last?.value !== undefined ? ` ${last.value}` : '';
    return `${c.name}${c.condition ? ` (${c.condition})` : ''}:${value} ${c.verdict}`;
  });
  return `${v.verdict}${checks.length ? `: ${checks.join('; ')}` : ''}`;
}

/** The body rows of a plan's apps: version and digest as they will be written, signatures as judged. */
export function bodyApps(
  plan: PromotionPlan,
  apps: readonly AppProgress[],
  sourceVerification: (application: string, digest: string | undefined) => VerificationProgress | undefined,
): BodyApp[] {
  return apps.map((ap) => {
    const sig = ap.signature ?? plan.status?.candidateSignatures?.find((s) => s.application === ap.application);
    return {
      application: ap.application,
      ...(ap.targetTag ? { tag: ap.targetTag } : {}),
      ...(ap.digest ? { digest: ap.digest } : {}),
      ...(sig ? { signature: { verdict: sig.verdict, message: sig.message } } : {}),
      ...(isRollback(plan) ? {} : { sourceVerification: sourceVerification(ap.application, ap.digest) }),
    };
  });
}
