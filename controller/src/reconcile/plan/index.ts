export type { Endpoint, PlanEvent, PromotionDeps, ReconcileOutcome } from './deps.js';
export { groupCommit } from './groupCommit.js';
export { reconcilePlan } from './reconcilePlan.js';
