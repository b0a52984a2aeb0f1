import type {
  Application,
  Environment,
  LineStop,
  Notification,
  OrgPolicy,
  PromotionFlow,
  PromotionPlan,
} from '@kpromo/api';
import { fleetTargets, isFleet, targetCluster } from '@kpromo/api';
import type { CacheView, EnvironmentState, HelmRelease, Workload } from './cacheView.js';
import { WorkloadChangeLog } from './workloadChangeLog.js';

/** In-memory CacheView for unit tests and the benchmark. */
export class MemoryCache implements CacheView {
  apps: Application[] = [];
  envs: Environment[] = [];
  flowList: PromotionFlow[] = [];
  planList: PromotionPlan[] = [];
  notificationList: Notification[] = [];
  lineStopList: LineStop[] = [];
  orgPolicyList: OrgPolicy[] = [];
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
  lineStops(ns?: string) {
    return MemoryCache.inNs(this.lineStopList, ns);
  }
  orgPolicies(ns?: string) {
    return MemoryCache.inNs(this.orgPolicyList, ns);
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
  /** Workloads of a fleet's cluster are keyed `${envName}@${cluster}/${kind}/${name}`. */
  getWorkload(env: Environment, kind: string, name: string) {
    const c = targetCluster(env);
    return this.workloads.get(`${env.metadata.name}${c ? `@${c}` : ''}/${kind}/${name}`);
  }
  getHelmRelease(env: Environment, name: string) {
    return this.helmReleases.get(`${env.metadata.name}/${name}`);
  }
  environmentSynced(env: Environment): boolean {
    if (isFleet(env)) return fleetTargets(env).every((t) => this.environmentSynced(t.env));
    const c = targetCluster(env);
    return this.envStates.get(`${env.metadata.name}${c ? `@${c}` : ''}`)?.synced ?? true;
  }
  /** Per-Environment overrides (by name) for tests; synced otherwise. */
  envStates = new Map<string, EnvironmentState>();
  environmentState(env: Environment): EnvironmentState {
    return this.envStates.get(env.metadata.name) ?? { synced: true, helmReleases: this.helmReleases.size > 0 };
  }
}

/**
 * A MemoryCache that reports what changed (changedSince) as the live cache does from its informers'
 * events: Deployments changed through `set` are logged, and `log.reset()` plays a watch state change.
 */
export class ChangeLoggingCache extends MemoryCache {
  readonly log = new WorkloadChangeLog();
  set(e: Environment, name: string, w: Workload | undefined) {
    const key = `${e.metadata.name}/Deployment/${name}`;
    if (w) this.workloads.set(key, w);
    else this.workloads.delete(key);
    this.log.changed(name);
  }
  changedSince(_e: Environment, cursor?: number) {
    const c = this.log.since(cursor);
    if (!c.names) return { cursor: c.cursor };
    const names = new Set(c.names);
    return {
      cursor: c.cursor,
      applications: this.apps.filter((a) => a.spec.workloads.some((w) => names.has(w.name))),
    };
  }
}
