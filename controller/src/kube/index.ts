// `@kpromo/controller/kube`: the controller's Kubernetes REST client and the resource paths it
// knows, for tools outside the controller that drive the same clusters (the test harness).
export type { HelmRelease, Workload } from './cacheView.js';
export {
  DEPLOYMENT,
  HELMRELEASE,
  KPROMO_TYPES,
  type ResourceType,
  ROLLOUT,
  resourcePath,
  STATEFULSET,
} from './paths.js';
export { isNotFound, KubeError, KubeRest } from './rest.js';
