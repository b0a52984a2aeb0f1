import type { Workload } from '../kube/cacheView.js';
import type { ResourceType } from '../kube/paths.js';

/** The least a Kubernetes object has; a kind's own type narrows it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; generation?: number };
}

/** Whether an object finished rolling out its current spec. */
export interface WorkloadReadiness {
  ready: boolean;
  /** Shown in the plan status while waiting, or with the failure. */
  message: string;
  /** A condition-style reason when the rollout failed for good (e.g. Degraded): the app fails at once. */
  failed?: string;
}

/**
 * How to tell that a workload of one kind (Application `spec.workloads[].kind`) rolled out. The
 * controller reads the object, checks that its pod template runs the promoted image, fails on a
 * `ProgressDeadlineExceeded` condition or crash-looping pods (matched by `spec.selector`), and asks
 * `ready` for the rest, until the flow's rollout timeout.
 */
export interface WorkloadKind<W extends KubeObject = Workload> {
  /** The `kind` of Application `spec.workloads[]` entries it judges. */
  kind: string;
  /**
   * Where objects of this kind live. Kinds other than Deployment and StatefulSet are not watched by
   * the controller's informers: they are read from the Environment's cluster at each check.
   */
  resource: ResourceType;
  /** Containers of the pod template; default `spec.template.spec.containers`. */
  containers?(obj: W): ReadonlyArray<{ name: string; image?: string }> | undefined;
  /** Pure: has the object finished rolling out its current spec? */
  ready(obj: W): WorkloadReadiness;
}

/** A kind whose objects have their own shape `W`, as the registry holds it (objects are passed as read). */
export const defineWorkloadKind = <W extends KubeObject>(kind: WorkloadKind<W>): WorkloadKind =>
  kind as unknown as WorkloadKind;
