import type { WorkloadRef } from '@kpromo/api';
import type { Workload } from '../kube/cacheView.js';
import type { ResourceType } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';

/** The least a Kubernetes object has; a kind's own type narrows it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; generation?: number; uid?: string };
}

/** Whether an object finished rolling out its current spec. */
export interface WorkloadReadiness {
  ready: boolean;
  /** Shown in the plan status while waiting, or with the failure. */
  message: string;
  /** A condition-style reason when the rollout failed for good (e.g. Degraded): the app fails at once. */
  failed?: string;
  /**
   * Paused on purpose (an Argo Rollouts pause step waiting for promotion, a paused Deployment, a
   * suspended Job): the app keeps waiting, its message starts with `Paused:`, and the flow's rollout
   * timeout does not run out while it is paused.
   */
  paused?: boolean;
  /**
   * When the current unpaused stretch of the rollout began (ISO time, e.g. when a paused Rollout was
   * promoted): the rollout timeout counts from the later of this and the app's start.
   */
  progressingSince?: string;
}

/** Where and how `delivery.method: patch` writes the promoted image into objects of a kind. */
export type PatchStyle =
  /** A strategic-merge patch of the pod template's container (built-in API types). */
  | 'strategic'
  /** A JSON patch of the container's image by index, guarded by a test of its name (custom resources). */
  | 'json'
  /** The object is deleted and created again with the new image (immutable pod templates: Jobs). */
  | 'recreate';

/** What a kind's {@link WorkloadKind.confirm} gets: the object, the Application's reference to it, the cluster. */
export interface ConfirmContext<W extends KubeObject = Workload> {
  obj: W;
  ref: WorkloadRef;
  desired: { tag?: string; digest?: string };
  namespace: string;
  /** The Environment's cluster client (read-only use). */
  client(): Promise<KubeRest>;
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
   * Where objects of this kind live. The built-in kinds are watched by the controller's informers;
   * plugin kinds are read from the Environment's cluster at each check.
   */
  resource: ResourceType;
  /**
   * Path of the pod template in objects of this kind (default `['spec', 'template']`; a CronJob's is
   * `['spec', 'jobTemplate', 'spec', 'template']`): where the promoted container image lives. The
   * default `containers` reads it and `delivery.method: patch` writes it.
   */
  podTemplate?: readonly string[];
  /** How `delivery.method: patch` writes the image; without it the kind cannot be patched (UnsupportedWorkloadKind). */
  patch?: PatchStyle;
  /** Containers of the pod template; default: `containers` at {@link podTemplate}`.spec`. */
  containers?(obj: W): ReadonlyArray<{ name: string; image?: string }> | undefined;
  /** Pure: has the object finished rolling out its current spec? */
  ready(obj: W): WorkloadReadiness;
  /**
   * Optional, once `ready` holds: what else must hold, read from the cluster (e.g. the next run of a
   * CronJob with the promoted image, when the Application asks for it). Undefined: nothing more.
   */
  confirm?(c: ConfirmContext<W>): Promise<WorkloadReadiness | undefined>;
}

/** A kind whose objects have their own shape `W`, as the registry holds it (objects are passed as read). */
export const defineWorkloadKind = <W extends KubeObject>(kind: WorkloadKind<W>): WorkloadKind =>
  kind as unknown as WorkloadKind;
