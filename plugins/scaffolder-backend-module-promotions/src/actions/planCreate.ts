import { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import type { PromotionsBackendClient } from '../client.js';
import { checkNamespace, initiator, requireConfirmation } from './shared.js';

/** `kpromo:plan:create`: a plan from filters; approved right away only with the initiator's confirmation and the digests they saw. */
export function createPlanAction(client: PromotionsBackendClient) {
  return createTemplateAction({
    id: 'kpromo:plan:create',
    description: 'Creates a kpromo PromotionPlan from filters (optionally approved right away).',
    schema: {
      input: {
        namespace: (z) => z.string().optional().describe('Namespace of the kpromo CRs'),
        from: (z) => z.string().describe('Source environment'),
        to: (z) => z.string().describe('Target environment'),
        flow: (z) => z.string().optional(),
        applications: (z) => z.array(z.string()).optional(),
        teams: (z) => z.array(z.string()).optional(),
        name: (z) => z.string().optional(),
        approve: (z) =>
          z.boolean().optional().describe('Approve right away as the initiator (needs confirm: true and expect)'),
        expect: (z) =>
          z
            .record(z.string())
            .optional()
            .describe(
              'Required with approve: per application, the digest the template showed (candidates[].from.digest of the diff); refused (409) unless the candidates are exactly these',
            ),
        confirm: (z) =>
          z
            .boolean()
            .optional()
            .describe('Required to be true with approve: the initiator confirmed approving the plan'),
      },
      output: {
        namespace: (z) => z.string(),
        plan: (z) => z.string(),
        uid: (z) => z.string().describe('metadata.uid of the plan (what a promote step confirms)'),
        applications: (z) => z.array(z.string()),
      },
    },
    async handler(ctx) {
      checkNamespace(ctx.input.namespace);
      if (ctx.input.approve) requireConfirmation('kpromo:plan:create', 'creates an approved plan', ctx.input, false);
      const { confirm: _confirm, ...body } = ctx.input;
      const r = await client.createPlan(await initiator(ctx), body);
      ctx.logger.info(`created plan ${r.plan.metadata.namespace}/${r.plan.metadata.name}`);
      ctx.output('namespace', r.plan.metadata.namespace ?? '');
      ctx.output('plan', r.plan.metadata.name);
      ctx.output('uid', r.plan.metadata.uid ?? '');
      ctx.output(
        'applications',
        r.plan.spec.candidates.map((c) => c.application),
      );
    },
  });
}
