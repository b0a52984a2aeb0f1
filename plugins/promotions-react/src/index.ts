export {
  type AdoptionRequest,
  type ApplicationsFilter,
  type DoraFilter,
  errorStatus,
  type HistoryFilter,
  isNotFound,
  offsetPage,
  type PlansFilter,
  type PromotionsApi,
  PromotionsClient,
  promotionsApiRef,
} from './api';
export { DoraBarChart, DoraSummary } from './components/DoraCharts';
export { ReleaseTimeline } from './components/ReleaseTimeline';
export { EmptyState, ErrorState, errorHint, LiveAnnouncer, LoadingState } from './components/StateMessages';
export {
  DigestText,
  HealthBadge,
  PhaseBadge,
  type PhaseName,
  phaseTone,
  StatusMark,
  StatusPill,
  type Tone,
  VersionCell,
} from './components/StatusBadges';
export * from './fleet';
export * from './format';
export { planHold, planStarted, useCurrentUser, useNow, usePageTitle } from './gate';
export {
  type AsyncState,
  type PollOptions,
  useContinuePages,
  useDebounced,
  usePromotionsData,
  useUrlParams,
} from './hooks';
export * from './insights';
export {
  computeDrift,
  type DeliveredDrift,
  deliveredDriftText,
  type MatrixRow,
  orderEnvironments,
  releaseMatrix,
} from './matrix';
export * from './permissions';
export {
  buildPipelines,
  candidatePairs,
  flowTransitions,
  loadPipelines,
  type Pipeline,
  type PipelineData,
  type StagePair,
  type Transition,
  versionIn,
} from './pipeline';
export * from './sourceLinks';
export * from './types';
export { usePromotionPermission } from './usePromotionPermission';
