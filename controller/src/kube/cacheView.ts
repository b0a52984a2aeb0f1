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

/** In-memory CacheView for unit tests and the benchmark. */
export class MemoryCache implements CacheView {
  apps: Application[] = [];
  envs: Environment[] = [];
  flowList: PromotionFlow[] = [];
  planList: PromotionPlan[] = [];
  notificationList: Notification[] = [];
  /** key: `${envName}/${kind}/${name}` */
  workloads = new Map<string, Workload>();
  helmReleases = new Map<string, HelmRelease>();

  private static inNs<T extends { metadata: { namespace?: string } }>(list: T[], ns?: string): T[] {
    return ns === undefined ? list : list.filter((o) => o.metadata.namespace === ns);
  }
  applications(ns?: string) {
    return MemoryCache.inNs(this.apps, ns);
  }
  environments(ns?: string) {
    return MemoryCache.inNs(this.envs, ns);
  }
  flows(ns?: string) {
    return MemoryCache.inNs(this.flowList, ns);
  }
  plans(ns?: string) {
    return MemoryCache.inNs(this.planList, ns);
  }
  notifications(ns?: string) {
    return MemoryCache.inNs(this.notificationList, ns);
  }
  getApplication(ns: string, name: string) {
    return this.apps.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
  }
  getEnvironment(ns: string, name: string) {
    return this.envs.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
  }
  getFlow(ns: string, name: string) {
    return this.flowList.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
  }
  getPlan(ns: string, name: string) {
    return this.planList.find((o) => o.metadata.namespace === ns && o.metadata.name === name);
  }
  getWorkload(env: Environment, kind: string, name: string) {
    return this.workloads.get(`${env.metadata.name}/${kind}/${name}`);
  }
  getHelmRelease(env: Environment, name: string) {
    return this.helmReleases.get(`${env.metadata.name}/${name}`);
  }
  environmentSynced(env: Environment) {
    return this.envStates.get(env.metadata.name)?.synced ?? true;
  }
  /** Per-Environment overrides (by name) for tests; synced otherwise. */
  envStates = new Map<string, EnvironmentState>();
  environmentState(env: Environment): EnvironmentState {
    return this.envStates.get(env.metadata.name) ?? { synced: true, helmReleases: this.helmReleases.size > 0 };
  }
}
