/**
 * Benchmark (a script, not a test): end-to-end time of a 50-app plan on the local clusters, and the
 * status writes it costs (every kind, per app, by cause: statusWriteLog.ts).
 *   npx tsx controller/bench/e2ePlan.ts [apps=50] [concurrency=8]
 * Starts two throwaway registries, seeds N apps in dev and stable (ctl-bench-* namespaces), runs the
 * controller in-process, approves one dev -> stable plan and prints the time to Complete. The status
 * writes of the controller's first sync (objects created before it started) are printed apart and
 * not counted as the plan's. Cleans up.
 */
import { defaultKubeconfigPath, ensureClusters, pushTestImage, startRegistry } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  approveAsAdmin,
  controllerConfig,
  crs,
  deleteNamespaces,
  restFor,
  runNamespaces,
  setupNamespaces,
  waitPlan,
  waitReady,
} from '@kpromo/test-harness/controller';
import { createPlan } from '../src/api/promotions.js';
import type { Caller } from '../src/auth/identity.js';
import { KubeRest } from '../src/kube/rest.js';
import { createLogger } from '../src/observability/logger.js';
import { startController } from '../src/runtime.js';
import { StatusWriteLog } from './statusWriteLog.js';

/** The kubeconfig's admin, calling the API in-process (checks run as SelfSubjectAccessReviews). */
const BENCH_ADMIN: Caller = { username: 'kpromo-admin', groups: ['system:masters'], source: 'local' };
const N = Number(process.argv[2] ?? 50);
const CONCURRENCY = Number(process.argv[3] ?? 8);
const namespaces = runNamespaces('ctl-bench');
const SETTLE_MS = 8000;
const { ns: NS, apps: APPS } = namespaces;

await ensureClusters();
const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const source = await startRegistry({ name: 'bench-source' });
const target = await startRegistry({ name: 'bench-target' });
const names = Array.from({ length: N }, (_, i) => `app-${String(i).padStart(3, '0')}`);
let ctl: Awaited<ReturnType<typeof startController>> | undefined;
try {
  await setupNamespaces(dev, [dev, stable], namespaces);
  const t0 = performance.now();
  await Promise.all(
    names.map(async (app) => {
      const { digest } = await pushTestImage({
        host: source.host,
        repository: `shop/${app}`,
        tag: 'v1.0.1',
        seed: `bench-${app}`,
        layerSize: 64 * 1024,
      });
      await applyDeployment(dev, APPS, app, `${source.host}/shop/${app}:v1.0.1@${digest}`);
      await applyDeployment(stable, APPS, app, `${target.host}/shop/${app}:v1.0.0`);
      await applyCr(dev, crs.application(NS, app, 'bench'));
    }),
  );
  for (const app of names) await waitReady(dev, APPS, app);
  const env = (name: string, host: string) =>
    crs.environment(NS, name, {
      context: name,
      namespace: APPS,
      registry: { host, insecure: true },
      delivery: { method: 'patch' },
    });
  await applyCr(dev, env('dev', source.host));
  await applyCr(dev, env('stable', target.host));
  await applyCr(dev, crs.flow(NS, 'bench', ['dev', 'stable'], { concurrency: CONCURRENCY }));
  console.log(`setup: ${N} apps seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const cfg = controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } });
  // Count every status write from plan creation on, by kind and cause (the controller runs in this process).
  let counting: StatusWriteLog | undefined = new StatusWriteLog();
  const startup = counting;
  const log = new StatusWriteLog();
  const put = KubeRest.prototype.put;
  KubeRest.prototype.put = function (this: KubeRest, path: string, body: unknown) {
    const m = /\/(\w+)\/([^/]+)\/status$/.exec(path);
    if (counting && m) counting.record(m[1], m[2], (body as { status?: Record<string, unknown> }).status);
    return put.call(this, path, body);
  } as typeof put;
  ctl = await startController(cfg, { log: createLogger({ level: 'warn' }) });
  // The first sync writes statuses of objects created before the start (not the plan's cost): let
  // them settle, count them apart, then remember every status so each counted write has a cause.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  console.log(`first sync after start (+${SETTLE_MS / 1000} s, not counted below): ${startup.summary(N)}`);
  counting = undefined;
  for (const kind of ['applications', 'environments', 'promotionflows'] as const) {
    const list = await dev.get<{ items: Array<{ metadata: { name: string }; status?: unknown }> }>(
      `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/${kind}`,
    );
    for (const o of list.items) log.prime(kind, o.metadata.name, o.status);
  }
  const tPlan = performance.now();
  counting = log;
  const { plan } = await createPlan(ctl.controller.api, BENCH_ADMIN, {
    namespace: NS,
    from: 'dev',
    to: 'stable',
    name: 'bench-plan',
  });
  const tCreated = performance.now();
  await approveAsAdmin(dev, NS, 'bench-plan');
  const done = await waitPlan(
    dev,
    NS,
    'bench-plan',
    (p) => ['Complete', 'Incomplete'].includes(p.status?.phase ?? ''),
    600_000,
  );
  const tDone = performance.now();
  console.log(
    `plan: ${plan.spec.candidates.length} candidates created from cache in ${(tCreated - tPlan).toFixed(0)} ms`,
  );
  console.log(
    `promotion: ${done.status?.phase} (${done.status?.succeeded} succeeded, ${done.status?.failed} failed) in ${((tDone - tCreated) / 1000).toFixed(1)} s with concurrency ${CONCURRENCY} (copy + patch + kwok rollout per app)`,
  );
  const spans = (done.status?.apps ?? [])
    .map((a) => (Date.parse(a.finishedAt ?? '') - Date.parse(a.startedAt ?? '')) / 1000)
    .filter((x) => Number.isFinite(x))
    .sort((a, b) => a - b);
  console.log(
    `per app (start -> Ready, 1 s resolution): median ${spans[Math.floor(spans.length / 2)]} s, max ${spans[spans.length - 1]} s`,
  );
  // Derived statuses are debounced (Application 5 s); give them their last write before counting.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  counting = undefined;
  console.log(`from create to Complete (+${SETTLE_MS / 1000} s): ${log.summary(N)}`);
  console.log(
    `controller RSS after the plan: ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB (includes the benchmark driver)`,
  );
} finally {
  await ctl?.stop();
  await deleteNamespaces(dev, [dev, stable], namespaces);
  await source.stop();
  await target.stop();
}
process.exit(0);
