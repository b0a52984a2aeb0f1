export * from './api/context.js';
export * from './api/promotions.js';
export * from './candidates/computeCandidates.js';
export * from './candidates/runningVersion.js';
export * from './config.js';
export * from './controller.js';
export type { DeliveryContext, DeliveryMethod, DeliveryResult } from './delivery/deliveryMethod.js';
export type { CommitImageChangeRequest } from './delivery/gitCommit.js';
export * from './kube/cacheView.js';
export * from './kube/clusters.js';
export * from './kube/liveCache.js';
export type { ResourceType } from './kube/paths.js';
export * from './kube/rest.js';
export * from './leader/leaderElection.js';
export type { ReleaseEvent } from './notify/notifier.js';
export type { NotificationProvider } from './notify/provider.js';
export * from './queue/workQueue.js';
export * from './reconcile/plan/index.js';
export * from './reconcile/planDecisions.js';
export * from './reconcile/plugins.js';
export * from './reconcile/tagTemplate.js';
export * from './rollout/rolloutVerdict.js';
export {
  defineWorkloadKind,
  type KubeObject,
  type WorkloadKind,
  type WorkloadReadiness,
} from './rollout/workloadKind.js';
export * from './runtime.js';
