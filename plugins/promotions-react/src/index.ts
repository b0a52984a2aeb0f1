export { type PromotionsApi, PromotionsClient, promotionsApiRef } from './api';
export { EmptyState, ErrorState, LoadingState } from './components/StateMessages';
export { HealthBadge, PhaseBadge, VersionCell } from './components/StatusBadges';
export { planHold, planStarted, useCurrentUser, useNow } from './gate';
export { type AsyncState, usePromotionsData } from './hooks';
export { computeDrift, type MatrixRow, orderEnvironments, releaseMatrix } from './matrix';
export * from './permissions';
export * from './types';
export { usePromotionPermission } from './usePromotionPermission';
