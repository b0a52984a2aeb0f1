import type { Application, Environment, PromotionFlow, PromotionPlan } from '@kpromo/api';
import { app as appFixture, dg, env as envFixture, flow as flowFixture } from '@kpromo/test-harness/objects';
import type { Workload } from '../../src/kube/cacheView.js';
import type { EventRecorder } from '../../src/kube/events.js';
import { MemoryCache } from '../../src/kube/memoryCache.js';
import { DEPLOYMENT, KPROMO_TYPES, resourcePath } from '../../src/kube/paths.js';
import type { KubeRest } from '../../src/kube/rest.js';
import type { PromotionDeps } from '../../src/reconcile/plan/index.js';
import { loadPlugins } from '../../src/reconcile/plugins.js';
import { builtinWorkloadKinds } from '../../src/rollout/registry.js';
import { FakeKube } from './fakeKube.js';

/** One entry per side effect or emission of a reconcile, in the order they happened. */
export type TraceEntry =
  | { op: 'status'; plan: string; status: unknown }
  | { op: 'write'; cluster: string; method: string; path: string; body: unknown }
  | { op: 'copy'; from: string; to: string; expectedDigest?: string }
  | { op: 'commit'; repository: string; path: string; tag: string; message: string; auth?: unknown }
  | { op: 'event'; type: string; reason: string; message: string }
  | { op: 'notify'; event: unknown };

/** A MemoryCache whose workloads are the objects of the fake workload clusters (as informers would show them). */
class WorldCache extends MemoryCache {
  constructor(private readonly clusters: Map<string, FakeKube>) {
    super();
  }
  override getWorkload(env: Environment, kind: string, name: string): Workload | undefined {
    const type = builtinWorkloadKinds.get(kind)?.resource ?? DEPLOYMENT;
    const o = this.clusters.get(env.metadata.name)?.objects.get(resourcePath(type, env.spec.namespace, name));
    return o ? (structuredClone(o) as Workload) : undefined;
  }
}

/**
 * A control cluster, workload clusters (one per Environment) and fake registries/git, wired into
 * the dependencies of reconcilePlan. Workloads roll out at once unless `hold` says otherwise.
 */
export function planWorld(o: { envs?: Environment[]; apps?: Application[]; flow?: PromotionFlow } = {}) {
  const trace: TraceEntry[] = [];
  const control = new FakeKube('control', (method, path, body) => {
    if (method === 'PUT' && path.endsWith('/status') && path.includes('/promotionplans/'))
      trace.push({ op: 'status', plan: path.split('/').at(-2)!, status: structuredClone(body) });
    else trace.push({ op: 'write', cluster: 'control', method, path, body: structuredClone(body) });
  });
  const clusters = new Map<string, FakeKube>();
  const cache = new WorldCache(clusters);
  cache.envs = o.envs ?? [envFixture('dev'), envFixture('stable'), envFixture('prod')];
  cache.apps = o.apps ?? [appFixture('cart'), appFixture('search')];
  // Its tag pattern admits the short tags (v1, v2, …) these worlds promote.
  cache.flowList = [o.flow ?? flowFixture(['dev', 'stable', 'prod'], { tagPattern: '^v\\d+' })];
  const held = new Set<string>();
  for (const e of cache.envs) {
    const k = new FakeKube(e.metadata.name, (method, path, body) => {
      trace.push({ op: 'write', cluster: e.metadata.name, method, path, body: structuredClone(body) });
      // The workload controller: a patched Deployment rolls out at once unless held.
      const w = k.objects.get(path) as Workload | undefined;
      if (w && path.includes('/deployments/') && !held.has(`${e.metadata.name}/${w.metadata.name}`))
        queueMicrotask(() => settle(e.metadata.name, w.metadata.name));
    });
    clusters.set(e.metadata.name, k);
  }
  const workloadPath = (envName: string, name: string) =>
    resourcePath(DEPLOYMENT, cache.envs.find((e) => e.metadata.name === envName)!.spec.namespace, name);

  /** A ready Deployment running `image` in an Environment. */
  function deploy(envName: string, name: string, image: string) {
    clusters.get(envName)!.seed(workloadPath(envName, name), {
      kind: 'Deployment',
      metadata: { name, generation: 1 },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: { spec: { containers: [{ name: 'main', image }] } },
      },
      status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 },
    });
  }
  /** Marks a Deployment rolled out (as its controller would once the new pods are available). */
  function settle(envName: string, name: string) {
    const k = clusters.get(envName)!;
    const w = k.objects.get(workloadPath(envName, name)) as Workload | undefined;
    if (!w) return;
    w.metadata.generation = (w.metadata.generation ?? 1) + 1;
    w.status = {
      observedGeneration: w.metadata.generation,
      replicas: 1,
      updatedReplicas: 1,
      readyReplicas: 1,
      availableReplicas: 1,
    };
  }
  /** Patched Deployments in this Environment stay rolling out until `release`. */
  function hold(envName: string, name: string) {
    held.add(`${envName}/${name}`);
    const w = clusters.get(envName)!.objects.get(workloadPath(envName, name)) as Workload | undefined;
    if (w) w.status = { ...w.status, observedGeneration: 1, replicas: 2, updatedReplicas: 0, availableReplicas: 1 };
  }
  function release(envName: string, name: string) {
    held.delete(`${envName}/${name}`);
    settle(envName, name);
  }

  let clock = new Date('2026-12-02T10:00:00Z');
  const copyFailures: Array<Error & { code?: string }> = [];
  let commits = 0;
  /** What the fake registries answer for `<host>/<repository>:<tag>`: a digest, or the fault they raise; no entry: no such tag. */
  const tags = new Map<string, string | Error>();
  const builtins = loadPlugins();
  const deps: PromotionDeps = {
    cache,
    control: control.rest,
    clientFor: async (env: Environment): Promise<KubeRest> => clusters.get(env.metadata.name)!.rest,
    copyImage: async (req) => {
      trace.push({
        op: 'copy',
        from: `${req.source.host}/${req.source.repository}@${req.source.reference}`,
        to: `${req.target.host}/${req.target.repository}:${req.target.tag}`,
        expectedDigest: req.expectedDigest,
      });
      const f = copyFailures.shift();
      if (f) throw f;
      return { digest: req.expectedDigest ?? dg('f'), blobsCopied: 2, blobsSkipped: 1, blobsMounted: 0 };
    },
    commitImageChange: async (req) => {
      trace.push({
        op: 'commit',
        repository: req.repository,
        path: req.path,
        tag: req.tag,
        message: req.message,
        auth: req.auth,
      });
      return { commit: `${String(++commits).padStart(2, '0')}${'c'.repeat(38)}`, changed: true };
    },
    resolveDigest: async (ep, repository, tag) => {
      const d = tags.get(`${ep.host}/${repository}:${tag}`);
      if (d instanceof Error) throw d;
      return d;
    },
    readSecret: async () => undefined,
    events: {
      record: async (_obj: unknown, type: string, reason: string, message: string) => {
        trace.push({ op: 'event', type, reason, message });
      },
    } as unknown as EventRecorder,
    notify: (event) => trace.push({ op: 'notify', event }),
    now: () => clock,
    maxAttempts: 3,
    claims: new Map(),
    // The built-ins, as the runtime hands them in; a test swaps in a plugin's registry.
    deliveryMethods: builtins.deliveryMethods,
    workloadKinds: builtins.workloadKinds,
    checkProviders: builtins.checkProviders,
  };

  const planPath = (name: string) => resourcePath(KPROMO_TYPES.PromotionPlan, 'ns', name);
  /**
   * Creates a plan (approved by alice unless `approvals` says otherwise) in the control cluster and
   * the cache, its candidates running in the source environment.
   */
  function addPlan(name: string, spec: Partial<PromotionPlan['spec']> = {}, extra: Partial<PromotionPlan> = {}) {
    const p: PromotionPlan = {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { name, namespace: 'ns', generation: 1, creationTimestamp: '2026-12-02T09:00:00Z' },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: [{ application: 'cart', from: { tag: 'v2', digest: dg('a') }, to: { tag: 'v1', digest: dg('b') } }],
        approvals: [{ user: 'alice' }],
        ...spec,
      },
      ...extra,
    };
    // A candidate is the version running in the source (the controller checks it when the plan starts).
    if ((p.spec.action ?? 'promote') === 'promote')
      for (const c of p.spec.candidates)
        deploy(
          p.spec.from,
          c.application,
          `reg-${p.spec.from}.local:5000/shop/${c.application}:${c.from.tag}@${c.from.digest}`,
        );
    const stored = control.seed(planPath(name), p);
    syncPlan(name, stored);
    return stored;
  }
  /** The cache sees the control cluster's current plans (as the informer would, eventually). */
  function syncPlan(name: string, p = control.objects.get(planPath(name)) as PromotionPlan | undefined) {
    cache.planList = cache.planList.filter((x) => x.metadata.name !== name);
    if (p) cache.planList.push(structuredClone(p));
  }
  const plan = (name: string) => control.objects.get(planPath(name)) as PromotionPlan;

  return {
    trace,
    control,
    clusters,
    cache,
    deps,
    deploy,
    hold,
    release,
    addPlan,
    syncPlan,
    plan,
    planPath,
    failCopy: (e: Error & { code?: string }) => copyFailures.push(e),
    /** Sets what a fake registry answers for `<host>/<repository>:<tag>` (an Error: the registry faults). */
    tagDigest: (ref: string, digest: string | Error) => tags.set(ref, digest),
    tick: (ms: number) => {
      clock = new Date(clock.getTime() + ms);
    },
  };
}

export type PlanWorld = ReturnType<typeof planWorld>;
