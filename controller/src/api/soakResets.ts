import type { PromotionPlan, PromotionPlanStatus } from '@kpromo/api';
import type { Caller } from '../auth/identity.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { type SoakAlert, soakResetDecision, withSoakReset } from '../policy/soak.js';
import { soakSources } from '../reconcile/planGate.js';
import { ObjectGoneError, StatusConflictError, StatusWriter } from '../reconcile/statusWriter.js';
import { who } from './access.js';
import type { ApiContext } from './context.js';

/** Attempts to record one restart when the controller's own writes keep changing the plan's status. */
const ATTEMPTS = 3;

/**
 * Restarts the soaks a firing alert for `environment` of `namespace` matches (the caller is an
 * alert source there: checked before). Each plan waiting on a soak there is decided on
 * ({@link soakResetDecision}) from the cache, then again from the plan as stored right before the
 * write, so a repeat or a plan that started meanwhile changes nothing. The restart goes into the
 * plan's status (conflict-safe: another writer's status is never overwritten), where the gate reads
 * it. Returns the plans whose soak restarted, `<namespace>/<name>`.
 */
export async function restartSoaks(
  ctx: ApiContext,
  caller: Caller,
  namespace: string,
  environment: string,
  alert: SoakAlert,
  now = new Date(),
): Promise<string[]> {
  const restarted: string[] = [];
  const decide = (plan: PromotionPlan) => {
    const flow = ctx.cache.getFlow(namespace, plan.spec.flow);
    return soakResetDecision({
      plan,
      stage: flow?.spec.stages.find((s) => s.environment === plan.spec.to),
      alert,
      environment,
      source: soakSources(plan, ctx.cache),
      by: who(caller),
      now,
    });
  };
  for (const cached of ctx.cache.plans(namespace)) {
    if (decide(cached).op !== 'reset') continue;
    const path = resourcePath(KPROMO_TYPES.PromotionPlan, namespace, cached.metadata.name);
    for (let attempt = 1; ; attempt++) {
      const plan = await ctx.control.getOrUndefined<PromotionPlan>(path);
      const d = plan && plan.metadata.uid === cached.metadata.uid ? decide(plan) : undefined;
      if (!plan || d?.op !== 'reset') break;
      const status: PromotionPlanStatus = {
        ...plan.status,
        soakResets: withSoakReset(plan.status?.soakResets, d.reset),
      };
      try {
        await new StatusWriter<PromotionPlanStatus, PromotionPlan>(ctx.control, plan).write(status);
        restarted.push(`${namespace}/${plan.metadata.name}`);
        break;
      } catch (e) {
        if (e instanceof ObjectGoneError) break;
        if (!(e instanceof StatusConflictError) || attempt >= ATTEMPTS) throw e;
      }
    }
  }
  return restarted;
}
