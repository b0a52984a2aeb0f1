import { OVERRIDE_REASON_MAX_LENGTH } from '@kpromo/api';
import { ApproveBody } from '@kpromo/contract';
import { z } from 'zod';
import { who } from '../../api/access.js';
import { approvePlan, checkApproval, getPlan } from '../../api/promotions.js';
import { cardText, planDetail } from '../summary.js';
import { PlanOut } from '../views.js';
import { name, nsArg } from './args.js';
import { DESTRUCTIVE, followed, notice, row } from './row.js';

const approveOptions = (a: { uid?: string; overrideFreeze?: boolean; overrideReason?: string }) => ({
  uid: a.uid,
  overrideFreeze: a.overrideFreeze === true,
  overrideReason: a.overrideReason,
});

export const promote = row({
  name: 'promote',
  title: 'Approve a PromotionPlan (promote)',
  description:
    'Approves a PromotionPlan so the controller promotes its candidates to the target environment (copies images, changes workloads or commits to Git). Destructive. Refused unless the server runs in write mode and Kubernetes RBAC lets the caller approve into the target environment. Asks for confirmation when the client supports elicitation. With a progressToken, waits for the plan and streams per-application progress (copy, write, rollout, verdict); cancelling stops the waiting, not the plan.',
  input: z.object({
    namespace: nsArg,
    plan: name('plan'),
    // Optional in the schema only so that a call without it hears the operation's own refusal.
    uid: z
      .string()
      .max(64)
      .optional()
      .describe(
        'Required: uid of the plan you reviewed (from plan/list/state); if the plan was recreated since, the approval is refused',
      ),
    overrideFreeze: z
      .boolean()
      .optional()
      .describe(
        'Emergency: approve so the plan runs despite a freeze window or a stopped line. Needs the override-freeze RBAC verb and overrideReason',
      ),
    overrideReason: z
      .string()
      .max(OVERRIDE_REASON_MAX_LENGTH)
      .optional()
      .describe(
        "Required with overrideFreeze: the person's reason, at least a sentence (20 characters, 3 words); recorded on the plan, in its history and notifications",
      ),
  }),
  // The plan is named as in the route's path; comments stay with the other doors.
  contract: { schema: ApproveBody, mcpOnly: ['namespace', 'plan'], notOffered: ['comment'] },
  output: z.object({ plan: PlanOut }),
  annotations: DESTRUCTIVE,
  card: true,
  write: true,
  async check({ ctx, caller, ns, args }) {
    const p = await getPlan(ctx, caller, ns, args.plan);
    await checkApproval(ctx, caller, p, approveOptions(args));
    return p;
  },
  confirm: ({ ns, args }, p) =>
    `Promote ${p.spec.candidates.length} application(s) from ${p.spec.from} to ${p.spec.to} (plan ${ns}/${args.plan})${args.overrideFreeze ? `, overriding freeze windows and line stops because: ${args.overrideReason ?? ''}` : ''}?`,
  async run(c) {
    // Bound to the plan the caller reviewed (and confirmed): a plan recreated meanwhile is a 409.
    const approved = await approvePlan(c.ctx, c.caller, c.ns, c.args.plan, approveOptions(c.args));
    await notice(c, { plan: `${c.ns}/${c.args.plan}`, event: 'approved' });
    const f = await followed(c, approved);
    return {
      data: { plan: f.view },
      text: `Approved by ${who(c.caller)}. ${planDetail(f.view)}\n${cardText(f.view, { planDetail: true })}\n${f.text}`,
    };
  },
});
