/**
 * Benchmark (a script, not a test): the controller at the size of a large platform (issue 19), on
 * the real local control plane.
 *   node --expose-gc --import tsx controller/bench/scale.ts [apps=5000] [--quick] [--keep] [--reuse ns,appsPrefix]
 *     [--plan-apps 500] [--concurrency 16] [--seed-concurrency 24] [--churn-per-second 2]
 *     [--quiet-seconds 60] [--idle-seconds 120] [--iterations 30] [--profile DIR] [--skip-plans]
 *     [--compiled-only [--with-churn] [--with-plan] [--memory-limit MiB] [--node-flags "…"] [--heap-snapshots DIR]]
 *   (`yarn bench --only scale`, BENCH_ARGS_SCALE="--quick")
 * Seeds N Applications (control cluster dev) and one Deployment per app in each of 5 Environments
 * over the 3 clusters: dev and qa in cluster dev, stable and preprod in cluster stable, prod in
 * cluster prod, each Environment in its own namespace (<appsPrefix>-<env>); kwok runs the pods. One
 * PromotionFlow dev -> qa -> stable -> preprod -> prod over every app. Versions: app i runs v1.1.0 in
 * the first i % 10 stages and v1.0.0 after them (pinned digests nobody pulls), so each transition
 * has a tenth of the apps as candidates. The first --plan-apps apps run images pushed to a local
 * source registry in dev (re-pointed every run: the registries are throwaway) and are promoted to
 * qa (target registry) by one plan. Seeding runs in a child process (its garbage is not in our RSS).
 *
 * Prints, each figure with its target (issue 19):
 *  1. cold start: startController() to ready (every informer listed), then until the initial
 *     reconciles settle; the controller's requests by verb meanwhile;
 *  2. RSS and heap after GC (this process; the controller's share) and the production bundle's RSS
 *     as its own process;
 *  3. the controller's apiserver requests per minute by verb (KubeRest calls of its own clients and
 *     its watches; the benchmark's own clients are left out and the churn runs in a child process):
 *     quiet, with churn (image updates and 1<->2 scaling in random non-plan apps), during the plan;
 *  4. candidates for every transition from the cache (in-process diff()) and through GET /api/v1/diff;
 *  5. the plan end to end (copy, patch, kwok rollout) with its concurrency, per-app overhead and
 *     status writes (statusWriteLog.ts);
 *  5b. with --compiled-only --with-plan: the same plan run by the production bundle as its own
 *     process (in the --memory-limit cgroup when given): its time, RSS and memory-limit hits;
 *  6. MCP list/diff/state p50/p95 over the controller's Streamable HTTP door;
 *  7. the Backstage releases page's controller calls (ReleasesPage: GET /environments and one page
 *     of 100 applications, filtered server-side): first page, a middle page, name and team filters;
 * The 500 rollouts of the plan wait on the dev cluster's kube-controller-manager (20 requests/s by
 * default, measured as the reset between two plans: the same rollouts without the controller):
 * `yarn cluster stop && KPROMO_KCM_QPS=100 yarn cluster start` runs it at 100 as large clusters do.
 * Asserts nothing. Cleans up unless --keep (or --reuse).
 * --quick: 300 apps, a 50-app plan, short windows.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { PromotionPlan } from '@kpromo/api';
import {
  applyCrds,
  type ControllerProcess,
  defaultKubeconfigPath,
  ensureClusters,
  kubeConfigFor,
  nodeMemoryUnder,
  pushTestImage,
  runningControllerManagerQps,
  startControllerProcess,
  startRegistry,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  callApi,
  controllerConfig,
  crs,
  deleteNs,
  ensureNs,
  getPlan,
  isTerminalPlan,
  restFor,
  runNamespaces,
  TEST_ADMIN,
  testTokensFile,
  withShown,
} from '@kpromo/test-harness/controller';
import { call, httpClient, ok } from '@kpromo/test-harness/mcpClient';
import pLimit from 'p-limit';
import { createPlan, diff } from '../src/api/promotions.js';
import type { Caller } from '../src/auth/identity.js';
import { DEPLOYMENT, resourcePath } from '../src/kube/paths.js';
import type { KubeRest } from '../src/kube/rest.js';
import { createLogger } from '../src/observability/logger.js';
import { metrics } from '../src/observability/metrics.js';
import { startController } from '../src/runtime.js';
import {
  buildBundle,
  byVerb,
  countByVerb,
  gcStats,
  pct,
  processMemory,
  type Seen,
  settle,
  since,
  sleep,
  startRequestLog,
  topPaths,
} from './requestLog.js';
import { StatusWriteLog } from './statusWriteLog.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    /** `--reuse ns,appsPrefix`: measure again on namespaces kept by an earlier run with the same N. */
    reuse: { type: 'string' },
    'plan-apps': { type: 'string' },
    /** The flow's concurrency (apps of the plan promoted at once); `16,32` runs one plan at each. */
    concurrency: { type: 'string', default: '16,32' },
    'seed-concurrency': { type: 'string', default: '24' },
    'churn-per-second': { type: 'string', default: '2' },
    'quiet-seconds': { type: 'string' },
    'idle-seconds': { type: 'string' },
    /** Calls per measured endpoint or tool. */
    iterations: { type: 'string' },
    /** `--profile DIR`: CPU profiles of the measured sections (start, candidates, releases, plans, MCP) to DIR. */
    profile: { type: 'string' },
    /**
     * With --reuse: leave out the plans (section 5) and their setup (registries, image pushes,
     * re-pointing qa: ~15 min); MCP `state` of a plan then reads the newest plan of the kept seed.
     */
    'skip-plans': { type: 'boolean', default: false },
    /** With --reuse: only section 2b (the production bundle's start and RSS on the kept seed). */
    /** `--node-flags "--a --b"`: node/V8 flags for 2b's compiled controller process. */
    'node-flags': { type: 'string' },
    /** With --compiled-only: run the churn meanwhile. */
    'with-churn': { type: 'boolean', default: false },
    /**
     * With --compiled-only: after the steady figures, a plan of --plan-apps apps dev -> qa through
     * the compiled controller's HTTP API (its time, RSS and memory-limit hits while it runs).
     */
    'with-plan': { type: 'boolean', default: false },
    /** `--heap-snapshots DIR`: 2b writes V8 heap snapshots of the compiled controller to DIR, 5 s after ready and at the end. */
    'heap-snapshots': { type: 'string' },
    'compiled-only': { type: 'boolean', default: false },
    /**
     * `--memory-limit 512`: 2b runs the compiled controller in a memory cgroup of that many MiB, as
     * the chart's `resources.limits.memory` (512Mi) does; Node sizes V8's heap from it (root only).
     */
    'memory-limit': { type: 'string' },
    /** Internal: `--seed ns,appsPrefix` seeds and exits (a child). */
    seed: { type: 'string' },
    /** Internal: `--churn ns,appsPrefix` changes workloads until SIGTERM (a child). */
    churn: { type: 'string' },
  },
});
const QUICK = values.quick;
const N = Number(positionals[0] ?? (QUICK ? 300 : 5000));
const PLAN = Math.min(N, Number(values['plan-apps'] ?? (QUICK ? 50 : 500)));
/** The flow's concurrency for each plan (one plan per setting). */
const CONCURRENCY = values.concurrency.split(',').map(Number);
const SEED_CONCURRENCY = Number(values['seed-concurrency']);
const CHURN_RATE = Number(values['churn-per-second']);
const QUIET_S = Number(values['quiet-seconds'] ?? (QUICK ? 20 : 60));
const IDLE_S = Number(values['idle-seconds'] ?? (QUICK ? 30 : 120));
const ITER = Number(values.iterations ?? (QUICK ? 10 : 30));
const PROGRESS_MS = 30_000;

/** Where each Environment runs: two per cluster where there are two, each in its own namespace. */
const ENVS = [
  { name: 'dev', cluster: 'dev' },
  { name: 'qa', cluster: 'dev' },
  { name: 'stable', cluster: 'stable' },
  { name: 'preprod', cluster: 'stable' },
  { name: 'prod', cluster: 'prod' },
] as const;
type Env = (typeof ENVS)[number];
const CLUSTERS = ['dev', 'stable', 'prod'] as const;
const PAIRS = ENVS.slice(1).map((e, i) => ({ from: ENVS[i].name, to: e.name }));
const envNs = (appsPrefix: string, e: Env) => `${appsPrefix}-${e.name}`;

const width = Math.max(4, String(N - 1).length);
const names = Array.from({ length: N }, (_, i) => `app-${String(i).padStart(width, '0')}`);
const planNames = names.slice(0, PLAN);
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
/** v1.1.0 in the first i % 10 stages, v1.0.0 after (a tenth of the apps are candidates per transition). */
const tagOf = (i: number, stage: number) => (stage < i % 10 ? 'v1.1.0' : 'v1.0.0');
const image = (app: string, tag: string) => `registry.bench.invalid/shop/${app}:${tag}@sha256:${sha(`${app}:${tag}`)}`;

const mib = (b: number) => (b / 2 ** 20).toFixed(0);
const kib = (b: number) => (b / 1024).toFixed(0);
const secs = (ms: number) => (ms / 1000).toFixed(1);
/** Runs `fn` every PROGRESS_MS until the returned function is called. */
const every = (fn: () => void, ms = PROGRESS_MS) => {
  const t = setInterval(fn, ms);
  return () => clearInterval(t);
};
/** Retries a transient failure (a busy apiserver while seeding tens of thousands of objects). */
async function retry<T>(what: string, fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let a = 1; ; a++) {
    try {
      return await fn();
    } catch (e) {
      if (a >= attempts) throw new Error(`${what}: ${String(e)}`);
      await sleep(500 * 2 ** a);
    }
  }
}

/** Where the controller's status writes are tallied by kind and cause now (statusWriteLog.ts), if anywhere. */
let counting: StatusWriteLog | undefined;
const requests = startRequestLog((method, path, body) => {
  const status = method === 'PUT' && /\/(\w+)\/([^/]+)\/status$/.exec(path);
  if (counting && status) counting.record(status[1], status[2], (body as { status?: Record<string, unknown> }).status);
});
const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
/** The benchmark's own clients (left out of the counts). */
const rests = Object.fromEntries(CLUSTERS.map((c) => [c, requests.ignore(restFor(kubeconfig, c))])) as Record<
  (typeof CLUSTERS)[number],
  KubeRest
>;
const dev = rests.dev;
const restOf = (e: Env) => rests[e.cluster];
/** Deployments of an Environment; with `limit`, the first ones by name (the plan's apps are the first names). */
const deploymentsOf = (appsPrefix: string, e: Env, limit?: number) =>
  restOf(e).get<{
    items: Array<{
      metadata: { name: string; generation?: number };
      status?: { availableReplicas?: number; updatedReplicas?: number; observedGeneration?: number };
    }>;
  }>(`${resourcePath(DEPLOYMENT, envNs(appsPrefix, e))}${limit ? `?limit=${limit}` : ''}`);
const rolledOut = (d: Awaited<ReturnType<typeof deploymentsOf>>['items'][number]) =>
  (d.status?.availableReplicas ?? 0) >= 1 && d.status?.observedGeneration === d.metadata.generation;

// ---- seeding (child) ----------------------------------------------------------------------------
async function seed(NS: string, appsPrefix: string): Promise<void> {
  await ensureNs(dev, NS);
  for (const e of ENVS) await ensureNs(restOf(e), envNs(appsPrefix, e));
  const limit = pLimit(SEED_CONCURRENCY);
  const total = N * (ENVS.length + 1);
  let done = 0;
  const t0 = performance.now();
  const progress = () =>
    console.log(
      `  seeding: ${done}/${total} objects applied in ${secs(performance.now() - t0)} s (${((done * 1000) / (performance.now() - t0)).toFixed(1)}/s)`,
    );
  const stop = every(progress);
  const counted = (what: string, fn: () => Promise<unknown>) =>
    limit(async () => {
      await retry(what, fn);
      done++;
    });
  // App by app over every cluster, so the three apiservers work at once.
  await Promise.all(
    names.flatMap((app, i) => [
      ...ENVS.map((e, stage) =>
        counted(`${e.name}/${app}`, () =>
          applyDeployment(restOf(e), envNs(appsPrefix, e), app, image(app, tagOf(i, stage))),
        ),
      ),
      counted(`Application ${app}`, () => {
        const a = crs.application(NS, app, `team-${i % 20}`);
        return applyCr(dev, { ...a, metadata: { ...a.metadata, labels: { tier: i % 3 ? 'web' : 'batch' } } });
      }),
    ]),
  );
  stop();
  progress();
  // kwok makes every pod Ready; the controller should start on a quiet system.
  let available = 0;
  const stopWait = every(() => console.log(`  seeding: ${available}/${N * ENVS.length} Deployments available`));
  await waitFor(
    'all Deployments available',
    async () => {
      const counts = await Promise.all(
        ENVS.map(async (e) => (await deploymentsOf(appsPrefix, e)).items.filter(rolledOut).length),
      );
      available = counts.reduce((a, b) => a + b, 0);
      return available >= N * ENVS.length;
    },
    90 * 60_000,
    15_000,
  );
  stopWait();
}

// ---- churn (child) ------------------------------------------------------------------------------
/** Image updates and 1<->2 scaling in random apps that are not in the plan, CHURN_RATE a second. */
async function churn(appsPrefix: string): Promise<void> {
  let stopping = false;
  process.on('SIGTERM', () => {
    stopping = true;
  });
  const tags = new Map<string, string>();
  const scaled = new Set<string>();
  let images = 0;
  let scales = 0;
  let errors = 0;
  const t0 = performance.now();
  const pool = N - PLAN;
  for (let n = 0; !stopping && pool > 0; n++) {
    const i = PLAN + Math.floor(Math.random() * pool);
    const stage = Math.floor(Math.random() * ENVS.length);
    const e = ENVS[stage];
    const app = names[i];
    const key = `${e.name}/${app}`;
    const path = resourcePath(DEPLOYMENT, envNs(appsPrefix, e), app);
    try {
      if (n % 2 === 0) {
        const tag = (tags.get(key) ?? tagOf(i, stage)) === 'v1.1.0' ? 'v1.0.0' : 'v1.1.0';
        tags.set(key, tag);
        await restOf(e).mergePatch(path, {
          spec: { template: { spec: { containers: [{ name: 'main', image: image(app, tag) }] } } },
        });
        images++;
      } else {
        const up = !scaled.has(key);
        if (up) scaled.add(key);
        else scaled.delete(key);
        await restOf(e).mergePatch(path, { spec: { replicas: up ? 2 : 1 } });
        scales++;
      }
    } catch {
      errors++;
    }
    await sleep(Math.max(0, t0 + ((n + 1) * 1000) / CHURN_RATE - performance.now()));
  }
  // Back to one replica each, so a kept seed stays as seeded (image changes stay: they are versions).
  for (const key of scaled) {
    const [envName, app] = key.split('/');
    const e = ENVS.find((x) => x.name === envName)!;
    await restOf(e)
      .mergePatch(resourcePath(DEPLOYMENT, envNs(appsPrefix, e), app), { spec: { replicas: 1 } })
      .catch(() => undefined);
  }
  console.log(
    `  churn: ${images} image updates and ${scales} scale changes in ${secs(performance.now() - t0)} s (${errors} failed)`,
  );
}

if (values.seed) {
  const [NS, appsPrefix] = values.seed.split(',');
  await seed(NS, appsPrefix);
  process.exit(0);
}
if (values.churn) {
  await churn(values.churn.split(',')[1]);
  process.exit(0);
}

// ---- the benchmark ------------------------------------------------------------------------------
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}
/** Self time by function, most first: where a section's CPU went (this process runs the controller). */
function topSelf(profile: CpuProfile, k = 10): string {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const f = frames.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    if (!f || f.functionName === '(idle)') return;
    total += us;
    const where = f.url
      ? ` ${f.url.replace(/^.*\/(node_modules|controller|packages)\//, '$1/')}:${f.lineNumber + 1}`
      : '';
    const key = `${f.functionName || '(anonymous)'}${where}`;
    self.set(key, (self.get(key) ?? 0) + us);
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(
      ([f, us]) =>
        `     ${(us / 1000).toFixed(0).padStart(6)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${f}`,
    )
    .join('\n')
    .concat(`\n     (${(total / 1000).toFixed(0)} ms on the CPU in all, idle left out)`);
}
/** --profile: sampling CPU profiles of this process, one per section (start() ... stop(label)). */
async function openProfiler(dir: string) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  return {
    start: () => session.post('Profiler.start'),
    async stop(label: string) {
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
      writeFileSync(join(dir, `scale-${label}.cpuprofile`), JSON.stringify(profile));
      console.log(
        `   CPU profile of ${label} (self time, top 10; ${dir}/scale-${label}.cpuprofile):\n${topSelf(profile)}`,
      );
    },
  };
}
const profiler = values.profile ? await openProfiler(values.profile) : undefined;

/** The kubeconfig's admin, calling the API in-process (checks run as SubjectAccessReviews). */
const BENCH_ADMIN: Caller = { username: 'kpromo-admin', groups: ['system:masters'], source: 'local' };
const apiservers = new Set(CLUSTERS.map((c) => new URL(rests[c].kc.getCurrentCluster()?.server ?? '').origin));
/** The controller's apiserver requests: its KubeRest calls (ours are ignored) and its watches (undici). */
const controllerRequests = (t0: number, t1 = Number.POSITIVE_INFINITY): Seen[] => [
  ...since(requests.rest, t0, t1),
  ...since(requests.http, t0, t1).filter((x) => x.watch && apiservers.has(x.origin ?? '')),
];
const nonWatch = (xs: Seen[]) => xs.filter((x) => !x.watch);
const target = (t: string) => `[target ${t}]`;

/** Reconciles so far by kind: count and seconds (the controller's own histogram; it runs in this process). */
async function reconcileTotals(): Promise<Map<string, { n: number; s: number }>> {
  const out = new Map<string, { n: number; s: number }>();
  for (const v of (await metrics.reconcileDuration.get()).values) {
    const kind = String(v.labels.kind);
    const t = out.get(kind) ?? { n: 0, s: 0 };
    if (v.metricName?.endsWith('_count')) t.n = v.value;
    else if (v.metricName?.endsWith('_sum')) t.s = v.value;
    out.set(kind, t);
  }
  return out;
}
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
/**
 * Where the controller's time goes from now on: returns a function that says which reconciles ran
 * (count and seconds by kind) and how long the event loop (shared by the controller and its API) was
 * held up, since this call.
 */
async function busySince(): Promise<() => Promise<string>> {
  const before = await reconcileTotals();
  loopDelay.reset();
  return async () => {
    const parts = [...(await reconcileTotals())]
      .map(([k, a]): [string, number, number] => [k, a.n - (before.get(k)?.n ?? 0), a.s - (before.get(k)?.s ?? 0)])
      .filter(([, n]) => n > 0)
      .sort((x, y) => y[2] - x[2])
      .map(([k, n, sec]) => `${k} ${n} (${sec.toFixed(1)} s)`);
    const ms = (ns: number) => (ns / 1e6).toFixed(0);
    return `reconciles ${parts.join(', ') || 'none'}; event-loop delay p50 ${ms(loopDelay.percentile(50))} / p99 ${ms(loopDelay.percentile(99))} / max ${ms(loopDelay.max)} ms`;
  };
}

/** Spawns this script as a child with `args` (stdout/stderr shared). */
function child(args: string[]): ChildProcess {
  return spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), String(N), ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: process.env,
  });
}
const exited = (c: ChildProcess) =>
  c.exitCode !== null ? Promise.resolve(c.exitCode) : new Promise<number | null>((r) => c.on('close', r));

await ensureClusters();
// The kpromo CRDs (a fresh control plane has none; applying them again changes nothing).
await applyCrds(kubeConfigFor('dev', kubeconfig));
const reused = values.reuse?.split(',');
const namespaces = reused ? { ns: reused[0], apps: reused[1] } : runNamespaces('ctl-scale');
const { ns: NS, apps: APPS } = namespaces;
let ctl: Awaited<ReturnType<typeof startController>> | undefined;
let churner: ChildProcess | undefined;
const registries: Array<{ stop(): Promise<void> }> = [];
/** This run's registries (throwaway: the Environments are pointed at them every run). */
const registryHosts = { source: '', target: '' };

/** The flow over every stage, promoting `concurrency` apps of a plan at once. */
const applyFlow = (concurrency: number) =>
  applyCr(
    dev,
    crs.flow(
      NS,
      'main',
      ENVS.map((e) => e.name),
      { selector: { applications: ['*'] }, concurrency },
    ),
  );

/** Waits until every plan app's Deployment in these Environments runs its latest generation. */
const waitRolledOut = (envs: readonly Env[], what: string) =>
  waitFor(
    what,
    async () => {
      for (const e of envs) {
        // Only the plan's apps (the first names): this process should not hold 5,000-item lists before it measures.
        const ready = new Set((await deploymentsOf(APPS, e, PLAN)).items.filter(rolledOut).map((d) => d.metadata.name));
        if (!planNames.every((a) => ready.has(a))) return false;
      }
      return true;
    },
    15 * 60_000,
    2000,
  );

/** The plan apps' old version in qa: a pinned digest in the target registry nobody pulls. */
async function pointQaAtOldImages(): Promise<void> {
  const limit = pLimit(16);
  const qa = ENVS[1];
  await Promise.all(
    planNames.map((app) =>
      limit(() =>
        applyDeployment(
          dev,
          envNs(APPS, qa),
          app,
          `${registryHosts.target}/qa/shop/${app}:v1.0.0@sha256:${sha(`old:${app}`)}`,
        ),
      ),
    ),
  );
  await waitRolledOut([qa], "the plan's apps rolled out in qa");
}

/**
 * Creates and approves one plan of the plan apps dev -> qa, waits until it ends and prints its
 * figures: time, phases per app, requests, status writes. Returns its name.
 */
async function runPlan(concurrency: number): Promise<string> {
  if (!ctl) throw new Error('no controller');
  const planLog = new StatusWriteLog();
  for (const kind of ['applications', 'environments', 'promotionflows'] as const) {
    const list = await dev.get<{ items: Array<{ metadata: { name: string }; status?: unknown }> }>(
      `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/${kind}`,
    );
    for (const o of list.items) planLog.prime(kind, o.metadata.name, o.status);
  }
  const name = `scale-c${concurrency}-${Date.now().toString(36)}`;
  const query = { namespace: NS, flow: 'main', from: 'dev', to: 'qa', applications: planNames };
  // Approved as shown: the digests the admin's diff answers (what a reviewer would have seen).
  const shown = await diff(ctl.controller.api, BENCH_ADMIN, query);
  const memBefore = process.memoryUsage();
  counting = planLog;
  const tPlan = performance.now();
  const planBusy = await busySince();
  // The API's createPlan as the admin (the HTTP route's function; its schema caps `applications` at 500).
  const created = (
    await createPlan(ctl.controller.api, BENCH_ADMIN, {
      ...query,
      name,
      approve: true,
      expect: Object.fromEntries(shown.candidates.map((c) => [c.application, c.from.digest])),
    })
  ).plan.spec.candidates.length;
  const tCreated = performance.now();
  const cache = ctl.controller.cache;
  let plan: PromotionPlan | undefined;
  const stopProgress = every(() =>
    console.log(
      `  plan: ${plan?.status?.phase ?? 'Pending'} after ${secs(performance.now() - tPlan)} s, apps: ${[
        ...(plan?.status?.apps ?? []).reduce(
          (m, a) => m.set(a.phase, (m.get(a.phase) ?? 0) + 1),
          new Map<string, number>(),
        ),
      ]
        .map(([p, n]) => `${p} ${n}`)
        .join(', ')}`,
    ),
  );
  // When each app was first seen in each phase (the cache, polled every 200 ms; saves are group commits).
  const seen = new Map<string, Map<string, number>>();
  let peakRss = 0;
  const done = await waitFor(
    `plan ${name}`,
    async () => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      plan = cache.getPlan(NS, name);
      const now = performance.now();
      for (const a of plan?.status?.apps ?? []) {
        const m = seen.get(a.application) ?? new Map<string, number>();
        seen.set(a.application, m);
        if (!m.has(a.phase)) m.set(a.phase, now);
      }
      return plan && isTerminalPlan(plan) ? plan : undefined;
    },
    30 * 60_000,
    200,
  );
  const tDone = performance.now();
  stopProgress();
  const reqs = controllerRequests(tPlan, tDone);
  const totalS = (tDone - tPlan) / 1000;
  // Time in each phase per app: entering a phase = first seen in it or in a later one.
  const order = ['Copying', 'Writing', 'RollingOut', 'Succeeded'];
  const phases = new Map<string, number[]>([
    ['waiting', []],
    ...order.slice(0, -1).map((p): [string, number[]] => [p, []]),
  ]);
  const spans: number[] = [];
  for (const m of seen.values()) {
    const enter = order.map((_, i) => Math.min(...order.slice(i).map((p) => m.get(p) ?? Number.POSITIVE_INFINITY)));
    if (!Number.isFinite(enter[3])) continue;
    phases.get('waiting')?.push(enter[0] - tCreated);
    for (let i = 0; i < 3; i++) phases.get(order[i])?.push(enter[i + 1] - enter[i]);
    spans.push(enter[3] - enter[0]);
  }
  const median = Number(pct(spans, 0.5)) / 1000;
  const slot = (totalS * concurrency) / Math.max(1, created);
  console.log(
    `5. ${created}-app plan dev -> qa end to end (copy between two local registries, patch, kwok rollout), concurrency ${concurrency}: ${done.status?.phase} (${done.status?.succeeded} succeeded, ${done.status?.failed} failed) in ${totalS.toFixed(1)} s ${target('< 180 s')}; created (candidates from the cache + create) in ${(tCreated - tPlan).toFixed(0)} ms; ${(created / totalS).toFixed(2)} apps/s`,
  );
  console.log(
    `   per app (first seen in each phase, ~0.3 s resolution), p50 / p95 s: ${[...phases].map(([p, ts]) => `${p} ${secs(Number(pct(ts, 0.5)))} / ${secs(Number(pct(ts, 0.95)))}`).join(', ')}; Copying -> Succeeded ${median.toFixed(1)} / ${secs(Number(pct(spans, 0.95)))}`,
  );
  console.log(
    `   per-app overhead: slot time per app = total x concurrency / apps = ${slot.toFixed(2)} s, of which ${(slot - median).toFixed(2)} s is outside the app's own Copying -> Succeeded (scheduling, requeue delays, status saves)`,
  );
  console.log(
    `3. controller apiserver requests during the plan (${totalS.toFixed(0)} s, churn on): ${byVerb(reqs, totalS)}\n   top paths:\n${topPaths(reqs, 8)}`,
  );
  const podLists = reqs.filter((x) => x.method === 'GET' && /\/pods$/.test(x.path.split('?')[0]));
  const passes = reqs.filter((x) => x.method === 'GET' && x.path.endsWith(`/promotionplans/${name}`)).length;
  const podMs = podLists.map((x) => x.ms ?? 0);
  console.log(
    `   plan passes (plan GETs): ${passes}; pod LISTs (rollout crash signals): ${podLists.length}, p50 ${pct(podMs, 0.5)} / p95 ${pct(podMs, 0.95)} ms, ${secs(podMs.reduce((a, b) => a + b, 0))} s in all; ${await planBusy()}`,
  );
  console.log(`   RSS during the plan: peak ${mib(peakRss)} MiB (before ${mib(memBefore.rss)} MiB)`);
  // Derived statuses are debounced (5 s): give them their last write before counting.
  await sleep(8000);
  counting = undefined;
  console.log(
    `5. status writes from create to Complete + 8 s: ${planLog
      .summary(created)
      .split('\n')
      .map((l, i) => (i ? `   ${l}` : l))
      .join('\n')}`,
  );
  return name;
}

/** This run's registries, the plan apps' images pushed to the source one, and the Environments pointed at them. */
async function setUpPlans() {
  // ---- this run's registries and the plan's apps ----------------------------------------------------
  const tRegs = performance.now();
  const source = await startRegistry({ name: 'scale-source' });
  registries.push(source);
  const targetReg = await startRegistry({ name: 'scale-target' });
  registries.push(targetReg);
  registryHosts.source = source.host;
  registryHosts.target = targetReg.host;
  const pushLimit = pLimit(8);
  let pushed = 0;
  const stopPush = every(() => console.log(`  pushing: ${pushed}/${PLAN} images`));
  await Promise.all(
    planNames.map((app) =>
      pushLimit(async () => {
        const img = { repository: `shop/${app}`, tag: 'v2.0.0', seed: `scale-${app}`, layerSize: 64 * 1024 };
        const labels = { 'org.opencontainers.image.source': `https://git.bench.invalid/shop/${app}` };
        const { digest } = await pushTestImage({ host: source.host, ...img, labels });
        await applyDeployment(dev, envNs(APPS, ENVS[0]), app, `${source.host}/shop/${app}:v2.0.0@${digest}`);
        pushed++;
      }),
    ),
  );
  stopPush();
  const tRoll = performance.now();
  await pointQaAtOldImages();
  await waitRolledOut([ENVS[0]], "the plan's apps rolled out in dev");
  for (const e of ENVS)
    await applyCr(
      dev,
      crs.environment(NS, e.name, {
        context: e.cluster,
        namespace: envNs(APPS, e),
        registry:
          e.name === 'dev'
            ? { host: source.host, insecure: true }
            : { host: targetReg.host, prefix: e.name, insecure: true },
        delivery: { method: 'patch' },
      }),
    );
  await applyFlow(CONCURRENCY[0]);
  console.log(
    `setup: registries started, ${PLAN} images pushed and the plan's apps pointed at them in dev and qa in ${secs(performance.now() - tRegs)} s (rolling out the changed ones took ${secs(performance.now() - tRoll)} s)`,
  );
}

/** Why the compiled controller process no longer runs (exit, memory-limit hits, last log lines); undefined while it runs. */
function compiledExit(proc: ControllerProcess): string | undefined {
  if (proc.child.exitCode === null && proc.child.signalCode === null) return undefined;
  return `the compiled controller exited (${proc.child.signalCode ?? `code ${proc.child.exitCode}`}); memory limit hits ${proc.memoryLimitHits?.() ?? 'n/a'}; log:\n${readFileSync(proc.logFile, 'utf8').split('\n').slice(-15).join('\n')}`;
}

/** 2b: the production bundle (`yarn build controller`) as its own process on the same seed: start and RSS. */
async function measureCompiled(): Promise<void> {
  buildBundle('controller');
  const memoryLimit = values['memory-limit'] ? Number(values['memory-limit']) : undefined;
  if (memoryLimit !== undefined && !(Number.isInteger(memoryLimit) && memoryLimit >= 64))
    throw new Error(`--memory-limit takes MiB, an integer >= 64 (got ${values['memory-limit']})`);
  if (memoryLimit)
    console.log(
      `2. memory limit ${memoryLimit} MiB: node's V8 heap limit there is ${mib(nodeMemoryUnder(memoryLimit).heapSizeLimit)} MiB`,
    );
  const tProc = performance.now();
  // logLevel info: its "controller started" line says when it is ready.
  // anonymousMetrics: its /metrics says how much of the RSS is V8 heap.
  // The admin's static token: --with-plan creates and approves the plan through its HTTP API.
  const config = {
    leaderElection: { enabled: false },
    logLevel: 'info',
    auth: { anonymousMetrics: true, staticTokensFile: testTokensFile() },
  };
  const proc = startControllerProcess({
    identity: 'scale',
    lease: 'scale',
    kubeconfig,
    namespace: NS,
    targetNamespaces: ENVS.map((e) => envNs(APPS, e)),
    compiled: true,
    config,
    memoryLimitMiB: memoryLimit,
    nodeFlags: [
      ...(values['node-flags'] ?? '').split(/\s+/).filter(Boolean),
      ...(values['heap-snapshots']
        ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${values['heap-snapshots']}`]
        : []),
    ],
  });
  try {
    const startedIn = await waitFor(
      'the compiled controller started',
      async () => readFileSync(proc.logFile, 'utf8').includes('controller started') && performance.now() - tProc,
      10 * 60_000,
      200,
    );
    const snapshot = async (label: string) => {
      if (!values['heap-snapshots'] || !proc.child.pid) return;
      proc.child.kill('SIGUSR2');
      // Writing a snapshot stops the process for seconds; wait for its file to stop growing.
      await sleep(15_000);
      console.log(`   heap snapshot (${label}) written to ${values['heap-snapshots']}`);
    };
    await sleep(5000);
    await snapshot('5 s after ready');
    await sleep(Math.max(QUIET_S, 60) * 1000);
    const exit = compiledExit(proc);
    if (exit) throw new Error(exit);
    const mem = processMemory(proc.child.pid);
    const port = /"port":(\d+)[^\n]*controller started/.exec(readFileSync(proc.logFile, 'utf8'))?.[1];
    const scraped = port ? await (await fetch(`http://127.0.0.1:${port}/metrics`)).text() : '';
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(scraped)?.[1]);
    console.log(
      `2. compiled controller process (node controller/dist/kpromo-controller.mjs, MALLOC_ARENA_MAX=2): started (ready) in ${secs(startedIn)} s after spawn; ${Math.max(QUIET_S, 60)} s later RSS ${mib(mem.rss)} MiB, peak ${mib(mem.peak)} MiB, CPU ${mem.cpuSeconds.toFixed(1)} s since spawn ${target('RSS < 300 MiB')}; V8 heap used ${mib(gauge('nodejs_heap_size_used_bytes'))} of ${mib(gauge('nodejs_heap_size_total_bytes'))} MiB, external ${mib(gauge('nodejs_external_memory_bytes'))} MiB (its /metrics)${memoryLimit ? `; in a ${memoryLimit} MiB memory cgroup, limit hit ${proc.memoryLimitHits?.()} times` : ''}`,
    );
    if (values['with-plan'] && port) await planInCompiled(proc, port);
    await snapshot('end');
  } finally {
    await proc.stop();
  }
}

/**
 * 5b: one plan of the plan apps dev -> qa run by the compiled controller process (created and
 * approved through its HTTP API as the admin): time to the end, and its RSS and memory-limit hits
 * meanwhile, sampled every second.
 */
async function planInCompiled(proc: ControllerProcess, port: string): Promise<void> {
  const name = `scale-compiled-${Date.now().toString(36)}`;
  const hitsBefore = proc.memoryLimitHits?.() ?? 0;
  const t0 = performance.now();
  const res = await callApi(Number(port), '/api/v1/plans', {
    method: 'POST',
    body: await withShown(Number(port), {
      namespace: NS,
      flow: 'main',
      from: 'dev',
      to: 'qa',
      name,
      applications: planNames,
      approve: true,
    }),
  });
  if (res.status !== 201 && res.status !== 200)
    throw new Error(`POST /api/v1/plans: ${res.status} ${(await res.text()).slice(0, 300)}`);
  let peak = 0;
  // An exit ends the wait at once (waitFor would retry a thrown error until its timeout).
  const ended = await waitFor(
    `plan ${name} run by the compiled controller`,
    async () => {
      const exit = compiledExit(proc);
      if (exit) return { exit };
      peak = Math.max(peak, processMemory(proc.child.pid).rss);
      const plan = await getPlan(dev, NS, name);
      return isTerminalPlan(plan) ? { plan } : undefined;
    },
    30 * 60_000,
    1000,
  );
  if ('exit' in ended) throw new Error(`during plan ${name}: ${ended.exit}`);
  const done = ended.plan;
  const hits = proc.memoryLimitHits ? `, memory limit hit ${proc.memoryLimitHits() - hitsBefore} times meanwhile` : '';
  console.log(
    `5b. ${done.spec.candidates.length}-app plan dev -> qa run by the compiled controller process: ${done.status?.phase} (${done.status?.succeeded} succeeded, ${done.status?.failed} failed) in ${secs(performance.now() - t0)} s; its RSS during the plan peaked at ${mib(peak)} MiB (sampled each second)${hits} ${target('RSS < 300 MiB')}`,
  );
}

if (values['compiled-only']) {
  if (!reused) throw new Error('--compiled-only measures a kept seed: pass --reuse ns,appsPrefix too');
  if (values['with-plan']) await setUpPlans();
  if (values['with-churn'])
    churner = child([
      '--churn',
      `${NS},${APPS}`,
      '--plan-apps',
      String(PLAN),
      '--churn-per-second',
      String(CHURN_RATE),
    ]);
  await measureCompiled();
  if (churner) {
    churner.kill('SIGTERM');
    await exited(churner);
  }
  for (const r of registries) await r.stop();
  process.exit(0);
}

try {
  console.log(
    `scale: ${N} Applications x ${ENVS.length} Environments (${ENVS.map((e) => `${e.name}@${e.cluster}`).join(', ')}) = ${N * ENVS.length} Deployments; plan of ${PLAN} apps dev -> qa at concurrency ${CONCURRENCY.join(' and ')}; churn ${CHURN_RATE}/s; kube-controller-manager QPS in dev: ${runningControllerManagerQps('dev') ?? 'unknown (not running)'} (KPROMO_KCM_QPS when the clusters started; upstream's default 20)`,
  );
  if (!reused) {
    const t0 = performance.now();
    const seeding = child([
      '--seed',
      `${NS},${APPS}`,
      '--seed-concurrency',
      String(SEED_CONCURRENCY),
      '--plan-apps',
      String(PLAN),
    ]);
    const code = await exited(seeding);
    if (code !== 0) throw new Error(`seeding failed (exit ${code})`);
    console.log(
      `setup: seeded ${N} Applications and ${N * ENVS.length} Deployments, all available, in ${secs(performance.now() - t0)} s (concurrency ${SEED_CONCURRENCY}; ${NS}, ${APPS}-*)`,
    );
  } else console.log(`setup: reusing ${NS}, ${APPS}-*`);

  if (values['skip-plans']) {
    if (!reused) throw new Error('--skip-plans measures a kept seed: pass --reuse ns,appsPrefix too');
    await applyFlow(CONCURRENCY[0]);
    console.log('setup: --skip-plans: no registries, image pushes or plans this run');
  } else await setUpPlans();

  // ---- 1. cold start --------------------------------------------------------------------------------
  counting = new StatusWriteLog();
  const startup = counting;
  await sleep(5000);
  const base = gcStats();
  const cfg = controllerConfig(kubeconfig, NS, {
    leaderElection: { enabled: false },
    mcp: { enabled: true, host: '127.0.0.1', port: 0, write: false },
  });
  await profiler?.start();
  const cpu0 = process.cpuUsage();
  const tStart = performance.now();
  ctl = await startController(cfg, { log: createLogger({ level: 'warn' }) });
  const tReady = performance.now();
  const cpuReady = process.cpuUsage(cpu0);
  const readyz = await fetch(`http://127.0.0.1:${ctl.port}/readyz`);
  await settle(requests.rest, 15_000, 15 * 60_000);
  const tSettled = performance.now();
  const cpuSettled = process.cpuUsage(cpu0);
  const startReqs = controllerRequests(tStart, tSettled);
  const lastBusy = nonWatch(startReqs).reduce((m, x) => Math.max(m, x.at), tReady);
  counting = undefined;
  const cpuS = (u: NodeJS.CpuUsage) => ((u.user + u.system) / 1e6).toFixed(1);
  console.log(
    `1. cold start: ready (every informer listed, /readyz ${readyz.status}) ${secs(tReady - tStart)} s after startController() (CPU ${cpuS(cpuReady)} s) ${target('< 20 s')}; initial reconciles done at ${secs(lastBusy - tStart)} s (CPU ${cpuS(cpuSettled)} s); controller requests until then: ${countByVerb(startReqs)}; status writes: ${[...startup.writes].map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`,
  );
  console.log(
    `   requests until ready: ${countByVerb(controllerRequests(tStart, tReady))}; top paths until settled:\n${topPaths(startReqs, 8)}`,
  );
  await profiler?.stop('start');

  // ---- 3a. quiet idle and 2a. memory ----------------------------------------------------------------
  const tQuiet = performance.now();
  await sleep(QUIET_S * 1000);
  const quiet = controllerRequests(tQuiet);
  console.log(
    `3. controller apiserver requests, quiet (no churn) over ${QUIET_S} s: ${byVerb(quiet, QUIET_S)} ${target('near zero, watch only')}`,
  );
  if (nonWatch(quiet).length) console.log(`   top paths:\n${topPaths(quiet)}`);
  const idleMem = gcStats();
  console.log(
    `2. memory after GC at idle: this process RSS ${mib(idleMem.rss)} MiB, heap used ${mib(idleMem.heapUsed)} MiB; the controller's share: RSS +${mib(idleMem.rss - base.rss)} MiB, heap +${mib(idleMem.heapUsed - base.heapUsed)} MiB (before the controller: RSS ${mib(base.rss)} MiB, heap ${mib(base.heapUsed)} MiB) ${target('RSS < 300 MiB')}`,
  );

  // ---- 3b. idle with churn --------------------------------------------------------------------------
  churner = child(['--churn', `${NS},${APPS}`, '--plan-apps', String(PLAN), '--churn-per-second', String(CHURN_RATE)]);
  await sleep(5000);
  const tChurn = performance.now();
  const churnBusy = await busySince();
  await sleep(IDLE_S * 1000);
  const churned = controllerRequests(tChurn);
  console.log(
    `3. controller apiserver requests with churn (${CHURN_RATE} workload changes/s by a child process, not counted) over ${IDLE_S} s: ${byVerb(churned, IDLE_S)} ${target('near zero, watch only')}`,
  );
  if (nonWatch(churned).length) console.log(`   top paths:\n${topPaths(churned)}`);
  console.log(`   meanwhile: ${await churnBusy()}`);

  // ---- 4. candidates --------------------------------------------------------------------------------
  await profiler?.start();
  const apiBusy = await busySince();
  const api = ctl.controller.api;
  const perPair = new Map<string, number[]>(PAIRS.map((p) => [`${p.from}->${p.to}`, []]));
  const counts = new Map<string, number>();
  const allPairs: number[] = [];
  for (let r = -2; r < ITER; r++) {
    const t0 = performance.now();
    for (const p of PAIRS) {
      const t = performance.now();
      const d = await diff(api, BENCH_ADMIN, { namespace: NS, from: p.from, to: p.to });
      if (r >= 0) perPair.get(`${p.from}->${p.to}`)?.push(performance.now() - t);
      counts.set(`${p.from}->${p.to}`, d.candidates.length);
    }
    if (r >= 0) allPairs.push(performance.now() - t0);
  }
  const pairLine = (m: Map<string, number[]>, extra: (k: string) => string) =>
    [...m].map(([k, ts]) => `${k} p50 ${pct(ts, 0.5)} / p95 ${pct(ts, 0.95)} ms${extra(k)}`).join('; ');
  console.log(
    `4. candidates from the cache (in-process diff(), ${N} apps, ${ITER} rounds, churn on): ${pairLine(perPair, (k) => ` (${counts.get(k)} candidates)`)}; all ${PAIRS.length} transitions (${N} apps x ${ENVS.length} environments) p50 ${pct(allPairs, 0.5)} / p95 ${pct(allPairs, 0.95)} ms ${target('< 50 ms')}`,
  );
  const httpPair = new Map<string, number[]>(PAIRS.map((p) => [`${p.from}->${p.to}`, []]));
  const httpInfo = new Map<string, string>();
  for (let r = -1; r < Math.min(ITER, 10); r++) {
    for (const p of PAIRS) {
      const t = performance.now();
      const res = await callApi(ctl.port, `/api/v1/diff?namespace=${NS}&from=${p.from}&to=${p.to}`);
      const text = await res.text();
      const ms = performance.now() - t;
      if (res.status !== 200) throw new Error(`GET /diff ${p.from}->${p.to}: ${res.status} ${text.slice(0, 200)}`);
      if (r >= 0) httpPair.get(`${p.from}->${p.to}`)?.push(ms);
      const body = JSON.parse(text) as { images: Array<{ from: { labelsState: string } }> };
      const states = new Map<string, number>();
      for (const i of body.images) states.set(i.from.labelsState, (states.get(i.from.labelsState) ?? 0) + 1);
      httpInfo.set(
        `${p.from}->${p.to}`,
        `, ${kib(Buffer.byteLength(text))} KiB, labels ${[...states].map(([s, n]) => `${s} ${n}`).join('/')}`,
      );
    }
  }
  console.log(
    `4. GET /api/v1/diff (HTTP, with candidate images and their OCI labels, 1.5 s label budget): ${pairLine(httpPair, (k) => httpInfo.get(k) ?? '')}`,
  );

  await profiler?.stop('candidates');

  // ---- 7. the releases page -------------------------------------------------------------------------
  await profiler?.start();
  const get = async (path: string) => {
    const t = performance.now();
    const res = await callApi(ctl?.port, path);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text.slice(0, 200)}`);
    return {
      ms: performance.now() - t,
      bytes: Buffer.byteLength(text),
      body: JSON.parse(text) as { continue?: string },
    };
  };
  /**
   * One view of the releases page (ReleasesPage: GET /environments and one page of 100 applications,
   * filtered server-side; the 10 s poll repeats the same two calls).
   */
  const PAGE_SIZE = 100;
  const view = async (query: string) => {
    const t = performance.now();
    const [e, a] = await Promise.all([
      get(`/api/v1/environments?namespace=${NS}`),
      get(`/api/v1/applications?namespace=${NS}&limit=${PAGE_SIZE}${query}`),
    ]);
    return { ms: performance.now() - t, bytes: e.bytes + a.bytes, next: a.body.continue };
  };
  const measure = async (query: string) => {
    const ms: number[] = [];
    let bytes = 0;
    for (let r = -1; r < ITER; r++) {
      const v = await view(query);
      if (r >= 0) ms.push(v.ms);
      bytes = Math.max(bytes, v.bytes);
    }
    return { ms, bytes };
  };
  const first = await view('');
  // a page in the middle: the continue token of the page before it
  let token = first.next;
  for (let i = 1; i < Math.floor(N / PAGE_SIZE / 2) && token; i++) token = (await view(`&continue=${token}`)).next;
  const views: Array<[string, string]> = [
    ['first page', ''],
    ['a middle page', token ? `&continue=${encodeURIComponent(token)}` : ''],
    ['name filter *42*', '&applications=*42*'],
    ['one team (teams=*team-3*)', '&teams=*team-3*'],
  ];
  const worst: number[] = [];
  let worstBytes = 0;
  console.log(
    `7. releases page API (ReleasesPage: GET /environments + GET /applications?limit=${PAGE_SIZE}, filters server-side), ${ITER} views each:`,
  );
  for (const [what, query] of views) {
    const m = await measure(query);
    worst.push(Number(pct(m.ms, 0.95)));
    worstBytes = Math.max(worstBytes, m.bytes);
    console.log(`   ${what}: p50 ${pct(m.ms, 0.5)} / p95 ${pct(m.ms, 0.95)} ms, ${kib(m.bytes)} KiB`);
  }
  console.log(
    `7. releases page API worst p95 ${Math.max(...worst).toFixed(1)} ms, largest ${kib(worstBytes)} KiB ${target('< 300 ms and < 500 KiB')}`,
  );

  console.log(`   during 4 and 7: ${await apiBusy()}`);
  await profiler?.stop('releases');

  // ---- 5. the plan, once per concurrency setting ------------------------------------------------------
  let planName = '';
  if (values['skip-plans']) {
    const plans = await dev.get<{ items: Array<{ metadata: { name: string; creationTimestamp?: string } }> }>(
      `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans`,
    );
    const newest = plans.items.sort((a, b) =>
      (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''),
    )[0];
    planName = newest?.metadata.name ?? '';
    console.log(`5. plans skipped (--skip-plans); MCP state reads ${planName || 'no plan (none kept)'}`);
  }
  for (const [k, concurrency] of values['skip-plans'] ? [] : CONCURRENCY.entries()) {
    if (k > 0) {
      // The plan's apps back to their old version in qa (our writes; kwok and the controller-manager roll out).
      const t = performance.now();
      await pointQaAtOldImages();
      console.log(
        `   reset: ${PLAN} qa Deployments back to their old image and rolled out in ${secs(performance.now() - t)} s (rollouts without the controller)`,
      );
      await settle(requests.rest, 10_000, 120_000);
    }
    await applyFlow(concurrency);
    await sleep(2000);
    await profiler?.start();
    planName = await runPlan(concurrency);
    await profiler?.stop(`plan-c${concurrency}`);
  }

  // ---- 6. MCP ---------------------------------------------------------------------------------------
  await profiler?.start();
  if (!ctl.mcp) throw new Error('MCP is not served');
  const mcp = await httpClient(ctl.mcp.url, TEST_ADMIN.token, { name: 'scale-bench' });
  const cases: Array<[string, Record<string, unknown>]> = [
    ['list', { namespace: NS, pageSize: 50 }],
    ['list', { namespace: NS, pageSize: 200 }],
    ['list', { namespace: NS, team: 'team-3', environment: 'prod', health: 'Healthy' }],
    ['diff', { namespace: NS, from: 'dev', to: 'qa' }],
    ['diff', { namespace: NS, from: 'stable', to: 'preprod' }],
    ['state', { namespace: NS, application: names[Math.min(N - 1, PLAN + 42)] }],
    ...(planName ? [['state', { namespace: NS, plan: planName }] as [string, Record<string, unknown>]] : []),
  ];
  const p95s: number[] = [];
  const mcpBusy = await busySince();
  console.log(`6. MCP tools over Streamable HTTP (bearer token, SubjectAccessReviews cached), ${ITER} calls each:`);
  for (const [tool, args] of cases) {
    const ts: number[] = [];
    let bytes = 0;
    for (let r = -3; r < ITER; r++) {
      const t = performance.now();
      const out = await call(mcp, tool, args);
      if (r >= 0) ts.push(performance.now() - t);
      ok(out);
      bytes = Buffer.byteLength(JSON.stringify(out));
    }
    p95s.push(Number(pct(ts, 0.95)));
    const { namespace: _, ...shown } = args;
    console.log(
      `   ${tool} ${JSON.stringify(shown)}: p50 ${pct(ts, 0.5)} ms, p95 ${pct(ts, 0.95)} ms, ${kib(bytes)} KiB`,
    );
  }
  await mcp.close();
  console.log(`   meanwhile: ${await mcpBusy()}`);
  console.log(`6. MCP list/diff/state worst p95 ${Math.max(...p95s).toFixed(1)} ms ${target('p95 < 50 ms')}`);
  await profiler?.stop('mcp');
  const after = gcStats();
  console.log(
    `2. memory after GC after the plan and the calls: this process RSS ${mib(after.rss)} MiB, heap used ${mib(after.heapUsed)} MiB; the controller's share: RSS +${mib(after.rss - base.rss)} MiB, heap +${mib(after.heapUsed - base.heapUsed)} MiB`,
  );

  // ---- 2b. the production bundle as its own process ---------------------------------------------------
  await ctl.stop();
  ctl = undefined;
  await measureCompiled();
} finally {
  await ctl?.stop().catch(() => undefined);
  if (churner) {
    churner.kill('SIGTERM');
    await exited(churner);
  }
  for (const r of registries) await r.stop().catch(() => undefined);
  if (values.keep || reused) console.log(`kept namespaces: --reuse ${NS},${APPS}`);
  else {
    await deleteNs(dev, NS).catch((e) => console.error(`cleanup: ${String(e)}`));
    for (const e of ENVS)
      await deleteNs(restOf(e), envNs(APPS, e)).catch((err) => console.error(`cleanup: ${String(err)}`));
  }
}
process.exit(0);
