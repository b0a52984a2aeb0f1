import { createPermission } from '@backstage/plugin-permission-common';

/** Catalog entities are the resources app-scoped promotion permissions are checked against. */
export const PROMOTIONS_RESOURCE_TYPE = 'catalog-entity';

/** Read environments, applications, diffs and plans. */
export const promotionPlanReadPermission = createPermission({
  name: 'promotion.plan.read',
  attributes: { action: 'read' },
});

/** Create an (unapproved) PromotionPlan from filters. Nothing is promoted until it is approved. */
export const promotionPlanCreatePermission = createPermission({
  name: 'promotion.plan.create',
  attributes: { action: 'create' },
});

/**
 * Approve (promote) a plan. Checked once per candidate application, against the catalog entity
 * of that application, so a conditional policy can allow it only for the entity's owners.
 */
export const promotionPlanApprovePermission = createPermission({
  name: 'promotion.plan.approve',
  attributes: { action: 'update' },
  resourceType: PROMOTIONS_RESOURCE_TYPE,
});

/**
 * Let the next wave of a fleet plan start after a pause (a continuation). Checked per application
 * the plan promotes (restores, for a rollback plan), against its catalog entity, like approve. The
 * controller also requires the RBAC verb continue for the target environment.
 */
export const promotionContinuePermission = createPermission({
  name: 'promotion.continue',
  attributes: { action: 'update' },
  resourceType: PROMOTIONS_RESOURCE_TYPE,
});

/** Roll back a plan; checked per application the plan changed, like approve. */
export const promotionRollbackPermission = createPermission({
  name: 'promotion.rollback',
  attributes: { action: 'update' },
  resourceType: PROMOTIONS_RESOURCE_TYPE,
});

/**
 * Stop the line (LineStop) or lift a stop, in the portal and from Port. The controller also checks
 * the user's RBAC (create or delete on linestops) and records them as the one who stopped it.
 */
export const promotionLineStopPermission = createPermission({
  name: 'promotion.line.stop',
  attributes: { action: 'update' },
});

/**
 * Propose Applications for what runs in a flow's Environments (the onboarding template, Port's
 * adopt action). Nothing is written; the controller also requires RBAC create on applications.
 */
export const promotionAdoptPermission = createPermission({
  name: 'promotion.adopt',
  attributes: { action: 'create' },
});

export const promotionsPermissions = [
  promotionAdoptPermission,
  promotionPlanReadPermission,
  promotionPlanCreatePermission,
  promotionPlanApprovePermission,
  promotionContinuePermission,
  promotionRollbackPermission,
  promotionLineStopPermission,
];
