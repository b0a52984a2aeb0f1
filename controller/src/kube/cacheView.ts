import type {
  Application,
  Environment,
  LineStop,
  Notification,
  OrgPolicy,
  PromotionFlow,
  PromotionPlan,
} from '@kpromo/api';

/** Who last wrote a container's image of a workload, as its managedFields tell (drift's changedBy). */
export interface ImageWriter {
  container: string;
  /** The field manager: a client's name (kubectl-patch, kustomize-controller, kpromo-controller), not a person. */
  manager: string;
  operation?: string;
  time?: string;
}

/**
 * A workload as far as the controller reads it: the shape of a Deployment/StatefulSet, which every
 * kind shares in part (metadata, selector, status conditions). A kind's own fields (a CronJob's job
 * template, a Rollout's pause conditions) are typed in its module under rollout/kinds/.
 */
export interface Workload {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    /** Who last wrote each container's image, from managedFields (the informer keeps only this of them). */
    imageWriters?: ImageWriter[];
  };
  spec?: {
    replicas?: number;
    paused?: boolean;
    selector?: { matchLabels?: Record<string, string> };
    template?: { spec?: { containers?: Array<{ name: string; image?: string }> } };
    updateStrategy?: { type?: string; rollingUpdate?: { partition?: number } };
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    unavailableReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

export interface HelmRelease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; generation?: number; resourceVersion?: string };
  spec?: { values?: Record<string, unknown> } & Record<string, unknown>;
  status?: {
    observedGeneration?: number;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

/** The workload-cluster watch behind an Environment. */
export interface EnvironmentState {
  /** The workload informers (one per watched kind) have listed at least once. */
  synced: boolean;
  /** A HelmRelease informer runs (the CRD is served in that cluster). */
  helmReleases: boolean;
  /** The workload kinds watched there (Rollout only where its CRD is served). */
  workloadKinds?: string[];
  /** The cluster could not be reached or configured at all (e.g. unknown kubeconfig context). */
  error?: string;
  /** Ready condition reason for `error` (default ClusterUnreachable; ClusterNotAllowed: refused by config clusterAccess). */
  reason?: string;
  /** The last list/watch failure of an informer, while it retries. */
  watchError?: string;
}

/**
 * Read-only view of everything the controller knows. The live implementation is fed by informers;
 * tests and the benchmark use an in-memory one. All reads (API, candidates, reconcile) go through it.
 */
export interface CacheView {
  applications(namespace?: string): Application[];
  environments(namespace?: string): Environment[];
  flows(namespace?: string): PromotionFlow[];
  plans(namespace?: string): PromotionPlan[];
  notifications(namespace?: string): Notification[];
  /** LineStops: while one applies to a plan, the plan starts no app (policy/lineStop.ts). */
  lineStops(namespace?: string): LineStop[];
  /** OrgPolicies: those of the org-policy namespace add their rules to every flow (policy/orgGates.ts). */
  orgPolicies(namespace?: string): OrgPolicy[];
  getApplication(namespace: string, name: string): Application | undefined;
  getEnvironment(namespace: string, name: string): Environment | undefined;
  getFlow(namespace: string, name: string): PromotionFlow | undefined;
  getPlan(namespace: string, name: string): PromotionPlan | undefined;
  /**
   * Workload of a watched kind (the built-in kinds of rollout/registry.ts) in an Environment's
   * cluster+namespace; undefined when absent, not yet synced, or its kind is not served there.
   */
  getWorkload(env: Environment, kind: string, name: string): Workload | undefined;
  getHelmRelease(env: Environment, name: string): HelmRelease | undefined;
  /** True once the informers behind this Environment have listed at least once. */
  environmentSynced(env: Environment): boolean;
  /** Reachability and sync state of an Environment's cluster+namespace. */
  environmentState(env: Environment): EnvironmentState;
  /**
   * Applications of an Environment's namespace that name a workload which changed in its
   * cluster+namespace after `cursor` (from an earlier answer), so a reader keeping versions can redo
   * only those. No `applications` when the cache cannot tell (first call, the watch's state changed,
   * more changes than it keeps): then any version there may have changed. Optional: a cache without
   * it has every version read afresh.
   */
  changedSince?(env: Environment, cursor?: number): { cursor: number; applications?: readonly Application[] };
  /**
   * core/v1 Events about a kpromo object (`kind`/`name` in `namespace`) when the cache watches them;
   * undefined when it cannot answer (the caller then asks the apiserver).
   */
  recentEvents?(namespace: string, kind: string, name: string): KpromoEventLike[] | undefined;
}

/** The fields of a core/v1 Event that answers show. */
export interface KpromoEventLike {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: string;
  eventTime?: string;
  firstTimestamp?: string;
  metadata?: { creationTimestamp?: string };
}
