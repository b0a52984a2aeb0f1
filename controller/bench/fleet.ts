/**
 * Benchmark (a script, not a test): one fleet stage on a private control plane of real clusters.
 *   npx tsx controller/bench/fleet.ts [clusters=20] [apps=200] [waves=4] [concurrency=8]
 * Starts its own control plane (one etcd; kube-apiserver, controller-manager, scheduler and kwok per
 * cluster): `src` (control cluster and source stage) and prod-01..prod-N (the fleet Environment
 * `prod`), two throwaway registries, seeds `apps` Deployments in every cluster, runs the controller
 * in-process and prints:
 * - candidates: GET /diff src -> prod over the whole fleet (median of 5), and plan creation;
 * - the plan: time to Complete through `waves` waves (equal shares of the fleet, no soak or pause);
 * - the floor: the same Deployment changes written directly, wave by wave, waiting for each wave to
 *   roll out, without kpromo (no copy, no status journal, no verdicts);
 * - controller memory after GC (the driver runs in the same process), and requests per cluster.
 * Cleans up (stops and deletes its control plane).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  applyCrds,
  cleanClusters,
  ensureClusters,
  freePortBlock,
  kubeConfigFor,
  pushTestImage,
  startRegistry,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  approveAsAdmin,
  controllerConfig,
  crs,
  ensureNs,
  restFor,
  waitPlan,
  waitReady,
} from '@kpromo/test-harness/controller';
import pLimit from 'p-limit';
import { createPlan, diff } from '../src/api/promotions.js';
import type { Caller } from '../src/auth/identity.js';
import { createLogger } from '../src/observability/logger.js';
import { startController } from '../src/runtime.js';
import { gcStats, pct, startRequestLog } from './requestLog.js';

const BENCH_ADMIN: Caller = { username: 'kpromo-admin', groups: ['system:masters'], source: 'local' };
const CLUSTERS = Number(process.argv[2] ?? 20);
const N = Number(process.argv[3] ?? 200);
const WAVES = Number(process.argv[4] ?? 4);
const CONCURRENCY = Number(process.argv[5] ?? 8);
const NS = 'fleet-bench';
const APPS = 'fleet-bench-apps';
const prod = Array.from({ length: CLUSTERS }, (_, i) => `prod-${String(i + 1).padStart(2, '0')}`);
const names = Array.from({ length: N }, (_, i) => `app-${String(i).padStart(3, '0')}`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const opts = {
  stateDir: mkdtempSync(join(tmpdir(), 'kpromo-fleet-bench-')),
  clusters: ['src', ...prod],
  basePort: await freePortBlock(CLUSTERS + 1),
  // 200 Deployments created at once per cluster: the controller-manager's default 20 qps is the bottleneck.
  controllerManagerQps: 100,
};
const source = await startRegistry({ name: 'fleet-bench-source' });
const target = await startRegistry({ name: 'fleet-bench-target' });
let ctl: Awaited<ReturnType<typeof startController>> | undefined;
try {
  let t = performance.now();
  const { kubeconfigPath: kubeconfig, clusters } = await ensureClusters(opts);
  console.log(`control plane: ${clusters.length} clusters ready in ${secs(performance.now() - t)}`);
  const rest = (c: string) => restFor(kubeconfig, c);
  // The kpromo resources live in the control cluster only (as in fleet.int.test.ts).
  await applyCrds(kubeConfigFor('src', kubeconfig));
  const portOf = new Map(clusters.map((c) => [String(c.port), c.name]));

  t = performance.now();
  const digests = new Map<string, string>();
  await Promise.all(
    names.map(async (app) => {
      const { digest } = await pushTestImage({
        host: source.host,
        repository: `src/shop/${app}`,
        tag: 'v2.0.0',
        seed: `fb-${app}`,
      });
      digests.set(app, digest);
      await pushTestImage({ host: target.host, repository: `prod/shop/${app}`, tag: 'v1.0.0', seed: `fb-old-${app}` });
    }),
  );
  const seed = pLimit(16);
  for (const c of ['src', ...prod]) {
    await ensureNs(rest(c), APPS);
    await Promise.all(
      names.map((app) =>
        seed(() =>
          applyDeployment(
            rest(c),
            APPS,
            app,
            c === 'src'
              ? `${source.host}/src/shop/${app}:v2.0.0@${digests.get(app)}`
              : `${target.host}/prod/shop/${app}:v1.0.0`,
          ),
        ),
      ),
    );
  }
  for (const c of ['src', ...prod]) for (const app of names) await waitReady(rest(c), APPS, app, 600_000);
  console.log(
    `seed: ${N} apps in ${clusters.length} clusters (${N * clusters.length} Deployments) in ${secs(performance.now() - t)}`,
  );

  const src = rest('src');
  await ensureNs(src, NS);
  await applyCr(src, {
    kind: 'Environment',
    metadata: { name: 'src', namespace: NS },
    spec: {
      cluster: { context: 'src' },
      namespace: APPS,
      registry: { host: source.host, prefix: 'src', insecure: true },
      delivery: { method: 'patch' },
    },
  });
  await applyCr(src, {
    kind: 'Environment',
    metadata: { name: 'prod', namespace: NS },
    spec: {
      namespace: APPS,
      registry: { host: target.host, prefix: 'prod', insecure: true },
      delivery: { method: 'patch' },
      clusters: prod.map((c) => ({ name: c, cluster: { context: c } })),
    },
  });
  const share = Math.ceil(100 / WAVES);
  await applyCr(
    src,
    crs.flow(NS, 'fleet', ['src', 'prod'], {
      concurrency: CONCURRENCY,
      stages: [
        { environment: 'src' },
        {
          environment: 'prod',
          waves: Array.from({ length: WAVES }, (_, i) =>
            i < WAVES - 1 ? { name: `w${i + 1}`, percent: share } : { name: `w${i + 1}` },
          ),
        },
      ],
    }),
  );
  for (const app of names) await applyCr(src, crs.application(NS, app, 'bench'));

  const log = startRequestLog();
  log.ignore(src);
  const cfg = controllerConfig(kubeconfig, NS, { context: 'src', leaderElection: { enabled: false } });
  t = performance.now();
  ctl = await startController(cfg, { log: createLogger({ level: 'warn' }) });
  const api = ctl.controller.api;
  await waitFor(
    `the controller to see ${N} candidates over the fleet`,
    async () =>
      (await diff(api, BENCH_ADMIN, { namespace: NS, flow: 'fleet', from: 'src', to: 'prod' })).candidates.length === N,
    600_000,
    1000,
  );
  console.log(`controller: started and read ${CLUSTERS + 1} clusters in ${secs(performance.now() - t)}`);

  const diffMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await diff(api, BENCH_ADMIN, { namespace: NS, flow: 'fleet', from: 'src', to: 'prod' });
    diffMs.push(performance.now() - t0);
  }
  console.log(
    `candidates over the fleet (${N} apps x ${CLUSTERS} clusters): median ${pct(diffMs, 0.5)} ms, max ${Math.max(...diffMs).toFixed(0)} ms`,
  );

  const httpBefore = log.http.length;
  t = performance.now();
  const { plan } = await createPlan(api, BENCH_ADMIN, {
    namespace: NS,
    from: 'src',
    to: 'prod',
    flow: 'fleet',
    name: 'fleet-plan',
  });
  console.log(
    `plan created with ${plan.spec.candidates.length} candidates in ${(performance.now() - t).toFixed(0)} ms`,
  );
  await approveAsAdmin(src, NS, 'fleet-plan');
  t = performance.now();
  const done = await waitPlan(
    src,
    NS,
    'fleet-plan',
    (p) => ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? ''),
    3_600_000,
  );
  const planMs = performance.now() - t;
  const waves = done.status?.waves ?? [];
  console.log(
    `plan: ${done.status?.phase} (${done.status?.succeeded} apps succeeded, ${done.status?.failed} failed) through ${waves.length} waves in ${secs(planMs)}`,
  );
  for (const w of waves)
    console.log(
      `  wave ${w.name}: ${w.clusters.length} clusters, ${secs(Date.parse(w.finishedAt ?? '') - Date.parse(w.startedAt ?? ''))} (1 s resolution)`,
    );
  const during = log.http.slice(httpBefore);
  const perCluster = new Map<string, number>();
  for (const s of during) {
    const port = s.origin?.split(':').pop() ?? '';
    const c = portOf.get(port);
    if (c) perCluster.set(c, (perCluster.get(c) ?? 0) + 1);
  }
  const prodCounts = prod.map((c) => perCluster.get(c) ?? 0);
  console.log(
    `requests during the plan: src (control) ${perCluster.get('src') ?? 0}; per prod cluster median ${pct(prodCounts, 0.5)}, max ${Math.max(...prodCounts)} (${N} apps each)`,
  );
  const mem = gcStats();
  const mib = (b: number) => (b / 2 ** 20).toFixed(0);
  console.log(
    `memory after GC: heap ${mib(mem.heapUsed)} MiB, RSS ${mib(mem.rss)} MiB (controller and driver in one process)`,
  );
  const size = JSON.stringify(done).length;
  console.log(`plan object: ${(size / 1024).toFixed(0)} KiB (${prod.length} clusters x ${N} apps)`);
  await ctl.stop();
  ctl = undefined;

  // The floor: the same changes written directly, wave by wave, each wave waited for.
  const floorWrite = pLimit(CONCURRENCY * Math.ceil(CLUSTERS / WAVES));
  t = performance.now();
  for (const w of waves) {
    await Promise.all(
      w.clusters.flatMap((c) =>
        names.map((app) =>
          floorWrite(() => applyDeployment(rest(c), APPS, app, `${target.host}/prod/shop/${app}:v1.0.0`)),
        ),
      ),
    );
    for (const c of w.clusters) for (const app of names) await waitReady(rest(c), APPS, app, 600_000);
  }
  const floorMs = performance.now() - t;
  console.log(
    `floor (direct writes, wave by wave, no kpromo): ${secs(floorMs)}; kpromo's plan took ${(planMs / floorMs).toFixed(2)}x`,
  );
} finally {
  await ctl?.stop();
  await source.stop();
  await target.stop();
  await cleanClusters(opts);
}
process.exit(0);
