/**
 * Benchmark (a script, not a test): what the controller costs when nothing happens.
 *   npx tsx controller/bench/steadyState.ts [apps=1000] [--quick] [--idle-seconds 150] [--restart-seconds 60]
 *   (`yarn bench --only steadyState`, BENCH_ARGS_STEADYSTATE="3000")
 * Seeds N Applications, each with a Deployment in dev, stable and prod (kwok runs the pods; the images
 * are pinned references nobody pulls), Environments dev/stable/prod and one flow over all of them, in
 * ctl-steady-* namespaces. Starts the controller in this process and, once its initial reconciles
 * have settled, prints:
 *  - requests per minute at idle, by verb (every HTTP request to an apiserver, watches included, seen
 *    through undici's diagnostics channel; KubeRest.request calls counted separately by a wrap),
 *  - status PUTs in the first seconds of a restart where nothing changed,
 *  - RSS and heap after GC at idle (run with --expose-gc, as `yarn bench` does),
 *  - GET /applications latency (p50/p95) and size for pages of 100 and unpaged,
 *  - time from create+approve of a one-app plan to its app leaving Pending, right after a restart
 *    (every Application queued for its status meanwhile),
 *  - RSS of the production bundle (`yarn build`) run as its own process with plain node.
 * Asserts nothing. Cleans up.
 * --quick: 200 apps unless given, 60 s idle window, 30 s restart window.
 * --keep leaves the seeded namespaces; --reuse ns,apps measures again on them (e.g. before/after a change).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { PromotionPlan } from '@kpromo/api';
import { defaultKubeconfigPath, ensureClusters, startControllerProcess, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  callApi,
  controllerConfig,
  crs,
  deleteNamespaces,
  HELMRELEASE_CRD,
  restFor,
  runNamespaces,
  setupNamespaces,
  withShown,
} from '@kpromo/test-harness/controller';
import pLimit from 'p-limit';
import { DEPLOYMENT, KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { startController } from '../src/runtime.js';
import {
  buildBundle,
  byVerb,
  gcStats,
  pct,
  processMemory,
  settle,
  since,
  sleep,
  startRequestLog,
  topPaths,
} from './requestLog.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: 'boolean', default: false },
    'idle-seconds': { type: 'string' },
    'restart-seconds': { type: 'string' },
    concurrency: { type: 'string', default: '24' },
    /** Internal: seed `--seed ns,apps` and exit (run as a child, so its garbage is not in our RSS). */
    seed: { type: 'string' },
    /** Keep the seeded namespaces at the end (prints them) ... */
    keep: { type: 'boolean', default: false },
    /** ... and measure again on them: `--reuse ns,apps` (kept by an earlier run with the same N). */
    reuse: { type: 'string' },
  },
});
const QUICK = values.quick;
const N = Number(positionals[0] ?? (QUICK ? 200 : 1000));
const IDLE_S = Number(values['idle-seconds'] ?? (QUICK ? 60 : 150));
const RESTART_S = Number(values['restart-seconds'] ?? (QUICK ? 30 : 60));
const CLUSTERS = ['dev', 'stable', 'prod'] as const;
const mib = (b: number) => (b / 2 ** 20).toFixed(0);

// ---- request counting ----------------------------------------------------------------------------
const { http, rest: restCalls } = startRequestLog();

// ---- setup ---------------------------------------------------------------------------------------
const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
const rests = CLUSTERS.map((c) => restFor(kubeconfig, c));
const [dev] = rests;
const image = (app: string, c: string) =>
  `registry.bench.invalid/shop/${app}:v1.0.${CLUSTERS.indexOf(c as (typeof CLUSTERS)[number])}@sha256:${Buffer.from(
    `${app}-${c}`.padEnd(32, '.').slice(0, 32),
  ).toString('hex')}`;

/** Seeds N apps (Deployments in every cluster, Applications, Environments, a flow) and waits until all run. */
async function seed(NS: string, APPS: string): Promise<void> {
  const names = Array.from({ length: N }, (_, i) => `app-${String(i).padStart(4, '0')}`);
  const limit = pLimit(Number(values.concurrency));
  await setupNamespaces(dev, rests, { ns: NS, apps: APPS });
  await Promise.all(
    names.flatMap((app) => [
      ...rests.map((r) => limit(() => applyDeployment(r, APPS, app, image(app, r.clusterName)))),
      limit(() => applyCr(dev, crs.application(NS, app, `team-${Number(app.slice(4)) % 20}`))),
    ]),
  );
  for (const c of CLUSTERS)
    await applyCr(
      dev,
      crs.environment(NS, c, {
        context: c,
        namespace: APPS,
        registry: { host: `${c}.registry.bench.invalid`, insecure: true },
        delivery: { method: 'patch' },
      }),
    );
  await applyCr(dev, crs.flow(NS, 'main', [...CLUSTERS], { selector: { applications: ['*'] } }));
  // kwok makes every pod Ready; wait for the Deployments so the controller starts on a quiet system.
  await waitFor(
    'all Deployments available',
    async () => {
      for (const r of rests) {
        const l = await r.get<{ items: Array<{ status?: { availableReplicas?: number } }> }>(
          resourcePath(DEPLOYMENT, APPS),
        );
        if (l.items.filter((d) => (d.status?.availableReplicas ?? 0) >= 1).length < N) return false;
      }
      return true;
    },
    30 * 60_000,
    3000,
  );
}

if (values.seed) {
  const [NS, APPS] = values.seed.split(',');
  await seed(NS, APPS);
  process.exit(0);
}

await ensureClusters();
const reused = values.reuse?.split(',');
const namespaces = reused ? { ns: reused[0], apps: reused[1] } : runNamespaces('ctl-steady');
const { ns: NS, apps: APPS } = namespaces;
let ctl: Awaited<ReturnType<typeof startController>> | undefined;
try {
  const crd = await Promise.all(
    rests.map(
      async (r) =>
        `${r.clusterName}: ${(await r.getOrUndefined(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${HELMRELEASE_CRD}`)) ? 'yes' : 'no'}`,
    ),
  );
  console.log(`steady state: ${N} apps x ${CLUSTERS.length} clusters (HelmRelease CRD installed? ${crd.join(', ')})`);
  const t0 = performance.now();
  if (!reused) {
    // Seeding thousands of objects leaves garbage (and RSS) behind: do it in a child process.
    const child = spawn(
      process.execPath,
      [
        ...process.execArgv,
        fileURLToPath(import.meta.url),
        String(N),
        '--seed',
        `${NS},${APPS}`,
        '--concurrency',
        String(values.concurrency),
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env: process.env },
    );
    const code = await new Promise<number | null>((r) => child.on('close', r));
    if (code !== 0) throw new Error(`seeding failed (exit ${code})`);
  }
  console.log(
    reused
      ? `setup: reusing ${NS}, ${APPS}`
      : `setup: seeded and available in ${((performance.now() - t0) / 1000).toFixed(0)} s (${NS}, ${APPS})`,
  );

  const base = gcStats();
  const cfg = controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } });
  const log = createLogger({ level: 'warn' });
  const tStart = performance.now();
  ctl = await startController(cfg, { log });
  const tStarted = performance.now();
  const settled = await settle(http, 15_000, 10 * 60_000);
  console.log(
    `start: caches synced in ${((tStarted - tStart) / 1000).toFixed(1)} s; initial reconciles settled ${settled.toFixed(0)} s later (${since(http, tStart).length} requests, ${since(restCalls, tStart).filter((x) => x.method === 'PUT' && x.path.endsWith('/status')).length} status PUTs)`,
  );

  // ---- idle ----------------------------------------------------------------------------------------
  const tIdle = performance.now();
  await sleep(IDLE_S * 1000);
  const idleHttp = since(http, tIdle);
  const idleRest = since(restCalls, tIdle);
  console.log(`idle requests over ${IDLE_S} s, all HTTP to the apiservers: ${byVerb(idleHttp, IDLE_S)}`);
  console.log(`  of which KubeRest.request: ${byVerb(idleRest, IDLE_S)}`);
  if (idleHttp.length) console.log(`  top paths (count over the window):\n${topPaths(idleHttp)}`);
  const idle = gcStats();
  console.log(
    `idle memory after GC: RSS ${mib(idle.rss)} MiB, heap used ${mib(idle.heapUsed)} MiB; the controller's share: RSS +${mib(idle.rss - base.rss)} MiB, heap +${mib(idle.heapUsed - base.heapUsed)} MiB (this process before the controller started: RSS ${mib(base.rss)} MiB, heap ${mib(base.heapUsed)} MiB)`,
  );

  // ---- no-change restart ---------------------------------------------------------------------------
  await ctl.stop();
  ctl = undefined;
  await sleep(2000);
  const tRe = performance.now();
  ctl = await startController(cfg, { log });
  const tReStarted = performance.now();
  await sleep(Math.max(0, RESTART_S * 1000 - (tReStarted - tRe)));
  const reRest = since(restCalls, tRe);
  const statusPuts = reRest.filter((x) => x.method === 'PUT' && x.path.endsWith('/status'));
  const byKind = new Map<string, number>();
  for (const p of statusPuts) {
    const kind = p.path.split('/').at(-3) ?? '?';
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
  }
  console.log(
    `restart with nothing changed: synced in ${((tReStarted - tRe) / 1000).toFixed(1)} s; ${statusPuts.length} status PUTs in ${RESTART_S} s${byKind.size ? ` (${[...byKind].map(([k, n]) => `${k} ${n}`).join(', ')})` : ''}; ${since(http, tRe).length} requests in all (${byVerb(since(http, tRe), RESTART_S)})`,
  );

  // ---- the API at this size: pages of 100 applications --------------------------------------------
  const page = async (q: string) => {
    const t = performance.now();
    const r = await callApi(ctl?.port, `/api/v1/applications?namespace=${NS}&${q}`);
    const text = await r.text();
    if (r.status !== 200) throw new Error(`GET /applications?${q}: ${r.status} ${text.slice(0, 200)}`);
    return {
      ms: performance.now() - t,
      bytes: Buffer.byteLength(text),
      body: JSON.parse(text) as { continue?: string },
    };
  };
  const pageTimes: number[] = [];
  let pageBytes = 0;
  for (let round = 0; round < 3; round++) {
    let token: string | undefined;
    do {
      const r = await page(`limit=100${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
      pageTimes.push(r.ms);
      pageBytes = Math.max(pageBytes, r.bytes);
      token = r.body.continue;
    } while (token);
  }
  const all = await page('');
  console.log(
    `GET /applications, pages of 100 (${pageTimes.length} requests): p50 ${pct(pageTimes, 0.5)} ms, p95 ${pct(pageTimes, 0.95)} ms, ${(pageBytes / 1024).toFixed(0)} KiB per page; unpaged: ${all.ms.toFixed(0)} ms, ${(all.bytes / 1024).toFixed(0)} KiB`,
  );

  // ---- approve right after a start, while every Application is queued for its status ----------------
  await ctl.stop();
  ctl = undefined;
  await sleep(2000);
  ctl = await startController(cfg, { log });
  const tApprove = performance.now();
  const created = await callApi(ctl.port, '/api/v1/plans', {
    method: 'POST',
    body: await withShown(ctl.port, {
      namespace: NS,
      flow: 'main',
      from: 'dev',
      to: 'stable',
      name: 'steady-approve',
      applications: ['app-0000'],
      approve: true,
    }),
  });
  if (created.status !== 201) throw new Error(`create+approve: ${created.status} ${await created.text()}`);
  const planPath = resourcePath(KPROMO_TYPES.PromotionPlan, NS, 'steady-approve');
  const started = await waitFor(
    'the approved plan starts copying',
    async () => {
      const p = await dev.get<PromotionPlan>(planPath);
      return p.status?.apps?.some((a) => a.phase !== 'Pending') ? performance.now() : undefined;
    },
    120_000,
    50,
  );
  console.log(
    `approve -> first app past Pending (Copying), right after a start with ${N} Applications queued: ${((started - tApprove) / 1000).toFixed(2)} s`,
  );

  // ---- the production bundle as its own process: what a pod would hold --------------------------
  await ctl.stop();
  ctl = undefined;
  buildBundle();
  const proc = startControllerProcess({
    identity: 'steady-compiled',
    kubeconfig,
    namespace: NS,
    targetNamespaces: [APPS],
    lease: 'steady-compiled',
    compiled: true,
    config: { leaderElection: { enabled: false }, logLevel: 'warn' },
  });
  try {
    const tProc = performance.now();
    await sleep(IDLE_S * 1000);
    const mem = processMemory(proc.child.pid);
    console.log(
      `compiled controller process (node controller/dist/kpromo-controller.mjs), ${((performance.now() - tProc) / 1000).toFixed(0)} s after start: RSS ${(mem.rss / 2 ** 20).toFixed(0)} MiB, peak ${(mem.peak / 2 ** 20).toFixed(0)} MiB`,
    );
  } finally {
    await proc.stop();
  }
} finally {
  await ctl?.stop().catch(() => undefined);
  if (values.keep || reused) console.log(`kept namespaces: --reuse ${NS},${APPS}`);
  else await deleteNamespaces(dev, rests, namespaces).catch((e) => console.error(`cleanup: ${String(e)}`));
}
process.exit(0);
