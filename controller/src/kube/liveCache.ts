import type { Application, Environment, KpromoKind, Notification, PromotionFlow, PromotionPlan } from '@kpromo/api';
import { CLUSTER_NOT_ALLOWED } from '../credentials/clusterAccess.js';
import type { CacheView, EnvironmentState, HelmRelease, Workload } from './cacheView.js';
import { type ClusterClients, clusterKey } from './clusters.js';
import { Informer, type InformerLog, type KObject, slimHelmRelease, slimWorkload } from './informer.js';
import { DEPLOYMENT, HELMRELEASE, KPROMO_TYPES, resourcePath, STATEFULSET } from './paths.js';
import { isNotFound, type KubeRest } from './rest.js';

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
}

/** The HelmRelease CRD, as far as deciding whether HelmReleases are served. */
interface Crd extends KObject {
  spec?: { versions?: Array<{ name: string; served?: boolean }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}
export const HELMRELEASE_CRD_NAME = `${HELMRELEASE.plural}.${HELMRELEASE.group}`;

const slimCrd = (c: Crd): Crd => ({
  apiVersion: c.apiVersion,
  kind: c.kind,
  metadata: { name: c.metadata.name, resourceVersion: c.metadata.resourceVersion, uid: c.metadata.uid },
  spec: { versions: c.spec?.versions?.map((v) => ({ name: v.name, served: v.served })) },
  status: { conditions: c.status?.conditions?.map((x) => ({ type: x.type, status: x.status })) },
});

/** Established and serving the version the controller uses. */
const crdServes = (c: Crd | undefined) =>
  !!c &&
  !!c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') &&
  !!c.spec?.versions?.some((v) => v.name === HELMRELEASE.version && v.served);

/**
 * Whether one workload cluster serves HelmReleases, shared by every namespace watched there. It
 * watches the CRD itself (list/watch of customresourcedefinitions filtered by metadata.name): no
 * request at all while nothing changes, and an install or removal is seen at once. Where that watch
 * is forbidden, it probes API discovery instead, backing off up to `maxProbeMs`.
 */
class HelmReleaseCrdWatch {
  served = false;
  private readonly subscribers = new Set<() => void>();
  private informer?: Informer<Crd>;
  private probeTimer?: NodeJS.Timeout;
  private stopped = false;
  private markReady!: () => void;
  /** Settles once `served` is known the first time (the CRD listed, or discovery probed once). */
  readonly ready = new Promise<void>((r) => {
    this.markReady = r;
  });

  constructor(
    private readonly rest: KubeRest,
    private readonly maxProbeMs: number,
    private readonly log?: InformerLog,
  ) {
    const inf = new Informer<Crd>(rest, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', log, {
      fieldSelector: `metadata.name=${HELMRELEASE_CRD_NAME}`,
      transform: slimCrd,
      maxBackoffMs: maxProbeMs,
    });
    inf.on(() => this.set(crdServes(inf.get(undefined, HELMRELEASE_CRD_NAME))));
    inf.onState(() => {
      // Not allowed to read CRDs (RBAC) or no apiextensions API: fall back to discovery probes.
      if (this.informer === inf && (inf.lastErrorStatus === 403 || inf.lastErrorStatus === 404)) {
        this.log?.info?.(
          { cluster: rest.clusterName, err: inf.lastError },
          'cannot watch the HelmRelease CRD; probing API discovery instead',
        );
        inf.stop();
        this.informer = undefined;
        void this.probe(0);
      }
    });
    this.informer = inf;
    inf.start();
    void inf.waitForSync().then(() => this.markReady());
  }

  subscribe(fn: () => void): void {
    this.subscribers.add(fn);
  }

  private set(served: boolean) {
    if (served === this.served) return;
    this.served = served;
    for (const fn of this.subscribers) fn();
  }

  private async probe(attempt: number): Promise<void> {
    if (this.stopped) return;
    try {
      await this.rest.get(`/apis/${HELMRELEASE.group}/${HELMRELEASE.version}`);
    } catch (e) {
      if (!isNotFound(e))
        this.log?.warn({ cluster: this.rest.clusterName, err: String(e) }, 'HelmRelease discovery failed');
      this.markReady();
      if (this.stopped) return;
      const step = Math.min(this.maxProbeMs, 1000 * 2 ** Math.min(attempt, 16));
      this.probeTimer = setTimeout(() => void this.probe(attempt + 1), step * (0.8 + Math.random() * 0.2));
      this.probeTimer.unref?.();
      return;
    }
    if (!this.stopped) this.set(true);
    this.markReady();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
    this.informer?.stop();
    this.markReady();
  }
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
    /**
     * Cap of the HelmRelease discovery backoff (1 s, 2 s, 4 s, ...), used only where the HelmRelease
     * CRD cannot be watched; also the cap of that watch's retry backoff.
     */
    private readonly discoveryMaxMs = 300_000,
  ) {}
  /** HelmRelease CRD watches, by clusterKey. */
  private readonly crdWatches = new Map<string, HelmReleaseCrdWatch>();

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
      t.deployments.stop();
      t.statefulsets.stop();
      t.helmReleases?.stop();
    }
    for (const c of this.crdWatches.values()) c.stop();
    this.crdWatches.clear();
  }

  /** Start workload informers for an Environment's cluster+namespace (idempotent). */
  async ensureTarget(env: Environment): Promise<void> {
    // Never touch a cluster the Environment may not use (config clusterAccess); environmentState says why.
    if (this.clients.refusal(env)) return;
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
    // Only what the controller reads of a workload is kept (see slimWorkload).
    const workloads = (path: string) => new Informer<Workload>(rest, path, this.log, { transform: slimWorkload });
    const t: TargetInformers = {
      deployments: wire(workloads(resourcePath(DEPLOYMENT, ns)), 'Workload'),
      statefulsets: wire(workloads(resourcePath(STATEFULSET, ns)), 'Workload'),
    };
    this.targets.set(key, t);
    // HelmRelease is a CRD that may be installed (or removed) any time: one watch on the CRD per
    // cluster starts and stops the HelmRelease informers of its namespaces; no restart needed.
    const ck = clusterKey(env);
    let crd = this.crdWatches.get(ck);
    if (!crd) {
      crd = new HelmReleaseCrdWatch(rest, this.discoveryMaxMs, this.log);
      this.crdWatches.set(ck, crd);
    }
    const crdWatch = crd;
    const follow = () => {
      if (this.stopped || this.targets.get(key) !== t) return;
      if (crdWatch.served && !t.helmReleases) {
        t.helmReleases = wire(
          new Informer<HelmRelease>(rest, resourcePath(HELMRELEASE, ns), this.log, { transform: slimHelmRelease }),
          'HelmRelease',
        );
        this.log?.info?.({ environment: env.metadata.name }, 'HelmRelease CRD served; watching HelmReleases');
      } else if (!crdWatch.served && t.helmReleases) {
        t.helmReleases.stop();
        t.helmReleases = undefined;
        this.log?.info?.({ environment: env.metadata.name }, 'HelmRelease CRD gone; stopped watching HelmReleases');
      } else return;
      this.emit({ kind: 'Target', type: 'update', workloadKey: key });
    };
    crdWatch.subscribe(follow);
    // As before, ensureTarget returns knowing whether HelmReleases are served (bounded wait).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([crdWatch.ready, new Promise<void>((r) => (timer = setTimeout(r, 30_000)))]);
    clearTimeout(timer);
    follow();
  }

  /** Waits until the workload informers of an Environment have listed once. */
  async waitForEnvironment(env: Environment, signal?: AbortSignal): Promise<void> {
    const refused = this.clients.refusal(env);
    if (refused) throw new Error(refused);
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
    // Another namespace's Environment may watch the same cluster+namespace; this one may still not read it.
    if (this.clients.refusal(env)) return undefined;
    const t = this.targets.get(targetKey(env));
    if (!t) {
      void this.ensureTarget(env);
      return undefined;
    }
    return (kind === 'StatefulSet' ? t.statefulsets : t.deployments).get(env.spec.namespace, name);
  }
  getHelmRelease(env: Environment, name: string) {
    if (this.clients.refusal(env)) return undefined;
    return this.targets.get(targetKey(env))?.helmReleases?.get(env.spec.namespace, name);
  }
  environmentSynced(env: Environment) {
    if (this.clients.refusal(env)) return false;
    const t = this.targets.get(targetKey(env));
    return !!t && t.deployments.hasSynced && t.statefulsets.hasSynced;
  }
  /** What the cache knows about an Environment's cluster+namespace watch (for Environment.status). */
  environmentState(env: Environment): EnvironmentState {
    const refused = this.clients.refusal(env);
    if (refused) return { synced: false, helmReleases: false, error: refused, reason: CLUSTER_NOT_ALLOWED };
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
