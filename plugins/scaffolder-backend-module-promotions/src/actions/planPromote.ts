import { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import type { PromotionsBackendClient } from '../client.js';
import { checkNamespace, initiator, requireConfirmation, reviewedPlanInput } from './shared.js';

/** `kpromo:plan:promote`: the initiator's approval of the plan the template showed. */
export function promotePlanAction(client: PromotionsBackendClient) {
  return createTemplateAction({
    id: 'kpromo:plan:promote',
    description:
      "Adds the task initiator's approval to a kpromo PromotionPlan; the controller promotes it once the target stage's approval policy is met.",
    schema: {
      input: {
        ...reviewedPlanInput('approving this plan'),
        overrideFreeze: (z) =>
          z
            .boolean()
            .optional()
            .describe(
              'Run despite a freeze window or a stopped line (needs the override-freeze verb and overrideReason)',
            ),
        overrideReason: (z) =>
          z
            .string()
            .optional()
            .describe('Required with overrideFreeze: why, at least a sentence (20 characters, 3 words)'),
      },
      output: {
        phase: (z) => z.string(),
        approved: (z) => z.boolean().describe("The target stage's approval policy is met"),
        approvers: (z) => z.array(z.string()).describe('Users who approved the plan, in order'),
        waitingFor: (z) => z.string().optional().describe('Who still must approve'),
      },
    },
    async handler(ctx) {
      checkNamespace(ctx.input.namespace);
      requireConfirmation(
        'kpromo:plan:promote',
        `approves plan ${ctx.input.namespace}/${ctx.input.plan}`,
        ctx.input,
        true,
      );
      const r = await client.approve(
        await initiator(ctx),
        { namespace: ctx.input.namespace, name: ctx.input.plan },
        {
          ...(ctx.input.overrideFreeze ? { overrideFreeze: true } : {}),
          ...(ctx.input.overrideReason ? { overrideReason: ctx.input.overrideReason } : {}),
          ...(ctx.input.comment ? { comment: ctx.input.comment } : {}),
          // requireConfirmation refused a missing uid; the backend's contract would too.
          uid: ctx.input.uid ?? '',
        },
      );
      ctx.logger.info(
        `approved plan ${ctx.input.namespace}/${ctx.input.plan}${r.progress.approved ? '' : ` (still waiting for ${r.progress.waitingFor ?? 'more approvals'})`}`,
      );
      ctx.output('phase', r.progress.phase);
      ctx.output('approved', r.progress.approved);
      ctx.output(
        'approvers',
        r.progress.approvers.map((a) => a.user),
      );
      if (r.progress.waitingFor) ctx.output('waitingFor', r.progress.waitingFor);
    },
  });
}
