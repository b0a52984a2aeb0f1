import { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import { continuedWave } from '@kpromo/plugin-promotions-common';
import type { PromotionsBackendClient } from '../client.js';
import { checkNamespace, initiator, requireConfirmation, reviewedPlanInput } from './shared.js';

/** `kpromo:plan:continue`: lets the next wave of a fleet plan the template showed start, as the initiator. */
export function continuePlanAction(client: PromotionsBackendClient) {
  return createTemplateAction({
    id: 'kpromo:plan:continue',
    description:
      'Lets the next wave of a kpromo fleet PromotionPlan start after a wave with pause, as the task initiator (verb continue).',
    schema: {
      input: {
        ...reviewedPlanInput('letting this wave start'),
        wave: (z) => z.string().optional().describe('The wave to let start (default: the wave that is Waiting)'),
      },
      output: {
        phase: (z) => z.string(),
        wave: (z) => z.string().optional().describe('The wave the continuation lets start'),
        currentWave: (z) => z.string().optional().describe('The first wave not final, as the plan reads now'),
      },
    },
    async handler(ctx) {
      checkNamespace(ctx.input.namespace);
      requireConfirmation(
        'kpromo:plan:continue',
        `lets a wave of plan ${ctx.input.namespace}/${ctx.input.plan} start`,
        ctx.input,
        true,
        'no wave was continued',
      );
      const credentials = await initiator(ctx);
      const r = await client.continuePlan(
        credentials,
        { namespace: ctx.input.namespace, name: ctx.input.plan },
        {
          ...(ctx.input.wave ? { wave: ctx.input.wave } : {}),
          ...(ctx.input.comment ? { comment: ctx.input.comment } : {}),
          // requireConfirmation refused a missing uid; the backend's contract would too.
          uid: ctx.input.uid ?? '',
        },
      );
      // The initiator as the backend names them to the controller (a user's entity ref).
      const user = (credentials.principal as { type: string; userEntityRef?: string }).userEntityRef;
      const wave = continuedWave(r.plan, { wave: ctx.input.wave, user })?.name;
      ctx.logger.info(`wave ${wave ?? '(waiting)'} of plan ${ctx.input.namespace}/${ctx.input.plan} continued`);
      ctx.output('phase', r.progress.phase);
      if (wave) ctx.output('wave', wave);
      if (r.progress.currentWave) ctx.output('currentWave', r.progress.currentWave);
    },
  });
}
