import type {
  Application,
  Environment,
  KpromoKind,
  LineStop,
  Notification,
  OrgPolicy,
  PromotionFlow,
  PromotionPlan,
} from '@kpromo/api';
import { fleetTargets, isFleet } from '@kpromo/api';
import type { CacheView, EnvironmentState, HelmRelease, Workload } from './cacheView.js';
import { CLUSTER_NOT_ALLOWED } from './clusterAccess.js';
import { type ClusterClients, clusterKey } from './clusters.js';
import { Informer, type InformerLog, type KObject, slimHelmRelease } from './informer.js';
import { type KpromoEvent, KpromoEventCache } from './kpromoEvents.js';
import type { NamespaceScope } from './namespaceShard.js';
import { HELMRELEASE, KPROMO_TYPES, type ResourceType, resourcePath } from './paths.js';
import { isNotFound, KubeError, type KubeRest } from './rest.js';
import { WorkloadChangeLog } from './workloadChangeLog.js';

export type CacheEvent =
  | { kind: KpromoKind; type: 'add' | 'update' | 'delete'; obj: KObject }
  | { kind: 'Workload' | 'HelmRelease'; type: 'add' | 'update' | 'delete'; obj: KObject; workloadKey: string }
  /** The state of a cluster+namespace watch changed (synced, error set/cleared, HelmReleases detected). */
  | { kind: 'Target'; type: 'update'; workloadKey: string };

const workloadIndexKey = (namespace: string, workload: string) => `${namespace}/${workload}`;

/** Pure: Applications by `namespace/workload name`, each listed once per workload name it uses. */
export function indexByWorkloadName(apps: readonly Application[]): Map<string, Application[]> {
  const index = new Map<string, Application[]>();
  for (const a of apps) {
    for (const workload of new Set(a.spec.workloads.map((w) => w.name))) {
      const k = workloadIndexKey(a.metadata.namespace ?? '', workload);
      const list = index.get(k);
      if (list) list.push(a);
      else index.set(k, [a]);
    }
  }
  return index;
}

/** Key of a workload-side watch: one per (cluster, namespace). */
export const targetKey = (env: Environment) => `${clusterKey(env)}|${env.spec.namespace}`;

interface TargetInformers {
  /**
   * One informer per watched workload kind (rollout/registry.ts), by kind; a kind served by a CRD
   * (Argo Rollouts' Rollout) only while that CRD is served in the cluster.
   */
  workloads: Map<string, Informer<Workload>>;
  helmReleases?: Informer<HelmRelease>;
}

/**
 * kpromo kinds not watched: AgentPolicies are read from the apiserver at each agent call
 * (api/agents.ts), so a kill switch holds from the next call rather than after a watch event; the
 * controller's role (and a CLI user's) needs no watch on them.
 */
const UNCACHED_KINDS: ReadonlySet<KpromoKind> = new Set(['AgentPolicy']);
/** The kpromo kinds the cache lists and watches. */
export const WATCHED_KINDS = (Object.keys(KPROMO_TYPES) as KpromoKind[]).filter((k) => !UNCACHED_KINDS.has(k));

/** API groups served by every apiserver: their kinds are watched at once; others wait for their CRD. */
const BUILT_IN_GROUPS = new Set(['', 'apps', 'batch']);
const isCustomResource = (r: ResourceType) => !BUILT_IN_GROUPS.has(r.group);

/**
 * Kinds whose informers must have listed for an Environment to count as synced, whatever happens.
 * The other kinds' informers count as settled too when the cluster refuses them (403: a
 * kpromo-workloads role without them; 404: not served): their objects read as missing and the error
 * shows in Environment status, instead of holding every application of the Environment unsynced.
 */
const ESSENTIAL_KINDS = new Set(['Deployment', 'StatefulSet']);
const refused = (inf: { lastErrorStatus?: number }) => inf.lastErrorStatus === 403 || inf.lastErrorStatus === 404;
const settled = (kind: string, inf: Informer<Workload>) =>
  inf.hasSynced || (!ESSENTIAL_KINDS.has(kind) && refused(inf));

/** Resolves once the informer has listed, or the apiserver refused (403) or does not serve (404) its resource. */
function settledOrRefused<T extends KObject>(inf: Informer<T>, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const check = () => (inf.hasSynced || refused(inf)) && resolve();
    inf.onState(check);
    check();
    signal?.addEventListener('abort', () => reject(new Error(`informer ${inf.path} sync aborted`)));
  });
}

/** A CRD, as far as deciding whether its resource is served. */
interface Crd extends KObject {
  spec?: { versions?: Array<{ name: string; served?: boolean }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}
const crdNameOf = (r: ResourceType) => `${r.plural}.${r.group}`;
export const HELMRELEASE_CRD_NAME = crdNameOf(HELMRELEASE);

const slimCrd = (c: Crd): Crd => ({
  apiVersion: c.apiVersion,
  kind: c.kind,
  metadata: { name: c.metadata.name, resourceVersion: c.metadata.resourceVersion, uid: c.metadata.uid },
  spec: { versions: c.spec?.versions?.map((v) => ({ name: v.name, served: v.served })) },
  status: { conditions: c.status?.conditions?.map((x) => ({ type: x.type, status: x.status })) },
});

/** Established and serving the version the controller uses. */
const crdServes = (c: Crd | undefined, version: string) =>
  !!c &&
  !!c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') &&
  !!c.spec?.versions?.some((v) => v.name === version && v.served);

/**
 * Whether one workload cluster serves a custom resource (HelmReleases, Argo Rollouts), shared by
 * every namespace watched there. It watches the CRD itself (list/watch of customresourcedefinitions
 * filtered by metadata.name): no request at all while nothing changes, and an install or removal is
 * seen at once. Where that watch is forbidden, it probes API discovery instead, backing off up to
 * `maxProbeMs`.
 */
class CrdWatch {
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
    private readonly resource: ResourceType,
    private readonly maxProbeMs: number,
    private readonly log?: InformerLog,
  ) {
    const name = crdNameOf(resource);
    const inf = new Informer<Crd>(rest, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', log, {
      fieldSelector: `metadata.name=${name}`,
      transform: slimCrd,
      maxBackoffMs: maxProbeMs,
    });
    inf.on(() => this.set(crdServes(inf.get(undefined, name), resource.version)));
    inf.onState(() => {
      // Not allowed to read CRDs (RBAC) or no apiextensions API: fall back to discovery probes.
      if (this.informer === inf && (inf.lastErrorStatus === 403 || inf.lastErrorStatus === 404)) {
        this.log?.info?.(
          { cluster: rest.clusterName, err: inf.lastError },
          `cannot watch the ${resource.kind} CRD; probing API discovery instead`,
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
      const list = await this.rest.get<{ resources?: Array<{ name: string }> }>(
        `/apis/${this.resource.group}/${this.resource.version}`,
      );
      // The group/version may be served for other resources (e.g. by an aggregated API).
      if (list.resources && !list.resources.some((r) => r.name === this.resource.plural))
        throw new KubeError(404, 'NotFound', 'GET', this.resource.plural, this.rest.clusterName, 'not served');
    } catch (e) {
      if (!isNotFound(e))
        this.log?.warn({ cluster: this.rest.clusterName, err: String(e) }, `${this.resource.kind} discovery failed`);
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
 * A workload kind the cache watches: where its objects live and what is kept of each. The built-in
 * kinds (rollout/registry.ts BUILTIN_WORKLOAD_KINDS) are handed in by whoever builds the cache: the
 * kinds sit above the cache (they read it), so the cache does not import them.
 */
export interface CachedWorkloadKind {
  kind: string;
  resource: ResourceType;
  /** What the cache keeps of an object: every field the controller reads of it. */
  slim(obj: Workload): Workload;
}

export interface LiveCacheOptions {
  /** The workload kinds to watch (the built-in ones, BUILTIN_WORKLOAD_KINDS). */
  workloadKinds: readonly CachedWorkloadKind[];
  log?: InformerLog;
  /**
   * Cap of the HelmRelease discovery backoff (1 s, 2 s, 4 s, ...), used only where the HelmRelease
   * CRD cannot be watched; also the cap of that watch's retry backoff. Default 300 000.
   */
  discoveryMaxMs?: number;
  /**
   * kpromo kinds this cache can do without: their informers count as settled when the apiserver
   * refuses them (403) or does not serve them (404), instead of holding start() until its time
   * limit. The CLI's session passes LineStop (a viewer may not list them, an older install has no
   * such CRD); the controller passes none: it must see every stop of the line.
   */
  optionalKinds?: ReadonlySet<KpromoKind>;
}

/**
 * The one in-memory cache: informers for the five kpromo kinds in the control cluster, plus an
 * informer per watched workload kind (Deployment, StatefulSet, DaemonSet, CronJob, Job; Rollout and
 * HelmRelease where their CRDs are served) for every distinct cluster+namespace that an Environment
 * targets, started as Environments appear.
 */
export class LiveCache implements CacheView {
  private readonly cr = new Map<KpromoKind, Informer<KObject>>();
  private readonly targets = new Map<string, TargetInformers>();
  /** Why a cluster+namespace could not be watched (e.g. unknown kubeconfig context), by targetKey. */
  private readonly targetErrors = new Map<string, string>();
  private readonly listeners: Array<(e: CacheEvent) => void> = [];
  private stopped = false;
  private scopeWired = false;

  private readonly log?: InformerLog;
  private readonly discoveryMaxMs: number;
  private readonly workloadKinds: readonly CachedWorkloadKind[];
  private readonly optionalKinds: ReadonlySet<KpromoKind>;

  constructor(
    private readonly clients: ClusterClients,
    /**
     * Namespaces of the control cluster to watch: a list (empty = all namespaces) or a shard's
     * namespaces, followed live (one watch over all namespaces, keeping only the shard's objects).
     */
    private readonly namespaces: string[] | NamespaceScope,
    o: LiveCacheOptions,
  ) {
    this.log = o.log;
    this.discoveryMaxMs = o.discoveryMaxMs ?? 300_000;
    this.workloadKinds = o.workloadKinds;
    this.optionalKinds = o.optionalKinds ?? new Set();
  }
  /** CRD watches (HelmRelease, CRD-backed workload kinds), by `clusterKey|crd name`. */
  private readonly crdWatches = new Map<string, CrdWatch>();
  /** ensureTarget calls in flight, by target key. */
  private readonly targetStarts = new Map<string, Promise<void>>();
  /** Applications by `namespace/workload name`; dropped on every Application event, rebuilt when read. */
  private appsByWorkload?: Map<string, Application[]>;
  /** Events about kpromo objects in the watched namespaces (MCP `state`); created on start. */
  private kpromoEvents?: KpromoEventCache;

  onEvent(fn: (e: CacheEvent) => void): void {
    this.listeners.push(fn);
  }
  private emit(e: CacheEvent) {
    if (e.kind === 'Workload') this.changeLog(e.workloadKey).changed(e.obj.metadata.name);
    else if (e.kind === 'Target') this.changeLog(e.workloadKey).reset();
    for (const l of this.listeners) l(e);
  }
  /** What changed among each cluster+namespace's workloads, by target key (changedSince). */
  private readonly changeLogs = new Map<string, WorkloadChangeLog>();
  private changeLog(target: string): WorkloadChangeLog {
    let log = this.changeLogs.get(target);
    if (!log) {
      log = new WorkloadChangeLog();
      this.changeLogs.set(target, log);
    }
    return log;
  }
  /**
   * True while the shard's namespaces change and the kinds relist one by one: the cache may hold a
   * namespace's plans without its Applications for that moment, so nothing should be decided.
   */
  get settling(): boolean {
    return this.holds > 0;
  }
  /** kpromo object events held while the shard's namespaces change (followScope). */
  private held?: CacheEvent[];
  private holds = 0;
  private emitCr(e: CacheEvent) {
    if (this.held) this.held.push(e);
    else this.emit(e);
  }

  async start(signal?: AbortSignal): Promise<void> {
    this.stopped = false;
    const scope = Array.isArray(this.namespaces) ? undefined : this.namespaces;
    if (scope) {
      await scope.start(signal);
      if (!this.scopeWired) {
        this.scopeWired = true;
        // Namespaces joined or left the shard: list again; the differences arrive as adds and deletes.
        scope.onChange(() => void this.followScope(scope));
      }
    }
    const listed = Array.isArray(this.namespaces) ? this.namespaces : [];
    const nss = listed.length ? listed : [undefined];
    const accept = scope ? (o: KObject) => scope.has(o.metadata.namespace) : undefined;
    for (const kind of WATCHED_KINDS) {
      // One informer per namespace keeps RBAC namespace-scoped when namespaces are configured.
      for (const ns of nss) {
        const inf = new Informer<KObject>(this.clients.control, resourcePath(KPROMO_TYPES[kind], ns), this.log, {
          accept,
        });
        inf.on((type, obj) => {
          if (kind === 'Application') this.appsByWorkload = undefined;
          if (kind === 'Environment' && type !== 'delete') void this.ensureTarget(obj as Environment);
          this.emitCr({ kind, type, obj });
        });
        this.cr.set(ns ? (`${kind}|${ns}` as KpromoKind) : kind, inf);
        inf.start();
      }
    }
    // Not waited for: readiness never depends on Events, and without them callers ask the apiserver.
    this.kpromoEvents ??= new KpromoEventCache(this.clients.control, this.log);
    this.kpromoEvents.start(nss, accept);
    await Promise.all(
      [...this.cr].map(([key, inf]) =>
        this.optionalKinds.has(key.split('|')[0] as KpromoKind)
          ? settledOrRefused(inf, signal)
          : inf.waitForSync(signal),
      ),
    );
  }

  /** Events about a kpromo object, from the watch; undefined when not known here (ask the apiserver). */
  recentEvents(namespace: string, kind: string, name: string): KpromoEvent[] | undefined {
    return this.kpromoEvents?.about(namespace, kind, name);
  }

  /**
   * Namespaces joined or left the shard: every kind lists again, and the differences are announced
   * only once all kinds have listed, so a plan of a joining namespace is never reconciled while its
   * Applications or Environments are still missing from the cache (it would fail as invalid).
   */
  private async followScope(scope: NamespaceScope): Promise<void> {
    if (this.stopped) return;
    const t0 = performance.now();
    this.held ??= [];
    this.holds++;
    try {
      await Promise.all([...this.cr.values()].map((i) => i.relistNow()));
      this.log?.info?.(
        { namespaces: scope.list(), ms: Math.round(performance.now() - t0) },
        'shard namespaces changed; kpromo objects relisted',
      );
    } finally {
      if (--this.holds === 0) {
        const held = this.held ?? [];
        this.held = undefined;
        for (const e of held) this.emit(e);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    if (!Array.isArray(this.namespaces)) this.namespaces.stop();
    for (const i of this.cr.values()) i.stop();
    this.kpromoEvents?.stop();
    this.kpromoEvents = undefined;
    for (const t of this.targets.values()) {
      for (const i of t.workloads.values()) i.stop();
      t.helmReleases?.stop();
    }
    for (const c of this.crdWatches.values()) c.stop();
    this.crdWatches.clear();
  }

  /**
   * Start workload informers for an Environment's cluster+namespace (idempotent). Concurrent callers
   * share one start and all resolve once it knows which CRD-backed kinds are served, so a caller
   * that then waits for the informers never misses one added for a CRD (e.g. Rollouts).
   */
  ensureTarget(env: Environment): Promise<void> {
    // A fleet watches each of its clusters.
    if (isFleet(env)) return Promise.all(fleetTargets(env).map((t) => this.ensureTarget(t.env))).then(() => {});
    // Never touch a cluster the Environment may not use (config clusterAccess); environmentState says why.
    if (this.clients.refusal(env)) return Promise.resolve();
    const key = targetKey(env);
    let starting = this.targetStarts.get(key);
    if (!starting) {
      starting = this.startTarget(env, key).finally(() => this.targetStarts.delete(key));
      this.targetStarts.set(key, starting);
    }
    return starting;
  }

  private async startTarget(env: Environment, key: string): Promise<void> {
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
    // Only what the controller reads of a workload is kept (each kind's `slim`); listed items carry no
    // kind, so it is set here for verdicts that go by it.
    const workloads = (k: CachedWorkloadKind) =>
      new Informer<Workload>(rest, resourcePath(k.resource, ns), this.log, {
        transform: (o) => k.slim(o.kind ? o : { ...o, kind: k.kind }),
      });
    const t: TargetInformers = { workloads: new Map() };
    for (const k of this.workloadKinds)
      if (!isCustomResource(k.resource)) t.workloads.set(k.kind, wire(workloads(k), 'Workload'));
    this.targets.set(key, t);
    // CRD-backed resources may be installed (or removed) any time: one watch per CRD and cluster
    // starts and stops the informers of its namespaces; no restart needed.
    const ck = clusterKey(env);
    const crdWatch = (r: ResourceType) => {
      const k = `${ck}|${crdNameOf(r)}`;
      let w = this.crdWatches.get(k);
      if (!w) {
        w = new CrdWatch(rest, r, this.discoveryMaxMs, this.log);
        this.crdWatches.set(k, w);
      }
      return w;
    };
    const follows: Array<() => void> = [];
    const watches: CrdWatch[] = [];
    const hr = crdWatch(HELMRELEASE);
    watches.push(hr);
    follows.push(() => {
      if (this.stopped || this.targets.get(key) !== t) return;
      if (hr.served && !t.helmReleases) {
        t.helmReleases = wire(
          new Informer<HelmRelease>(rest, resourcePath(HELMRELEASE, ns), this.log, { transform: slimHelmRelease }),
          'HelmRelease',
        );
        this.log?.info?.({ environment: env.metadata.name }, 'HelmRelease CRD served; watching HelmReleases');
      } else if (!hr.served && t.helmReleases) {
        t.helmReleases.stop();
        t.helmReleases = undefined;
        this.log?.info?.({ environment: env.metadata.name }, 'HelmRelease CRD gone; stopped watching HelmReleases');
      } else return;
      this.emit({ kind: 'Target', type: 'update', workloadKey: key });
    });
    for (const k of this.workloadKinds) {
      if (!isCustomResource(k.resource)) continue;
      const w = crdWatch(k.resource);
      watches.push(w);
      follows.push(() => {
        if (this.stopped || this.targets.get(key) !== t) return;
        const running = t.workloads.get(k.kind);
        if (w.served && !running) {
          t.workloads.set(k.kind, wire(workloads(k), 'Workload'));
          this.log?.info?.({ environment: env.metadata.name }, `${k.kind} CRD served; watching ${k.resource.plural}`);
        } else if (!w.served && running) {
          running.stop();
          t.workloads.delete(k.kind);
          this.log?.info?.(
            { environment: env.metadata.name },
            `${k.kind} CRD gone; stopped watching ${k.resource.plural}`,
          );
        } else return;
        this.emit({ kind: 'Target', type: 'update', workloadKey: key });
      });
    }
    for (const [i, w] of watches.entries()) w.subscribe(follows[i]);
    // As before, ensureTarget returns knowing which CRDs are served (bounded wait).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(watches.map((w) => w.ready)),
      new Promise<void>((r) => (timer = setTimeout(r, 30_000))),
    ]);
    clearTimeout(timer);
    for (const f of follows) f();
  }

  /** Waits until the workload informers of an Environment have listed once. */
  async waitForEnvironment(env: Environment, signal?: AbortSignal): Promise<void> {
    // A fleet has no target of its own: it waits for each of its clusters' (as ensureTarget starts them).
    if (isFleet(env)) {
      await Promise.all(fleetTargets(env).map((t) => this.waitForEnvironment(t.env, signal)));
      return;
    }
    const refused = this.clients.refusal(env);
    if (refused) throw new Error(refused);
    await this.ensureTarget(env);
    const t = this.targets.get(targetKey(env));
    if (!t) throw new Error(`Environment ${env.metadata.name}: cluster unreachable`);
    await Promise.all(
      [...t.workloads].map(([kind, inf]) =>
        ESSENTIAL_KINDS.has(kind) ? inf.waitForSync(signal) : settledOrRefused(inf, signal),
      ),
    );
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
  /**
   * Applications of `namespace` that name a workload `name` (any kind, any environment): the only
   * ones a workload event can concern. Indexed, so the thousands of workload events of a start or a
   * plan do not each scan every Application.
   */
  applicationsNamingWorkload(namespace: string, name: string): readonly Application[] {
    this.appsByWorkload ??= indexByWorkloadName(this.applications());
    return this.appsByWorkload.get(workloadIndexKey(namespace, name)) ?? [];
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
  lineStops(ns?: string) {
    return this.listCr<LineStop>('LineStop', ns);
  }
  orgPolicies(ns?: string) {
    return this.listCr<OrgPolicy>('OrgPolicy', ns);
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
  /**
   * An Environment's refusal and target key, computed once per Environment object (informers replace
   * the object on every change): candidate computation asks for them for every Application.
   */
  private readonly envKeyMemo = new WeakMap<Environment, { refused: boolean; target: string }>();
  private envKeys(env: Environment): { refused: boolean; target: string } {
    let k = this.envKeyMemo.get(env);
    if (!k) {
      k = { refused: !!this.clients.refusal(env), target: targetKey(env) };
      this.envKeyMemo.set(env, k);
    }
    return k;
  }
  changedSince(env: Environment, cursor?: number): { cursor: number; applications?: readonly Application[] } {
    // A fleet's versions are read afresh (per cluster, each reading is cached by workload object).
    if (isFleet(env)) return { cursor: 0 };
    const k = this.envKeys(env);
    if (k.refused) return { cursor: 0 };
    const changes = this.changeLog(k.target).since(cursor);
    if (!changes.names) return { cursor: changes.cursor };
    const ns = env.metadata.namespace ?? '';
    const applications: Application[] = [];
    for (const name of new Set(changes.names)) applications.push(...this.applicationsNamingWorkload(ns, name));
    return { cursor: changes.cursor, applications };
  }
  getWorkload(env: Environment, kind: string, name: string) {
    // Another namespace's Environment may watch the same cluster+namespace; this one may still not read it.
    const k = this.envKeys(env);
    if (k.refused) return undefined;
    const t = this.targets.get(k.target);
    if (!t) {
      void this.ensureTarget(env);
      return undefined;
    }
    return t.workloads.get(kind)?.get(env.spec.namespace, name);
  }
  getHelmRelease(env: Environment, name: string) {
    const k = this.envKeys(env);
    if (k.refused) return undefined;
    return this.targets.get(k.target)?.helmReleases?.get(env.spec.namespace, name);
  }
  environmentSynced(env: Environment): boolean {
    if (isFleet(env)) return fleetTargets(env).every((t) => this.environmentSynced(t.env));
    const k = this.envKeys(env);
    if (k.refused) return false;
    const t = this.targets.get(k.target);
    return !!t && this.workloadsSettled(t);
  }
  private workloadsSettled(t: TargetInformers): boolean {
    for (const [kind, inf] of t.workloads) if (!settled(kind, inf)) return false;
    return true;
  }
  /** What the cache knows about an Environment's cluster+namespace watch (for Environment.status). */
  environmentState(env: Environment): EnvironmentState {
    if (isFleet(env))
      return fleetState(fleetTargets(env).map((t) => ({ cluster: t.cluster, state: this.environmentState(t.env) })));
    const refused = this.clients.refusal(env);
    if (refused) return { synced: false, helmReleases: false, error: refused, reason: CLUSTER_NOT_ALLOWED };
    const key = targetKey(env);
    const t = this.targets.get(key);
    if (!t) {
      const error = this.targetErrors.get(key);
      if (!error) void this.ensureTarget(env);
      return { synced: false, helmReleases: false, ...(error ? { error } : {}) };
    }
    const watchError = [...t.workloads.values(), t.helmReleases].map((i) => i?.lastError).find((x) => x !== undefined);
    return {
      synced: this.workloadsSettled(t),
      helmReleases: !!t.helmReleases,
      workloadKinds: [...t.workloads.keys()],
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

/**
 * A fleet's watch state from its clusters': synced when every cluster is, the first cluster's error
 * (named) when one has one, the kinds watched in every cluster.
 */
export function fleetState(states: ReadonlyArray<{ cluster: string; state: EnvironmentState }>): EnvironmentState {
  const failing = states.find((s) => s.state.error);
  const watching = states.find((s) => s.state.watchError);
  const kinds = states.map((s) => new Set(s.state.workloadKinds ?? []));
  return {
    synced: states.every((s) => s.state.synced),
    helmReleases: states.length > 0 && states.every((s) => s.state.helmReleases),
    workloadKinds: [...(kinds[0] ?? [])].filter((k) => kinds.every((ks) => ks.has(k))),
    ...(failing
      ? {
          error: `cluster ${failing.cluster}: ${failing.state.error}`,
          ...(failing.state.reason ? { reason: failing.state.reason } : {}),
        }
      : {}),
    ...(watching ? { watchError: `cluster ${watching.cluster}: ${watching.state.watchError}` } : {}),
  };
}
