import { deploymentKind } from './kinds/deployment.js';
import { statefulSetKind } from './kinds/statefulSet.js';
import type { WorkloadKind } from './workloadKind.js';

/** Workload kinds by Application `spec.workloads[].kind`. */
export type WorkloadKinds = ReadonlyMap<string, WorkloadKind>;

/** The kinds the Application CRD names (its `spec.workloads[].kind` enum); the informers watch exactly these. */
export const BUILTIN_WORKLOAD_KINDS: readonly WorkloadKind[] = [deploymentKind, statefulSetKind];

export const builtinWorkloadKinds: WorkloadKinds = new Map(BUILTIN_WORKLOAD_KINDS.map((k) => [k.kind, k]));

/** Built-in kinds are served by the informer cache; other kinds are read from the cluster. */
export const isCachedKind = (kind: string): kind is 'Deployment' | 'StatefulSet' => builtinWorkloadKinds.has(kind);
