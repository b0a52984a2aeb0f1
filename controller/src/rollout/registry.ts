import { type Registry, registryOf } from '../extension/registry.js';
import type { WatchedWorkloadKind } from './builtinKind.js';
import { cronJobKind } from './kinds/cronJob.js';
import { daemonSetKind } from './kinds/daemonSet.js';
import { deploymentKind } from './kinds/deployment.js';
import { jobKind } from './kinds/job.js';
import { rolloutKind } from './kinds/rollout.js';
import { statefulSetKind } from './kinds/statefulSet.js';

/**
 * The built-in kinds: the Application CRD's `spec.workloads[].kind` enum lists exactly these, the
 * informers watch exactly these (Rollouts only where their CRD is served), and
 * `delivery.method: patch` writes exactly these. Adding a kind: one module in kinds/ and this list.
 */
export const BUILTIN_WORKLOAD_KINDS: readonly WatchedWorkloadKind[] = [
  deploymentKind,
  statefulSetKind,
  daemonSetKind,
  rolloutKind,
  cronJobKind,
  jobKind,
];

export const builtinWorkloadKinds: Registry<WatchedWorkloadKind> = registryOf(
  'workload kind',
  BUILTIN_WORKLOAD_KINDS,
  (k) => k.kind,
);

/** Built-in kinds are served by the informer cache; other (plugin) kinds are read from the cluster. */
export const isCachedKind = (kind: string): boolean => builtinWorkloadKinds.has(kind);
