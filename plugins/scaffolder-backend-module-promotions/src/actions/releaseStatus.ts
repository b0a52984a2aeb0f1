import { InputError, NotFoundError } from '@backstage/errors';
import { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import type { ApplicationInfo, PlanDetails } from '@kpromo/plugin-promotions-common';
import type { PromotionsBackendClient } from '../client.js';
import { checkNamespace, initiator } from './shared.js';

/**
 * `kpromo:release:status`: a plan's progress (waiting up to `waitSeconds` for it to finish) or an
 * application's versions. `defaultNamespace` is a plan's namespace when the step names none.
 */
export function releaseStatusAction(client: PromotionsBackendClient, defaultNamespace?: string) {
  return createTemplateAction({
    id: 'kpromo:release:status',
    description: "A plan's progress (optionally waiting until it finishes), or an application's versions.",
    schema: {
      input: {
        namespace: (z) => z.string().optional(),
        plan: (z) => z.string().optional(),
        application: (z) => z.string().optional(),
        waitSeconds: (z) =>
          z.number().int().min(0).max(3600).optional().describe('Wait up to this long for the plan to finish'),
      },
      output: { phase: (z) => z.string().optional(), status: (z) => z.any() },
    },
    async handler(ctx) {
      const { plan, application } = ctx.input;
      if (!!plan === !!application) throw new InputError('pass exactly one of plan or application');
      checkNamespace(ctx.input.namespace);
      const credentials = await initiator(ctx);
      const namespace = ctx.input.namespace ?? defaultNamespace;
      const status = async (): Promise<{ plan?: PlanDetails['progress']; application?: ApplicationInfo }> => {
        if (plan) {
          if (!namespace) throw new InputError('namespace is required');
          return { plan: (await client.getPlan(credentials, { namespace, name: plan }, ctx.signal)).progress };
        }
        const apps = await client.applications(credentials, namespace, ctx.signal);
        const a = apps.items.find((x) => x.name === application);
        if (!a) throw new NotFoundError(`Application ${namespace ?? ''}/${application} not found`);
        return { application: a };
      };
      const deadline = Date.now() + (ctx.input.waitSeconds ?? 0) * 1000;
      for (;;) {
        const r = await status();
        if (!r.plan || r.plan.done || Date.now() >= deadline || ctx.signal?.aborted) {
          ctx.output('phase', r.plan?.phase);
          ctx.output('status', JSON.parse(JSON.stringify(r)));
          return;
        }
        await new Promise((res) => setTimeout(res, 2000));
      }
    },
  });
}
