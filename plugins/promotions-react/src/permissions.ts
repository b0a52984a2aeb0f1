import { createPermission } from '@backstage/plugin-permission-common';

// Same names and attributes as @kpromo/plugin-promotions-common (the backend enforces them on every
// route); the frontend only uses them to decide which buttons to show.
export const promotionPlanReadPermission = createPermission({
  name: 'promotion.plan.read',
  attributes: { action: 'read' },
});
export const promotionPlanCreatePermission = createPermission({
  name: 'promotion.plan.create',
  attributes: { action: 'create' },
});
export const promotionPlanApprovePermission = createPermission({
  name: 'promotion.plan.approve',
  attributes: { action: 'update' },
});
export const promotionRollbackPermission = createPermission({
  name: 'promotion.rollback',
  attributes: { action: 'create' },
});
