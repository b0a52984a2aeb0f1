// The permissions the backend enforces on every route, from the shared -common package. The frontend
// only uses them to decide which buttons to show.
export {
  PROMOTIONS_RESOURCE_TYPE,
  promotionAdoptPermission,
  promotionContinuePermission,
  promotionLineStopPermission,
  promotionPlanApprovePermission,
  promotionPlanCreatePermission,
  promotionPlanReadPermission,
  promotionRollbackPermission,
  promotionsPermissions,
} from '@kpromo/plugin-promotions-common';
