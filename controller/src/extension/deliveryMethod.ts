import type { Application, Environment, PromotionPlan, Stage } from '@kpromo/api';
import type { KubeRest } from '../kube/rest.js';
import type { DeliveryInference } from './adoption.js';
import type { WorkloadKind } from './workloadKind.js';

/** What the controller's GitOps writer ({@link DeliveryContext.commitImageChange}) commits and pushes. */
export interface CommitImageChangeRequest {
  repository: string;
  branch: string;
  path: string;
  valuesPath: string;
  image: string;
  tag: string;
  digest: string;
  message: string;
  author?: { name: string; email: string };
  /**
   * HTTP basic credentials, sent only to URLs under `url` (default: the repository URL), never
   * through a redirect, and never on a command line (they reach git through its environment).
   */
  auth?: { username: string; password: string; url?: string };
  /**
   * A pull request's own branch: without `expectHead`, start `branch` afresh from `createFrom`
   * (force-pushed: whatever it held is replaced); with it, the branch must still be at
   * `expectHead` (kpromo's last commit) and a push someone else raced is refused, not redone.
   */
  createFrom?: string;
  expectHead?: string;
}

/** Everything a delivery method gets to write one app's new image into one Environment. */
export interface DeliveryContext {
  /** The target Environment; its `spec.delivery.method` names the method. */
  env: Environment;
  app: Application;
  plan: PromotionPlan;
  action: 'promote' | 'rollback';
  /** `host/repository` of the image in the target Environment's registry (no tag). */
  image: string;
  tag: string;
  digest: string;
  /** `image:tag@digest`: what the workloads should run. */
  ref: string;
  /** Client of the Environment's workload cluster (the controller's clusterAccess rules apply). */
  client(): Promise<KubeRest>;
  /** Client of the control cluster (e.g. Secrets in the Environment's namespace). */
  control: KubeRest;
  /** The controller's GitOps writer: clone, set the YAML value, commit, push (a lost push race is redone). */
  commitImageChange(req: CommitImageChangeRequest): Promise<{ commit: string; changed: boolean }>;
  /**
   * Leader fencing: throws unless this replica still leads. The runner calls it right before
   * `deliver`; call it again before any write that follows a slow step (a clone, a Secret read).
   */
  fence(): void;
  /** Aborted when this replica stops leading. */
  signal?: AbortSignal;
  /**
   * Git-based methods: commit to this branch instead of the Environment's (delivery through a pull
   * request: the plan's own branch), started from `from` when `head` (kpromo's last commit on it) is
   * unset, else built on `head` only (CommitImageChangeRequest createFrom/expectHead).
   */
  branch?: { name: string; from: string; head?: string };
}

/** What a delivery method knows about its own part of a rollout (e.g. a GitOps agent applying a commit). */
export interface DeliveryVerdictContext {
  env: Environment;
  app: Application;
  plan: PromotionPlan;
  /** What `deliver` recorded (a git method's commit). */
  commit?: string;
  /** The tag and digest `deliver` wrote (the app's targetTag and digest in the plan status). */
  tag?: string;
  digest?: string;
  /** Client of the Environment's workload cluster. */
  client(): Promise<KubeRest>;
  /** Client of the control cluster (where the kpromo resources live). */
  control: KubeRest;
}

/**
 * `Applied`: the method's part is done (the workloads are judged next); `Progressing`: not yet (the
 * plan keeps waiting, bounded by the rollout timeout); `Failed`: it cannot be applied (the app fails
 * now with this reason).
 */
export type DeliveryVerdict =
  | { state: 'Applied' | 'Progressing'; message: string }
  | { state: 'Failed'; reason: string; message: string };

/** One verb the controller's identity needs in an Environment's cluster to deliver there. */
export interface AccessNeed {
  verb: string;
  /** API group; empty for the core group (`configmaps`). */
  group: string;
  resource: string;
  namespace: string;
}

/** What {@link DeliveryMethod.accessNeeds} is asked about. */
export interface AccessNeedsContext {
  env: Environment;
  /**
   * The registered workload kinds the Environment's Applications name for it, by kind name (a kind
   * that is not registered fails the promotion with its own reason, so it needs nothing here).
   */
  workloadKinds: readonly WorkloadKind[];
}

/** One line of `kpromo doctor` (check `delivery`) about an Environment's delivery. */
export interface DeliveryDiagnosis {
  status: 'pass' | 'warn' | 'fail';
  /** What was checked: `Environment prod HelmReleases`. */
  subject: string;
  message: string;
  /** The command or change that fixes it (fail and warn only). */
  fix?: string;
}

/** What {@link DeliveryMethod.diagnose} reads with: `kpromo doctor` runs as a person (their kubeconfig, their RBAC). */
export interface DiagnoseContext {
  /** The Environment (one cluster of a fleet) delivering by this method. */
  env: Environment;
  /** The Applications with workloads in it. */
  apps: readonly Application[];
  /** The PromotionFlow stages that promote into it (their approval settings), with each one's flow. */
  stages: ReadonlyArray<{ flow: string; stage: Stage }>;
  /** The control cluster, as the caller. */
  control: KubeRest;
  /** The Environment's cluster as the caller; undefined when the caller's kubeconfig has no context for it. */
  client(): KubeRest | undefined;
}

/** What the step runner records in the plan status (`apps[].commit`). */
export interface DeliveryResult {
  commit?: string;
}

/**
 * One way of writing the desired state (`spec.delivery.method` of an Environment). The plan records
 * `Writing` before `deliver` and `written` after it, so `deliver` must be idempotent: it is called
 * again after a failure or a leader change until it has succeeded once. Throw a
 * {@link PermanentAppError} (or an error with `permanent: true`) when retrying cannot help; other
 * errors are retried with backoff up to the controller's maxAttempts.
 */
export interface DeliveryMethod {
  /** The `spec.delivery.method` value it serves. */
  name: string;
  /**
   * Pure check of the Environment before any side effect of a plan: a problem (the plan fails
   * with InvalidEnvironment and this message) or undefined.
   */
  validate?(env: Environment): string | undefined;
  /** Resolves with nothing, or with what to record (a git method's commit). */
  deliver(ctx: DeliveryContext): Promise<void> | Promise<DeliveryResult>;
  /**
   * Optional: judged before the workloads on every rollout check, e.g. whether the GitOps agent has
   * applied the commit. Nothing (undefined) means the method has no part to judge.
   */
  rollout?(ctx: DeliveryVerdictContext): Promise<DeliveryVerdict | undefined>;
  /**
   * Optional, pure: what the controller's identity must be allowed in the Environment's cluster to
   * deliver there. The controller asks the cluster (SelfSubjectAccessReviews, nothing written) and
   * reports the answer as the Environment's DeliveryPermitted condition; without it nothing is checked.
   */
  accessNeeds?(c: AccessNeedsContext): readonly AccessNeed[];
  /**
   * Optional: `kpromo doctor`'s checks of an Environment delivering this way (check `delivery`), read
   * as the caller and never written. A thrown error fails the check with its message.
   */
  diagnose?(c: DiagnoseContext): Promise<readonly DeliveryDiagnosis[]>;
  /** Optional: how adoption recognises this method on running workloads and proposes its settings. */
  infer?: DeliveryInference;
}

/** `namespace/name` of the plan, as annotations and commit messages name it. */
export const planRef = (plan: PromotionPlan) => `${plan.metadata.namespace}/${plan.metadata.name}`;
