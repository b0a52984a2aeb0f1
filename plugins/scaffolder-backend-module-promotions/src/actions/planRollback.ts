import { ConflictError } from '@backstage/errors';
import { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import type { PromotionsBackendClient } from '../client.js';
import { checkNamespace, initiator, requireConfirmation } from './shared.js';

/** `kpromo:plan:rollback`: a rollback of the plan the template showed, approved unless the step says otherwise. */
export function rollbackPlanAction(client: PromotionsBackendClient) {
  return createTemplateAction({
    id: 'kpromo:plan:rollback',
    description: 'Creates (and by default approves) a rollback of a kpromo PromotionPlan.',
    schema: {
      input: {
        namespace: (z) => z.string(),
        plan: (z) => z.string(),
        name: (z) => z.string().optional(),
        approve: (z) =>
          z
            .boolean()
            .optional()
            .describe('Approve the rollback as the initiator (the default; needs confirm: true and uid)'),
        confirm: (z) =>
          z.boolean().optional().describe('Must be true unless approve is false: the initiator confirmed'),
        uid: (z) =>
          z
            .string()
            .optional()
            .describe('metadata.uid of the plan to roll back, as the template showed it (unless approve is false)'),
      },
      output: { plan: (z) => z.string().describe('Name of the rollback plan (generated unless name is given)') },
    },
    async handler(ctx) {
      checkNamespace(ctx.input.namespace);
      // The promotions backend approves a rollback unless told otherwise: confirm that approval.
      if (ctx.input.approve !== false) {
        requireConfirmation(
          'kpromo:plan:rollback',
          `approves a rollback of plan ${ctx.input.namespace}/${ctx.input.plan}`,
          ctx.input,
          true,
        );
        const shown = await client.getPlan(
          await initiator(ctx),
          { namespace: ctx.input.namespace, name: ctx.input.plan },
          ctx.signal,
        );
        if (shown.plan.metadata.uid !== ctx.input.uid)
          throw new ConflictError(
            `plan ${ctx.input.namespace}/${ctx.input.plan} is not the plan the template showed (uid ${ctx.input.uid}, now ${shown.plan.metadata.uid ?? 'none'}): it was recreated since; nothing was rolled back`,
          );
      }
      const r = await client.rollback(
        await initiator(ctx),
        { namespace: ctx.input.namespace, name: ctx.input.plan },
        {
          ...(ctx.input.name ? { name: ctx.input.name } : {}),
          ...(ctx.input.approve !== undefined ? { approve: ctx.input.approve } : {}),
          // The plan the template showed: the controller refuses (409) one recreated after the check above.
          ...(ctx.input.uid ? { uid: ctx.input.uid } : {}),
        },
      );
      ctx.logger.info(`created rollback ${r.plan.metadata.name} of ${ctx.input.namespace}/${ctx.input.plan}`);
      ctx.output('plan', r.plan.metadata.name);
    },
  });
}
