import type { Application, Environment, KpromoKind, Notification, PromotionFlow, PromotionPlan } from '@kpromo/api';
import type { CacheView, EnvironmentState, HelmRelease, Workload } from './cacheView.js';
import { type ClusterClients, clusterKey } from './clusters.js';
import { Informer, type InformerLog, type KObject } from './informer.js';
import { DEPLOYMENT, HELMRELEASE, KPROMO_TYPES, resourcePath, STATEFULSET } from './paths.js';
import { isNotFound } from './rest.js';

export type CacheEvent =
  | { kind: KpromoKind; type: 'add' | 'update' | 'delete'; obj: KObject }
  | { kind: 'Workload' | 'HelmRelease'; type: 'add' | 'update' | 'delete'; obj: KObject; workloadKey: string }
  /** The state of a cluster+namespace watch changed (synced, error set/cleared, HelmReleases detected). */
  | { kind: 'Target'; type: 'update'; workloadKey: string };

/** Key of a workload-side watch: one per (cluster, namespace). */
export const targetKey = (env: Environment) => `${clusterKey(env)}|${env.spec.namespace}`;

interface TargetInformers {
  deployments: Informer<Workload>;
  statefulsets: Informer<Workload>;
  helmReleases?: Informer<HelmRelease>;
  discoveryTimer?: NodeJS.Timeout;
}

/**
 * The one in-memory cache: informers for the five kpromo kinds in the control cluster, plus
 * Deployment/StatefulSet (and HelmRelease when its CRD is served) informers for every distinct
 * cluster+namespace that an Environment targets, started as Environments appear.
 */
export class LiveCache implements CacheView {
  private readonly cr = new Map<KpromoKind, Informer<KObject>>();
  private readonly targets = new Map<string, TargetInformers>();
  /** Why a cluster+namespace could not be watched (e.g. unknown kubeconfig context), by targetKey. */
  private readonly targetErrors = new Map<string, string>();
  private readonly listeners: Array<(e: CacheEvent) => void> = [];
  private stopped = false;

  constructor(
    private readonly clients: ClusterClients,
    /** Namespaces of the control cluster to watch; empty = all namespaces. */
    private readonly namespaces: string[],
    private readonly log?: InformerLog,
    /** Cap of the HelmRelease discovery backoff (1 s, 2 s, 4 s, ...). */
    private readonly discoveryMaxMs = 30_000,
  ) {}

  onEvent(fn: (e: CacheEvent) => void): void {
    this.listeners.push(fn);
  }
  private emit(e: CacheEvent) {
    for (const l of this.listeners) l(e);
  }

  async start(signal?: AbortSignal): Promise<void> {
    this.stopped = false;
    const nss = this.namespaces.length ? this.namespaces : [undefined];
    for (const kind of Object.keys(KPROMO_TYPES) as KpromoKind[]) {
      // One informer per namespace keeps RBAC namespace-scoped when namespaces are configured.
      for (const ns of nss) {
        const inf = new Informer<KObject>(this.clients.control, resourcePath(KPROMO_TYPES[kind], ns), this.log);
        inf.on((type, obj) => {
          if (kind === 'Environment' && type !== 'delete') void this.ensureTarget(obj as Environment);
          this.emit({ kind, type, obj });
        });
        this.cr.set(ns ? (`${kind}|${ns}` as KpromoKind) : kind, inf);
        inf.start();
      }
    }
    await Promise.all([...this.cr.values()].map((i) => i.waitForSync(signal)));
  }

  stop(): void {
    this.stopped = true;
    for (const i of this.cr.values()) i.stop();
    for (const t of this.targets.values()) {
      clearTimeout(t.discoveryTimer);
      t.deployments.stop();
      t.statefulsets.stop();
      t.helmReleases?.stop();
    }
  }

  /** Start workload informers for an Environment's cluster+namespace (idempotent). */
  async ensureTarget(env: Environment): Promise<void> {
    const key = targetKey(env);
    if (this.targets.has(key)) return;
    let rest: Awaited<ReturnType<ClusterClients['forEnvironment']>>;
    try {
      rest = await this.clients.forEnvironment(env);
    } catch (e) {
      const err = e instanceof Error ? e.message : String(e);
      if (this.targetErrors.get(key) !== err) {
        this.log?.warn({ environment: env.metadata.name, err }, 'cannot reach environment cluster');
        this.targetErrors.set(key, err);
        this.emit({ kind: 'Target', type: 'update', workloadKey: key });
      }
      return;
    }
    if (this.targets.has(key)) return;
    if (this.targetErrors.delete(key)) this.emit({ kind: 'Target', type: 'update', workloadKey: key });
    const ns = env.spec.namespace;
    const wire = <T extends KObject>(inf: Informer<T>, kind: 'Workload' | 'HelmRelease') => {
      inf.on((type, obj) => this.emit({ kind, type, obj, workloadKey: key }));
      inf.onState(() => this.emit({ kind: 'Target', type: 'update', workloadKey: key }));
      inf.start();
      return inf;
    };
    const t: TargetInformers = {
      deployments: wire(new Informer<Workload>(rest, resourcePath(DEPLOYMENT, ns), this.log), 'Workload'),
      statefulsets: wire(new Informer<Workload>(rest, resourcePath(STATEFULSET, ns), this.log), 'Workload'),
    };
    this.targets.set(key, t);
    // HelmRelease is a CRD that may be installed (or become reachable) any time: probe now, then
    // keep probing discovery with capped backoff until it is served; no restart needed.
    const probe = async (attempt: number): Promise<void> => {
      if (this.stopped || t.helmReleases) return;
      try {
        await rest.get(`/apis/${HELMRELEASE.group}/${HELMRELEASE.version}`);
      } catch (e) {
        if (!isNotFound(e))
          this.log?.warn({ environment: env.metadata.name, err: String(e) }, 'HelmRelease discovery failed');
        if (this.stopped) return;
        const delay = Math.min(this.discoveryMaxMs, 1000 * 2 ** Math.min(attempt, 16));
        t.discoveryTimer = setTimeout(() => void probe(attempt + 1), delay);
        t.discoveryTimer.unref?.();
        return;
      }
      if (this.stopped || t.helmReleases) return;
      t.helmReleases = wire(new Informer<HelmRelease>(rest, resourcePath(HELMRELEASE, ns), this.log), 'HelmRelease');
      if (attempt > 0) this.log?.info?.({ environment: env.metadata.name }, 'HelmRelease CRD detected; watching');
      this.emit({ kind: 'Target', type: 'update', workloadKey: key });
    };
    await probe(0);
  }

  /** Waits until the workload informers of an Environment have listed once. */
  async waitForEnvironment(env: Environment, signal?: AbortSignal): Promise<void> {
    await this.ensureTarget(env);
    const t = this.targets.get(targetKey(env));
    if (!t) throw new Error(`Environment ${env.metadata.name}: cluster unreachable`);
    await Promise.all([t.deployments.waitForSync(signal), t.statefulsets.waitForSync(signal)]);
  }

  private listCr<T>(kind: KpromoKind, ns?: string): T[] {
    const out: KObject[] = [];
    for (const [k, inf] of this.cr) {
      if (k === kind || k.startsWith(`${kind}|`)) out.push(...inf.list());
    }
    return (ns === undefined ? out : out.filter((o) => o.metadata.namespace === ns)) as T[];
  }
  private getCr<T>(kind: KpromoKind, ns: string, name: string): T | undefined {
    const inf = this.cr.get(kind) ?? this.cr.get(`${kind}|${ns}` as KpromoKind);
    return inf?.get(ns, name) as T | undefined;
  }

  applications(ns?: string) {
    return this.listCr<Application>('Application', ns);
  }
  environments(ns?: string) {
    return this.listCr<Environment>('Environment', ns);
  }
  flows(ns?: string) {
    return this.listCr<PromotionFlow>('PromotionFlow', ns);
  }
  plans(ns?: string) {
    return this.listCr<PromotionPlan>('PromotionPlan', ns);
  }
  notifications(ns?: string) {
    return this.listCr<Notification>('Notification', ns);
  }
  getApplication(ns: string, name: string) {
    return this.getCr<Application>('Application', ns, name);
  }
  getEnvironment(ns: string, name: string) {
    return this.getCr<Environment>('Environment', ns, name);
  }
  getFlow(ns: string, name: string) {
    return this.getCr<PromotionFlow>('PromotionFlow', ns, name);
  }
  getPlan(ns: string, name: string) {
    return this.getCr<PromotionPlan>('PromotionPlan', ns, name);
  }
  getWorkload(env: Environment, kind: 'Deployment' | 'StatefulSet', name: string) {
    const t = this.targets.get(targetKey(env));
    if (!t) {
      void this.ensureTarget(env);
      return undefined;
    }
    return (kind === 'StatefulSet' ? t.statefulsets : t.deployments).get(env.spec.namespace, name);
  }
  getHelmRelease(env: Environment, name: string) {
    return this.targets.get(targetKey(env))?.helmReleases?.get(env.spec.namespace, name);
  }
  environmentSynced(env: Environment) {
    const t = this.targets.get(targetKey(env));
    return !!t && t.deployments.hasSynced && t.statefulsets.hasSynced;
  }
  /** What the cache knows about an Environment's cluster+namespace watch (for Environment.status). */
  environmentState(env: Environment): EnvironmentState {
    const key = targetKey(env);
    const t = this.targets.get(key);
    if (!t) {
      const error = this.targetErrors.get(key);
      if (!error) void this.ensureTarget(env);
      return { synced: false, helmReleases: false, ...(error ? { error } : {}) };
    }
    const watchError = [t.deployments, t.statefulsets, t.helmReleases]
      .map((i) => i?.lastError)
      .find((x) => x !== undefined);
    return {
      synced: t.deployments.hasSynced && t.statefulsets.hasSynced,
      helmReleases: !!t.helmReleases,
      ...(watchError ? { watchError } : {}),
    };
  }
  /** Informer health for /readyz. */
  health(): { synced: boolean; errors: string[] } {
    const errors: string[] = [];
    let synced = true;
    for (const i of this.cr.values()) {
      if (!i.hasSynced) synced = false;
      if (i.lastError) errors.push(`${i.path}: ${i.lastError}`);
    }
    return { synced, errors };
  }
}
