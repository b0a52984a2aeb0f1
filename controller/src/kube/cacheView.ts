import type { Application, Environment, Notification, PromotionFlow, PromotionPlan } from '@kpromo/api';

/** A Deployment/StatefulSet as far as the controller reads it. */
export interface Workload {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> };
    template?: { spec?: { containers?: Array<{ name: string; image?: string }> } };
    updateStrategy?: { type?: string };
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
  /** Deployment and StatefulSet informers have listed at least once. */
  synced: boolean;
  /** A HelmRelease informer runs (the CRD is served in that cluster). */
  helmReleases: boolean;
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
  getApplication(namespace: string, name: string): Application | undefined;
  getEnvironment(namespace: string, name: string): Environment | undefined;
  getFlow(namespace: string, name: string): PromotionFlow | undefined;
  getPlan(namespace: string, name: string): PromotionPlan | undefined;
  /** Workload in an Environment's cluster+namespace; undefined when absent or not yet synced. */
  getWorkload(env: Environment, kind: 'Deployment' | 'StatefulSet', name: string): Workload | undefined;
  getHelmRelease(env: Environment, name: string): HelmRelease | undefined;
  /** True once the informers behind this Environment have listed at least once. */
  environmentSynced(env: Environment): boolean;
  /** Reachability and sync state of an Environment's cluster+namespace. */
  environmentState(env: Environment): EnvironmentState;
}
