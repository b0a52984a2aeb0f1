import type { Application, Environment, PromotionFlow } from '@kpromo/api';
import { fleetTargets } from '@kpromo/api';
import { workloadsFor } from '../candidates/runningVersion.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import type { CheckResult, DoctorCheck } from './check.js';

const CHECK = 'delivery';

/**
 * Each Environment's delivery can work, as its delivery method's `diagnose` checks it (the
 * built-ins: the Flux HelmRelease or ImagePolicy of every Application exists and is Ready where
 * the Environment says; a GitOps repository answers for its branch with the credentials its Secret
 * holds, read as you and never printed, and has its Kustomization). A method without `diagnose`
 * (patch) needs nothing more than the controller check.
 */
export const deliveryCheck: DoctorCheck = {
  id: CHECK,
  title: 'Delivery: Flux objects and GitOps repositories',
  async run(ctx) {
    const [envs, apps, flows] = await Promise.all([
      ctx.control.get<{ items: Environment[] }>(resourcePath(KPROMO_TYPES.Environment, ctx.namespace)),
      ctx.control.get<{ items: Application[] }>(resourcePath(KPROMO_TYPES.Application, ctx.namespace)),
      ctx.control.get<{ items: PromotionFlow[] }>(resourcePath(KPROMO_TYPES.PromotionFlow, ctx.namespace)),
    ]);
    const out: CheckResult[] = [];
    // A fleet is checked cluster by cluster (each may deliver its own way).
    for (const env of envs.items.flatMap((e) => fleetTargets(e).map((t) => t.env))) {
      const method = ctx.deliveryMethods.get(env.spec.delivery.method);
      if (!method?.diagnose) continue;
      const context = env.spec.cluster?.context;
      const found = await method.diagnose({
        env,
        apps: apps.items.filter((a) => workloadsFor(a, env.metadata.name).length > 0),
        stages: flows.items.flatMap((f) =>
          f.spec.stages
            .filter((s) => s.environment === env.metadata.name)
            .map((stage) => ({ flow: f.metadata.name, stage })),
        ),
        control: ctx.control,
        client: () => (context ? ctx.clientFor(context) : undefined),
      });
      for (const d of found)
        out.push({
          check: CHECK,
          status: d.status,
          subject: d.subject,
          message: d.message,
          ...(d.fix !== undefined ? { fix: d.fix } : {}),
        });
    }
    return out;
  },
};
