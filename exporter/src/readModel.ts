// What the exporter's mappings see of a PromotionPlan beyond the object itself: the plan's read
// model (planProgress of @kpromo/contract) as `.progress`, so the default mappings render what every
// other door shows rather than projecting status again in jq.
import { GROUP, type PromotionPlan, VERSION } from '@kpromo/api';
import { planProgress } from '@kpromo/contract';

const PLAN_KIND = `${GROUP}/${VERSION}/promotionplans`;

/** The objects of `kind` as the mappings see them: PromotionPlans with `.progress` added. */
export function withReadModel(kind: string, objects: unknown[]): unknown[] {
  if (kind !== PLAN_KIND) return objects;
  return objects.map((o) => {
    const plan = o as PromotionPlan;
    // A malformed object (no spec) keeps its own shape: the mapping reports it as before.
    if (!plan?.spec?.candidates || !plan.metadata) return o;
    return { ...plan, progress: planProgress(plan) };
  });
}
