/**
 * Exporter benchmark: initial sync of N Applications spread over two clusters into the Port
 * stand-in (wall time, Port calls, peak RSS and CPU seconds of the exporter process), then
 * event-to-entity latency and Port calls under steady streams of updates, one per rate (calls are
 * compared with the batching minimum, one bulk call per 20 updates).
 *
 *   yarn tsx bench/exporter.ts [--n 10000] [--updates 200] [--rate 10,200] [--clusters dev,stable] [--compiled|--image]
 *
 * By default the exporter runs from its TypeScript sources under tsx in a child process (IPC); with
 * --compiled it is the production bundle (`yarn build exporter` → exporter/dist/kpromo-exporter.mjs,
 * built first) under plain node, given a config file, with peak RSS (VmHWM) and CPU seconds read
 * from /proc (Linux). --image runs what the container image runs instead: the one-file bundle with
 * every npm dependency inside (deploy/image/bundle.ts) and the image's environment (MALLOC_ARENA_MAX=2,
 * NODE_ENV=production). Objects go into a fresh exp-bench-* namespace that is deleted at the end;
 * `--ns exp-bench-x --keep` keeps it, and a later `--ns exp-bench-x` reuses the objects in it
 * (creating 50,000 objects takes the shared local apiserver most of an hour).
 */
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_BLUEPRINTS, DEFAULT_RESOURCES } from '@kpromo/exporter';
import { applyCrds, defaultKubeconfigPath, kubeConfigFor } from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { APPS } from '../deploy/image/images.js';
import { messageWaiter, pool, standInStats } from './childMessages.js';
import { procUsage } from './procUsage.js';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '10000' },
    updates: { type: 'string', default: '200' },
    rate: { type: 'string', default: '10,200' },
    clusters: { type: 'string', default: 'dev,stable' },
    compiled: { type: 'boolean', default: false },
    image: { type: 'boolean', default: false },
    ns: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const IMAGE = values.image === true;
const COMPILED = values.compiled === true || IMAGE;
/** The exporter file run by --compiled / --image. */
const bundleFile = IMAGE
  ? join(tmpdir(), `kpromo-exporter-image-${process.pid}.mjs`)
  : join(dirname(fileURLToPath(import.meta.url)), '..', 'exporter/dist/kpromo-exporter.mjs');
const RUN_TAG = Date.now().toString(36);
const N = Number(values.n);
const UPDATES = Number(values.updates);
const RATES = values.rate!.split(',').map(Number);
const CLUSTERS = values.clusters!.split(',');
const NS = values.ns ?? `exp-bench-${Math.random().toString(36).slice(2, 7)}`;
const G = 'promotions.kpromo.dev';
const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
const kcs = Object.fromEntries(CLUSTERS.map((c) => [c, kubeConfigFor(c, kubeconfig)]));

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const child = fork(join(here, 'exporterStandIn.ts'), { execArgv: ['--import', 'tsx'] });
const exporterChild = COMPILED ? undefined : fork(join(here, 'exporterProcess.ts'), { execArgv: ['--import', 'tsx'] });
let compiledChild: ChildProcess | undefined;
const landed = new Map<string, number>();
const { onMessage, next } = messageWaiter((m) => {
  if (m.type === 'landed') landed.set(m.title as string, m.at as number);
});
child.on('message', onMessage);
exporterChild?.on('message', onMessage);
// Registered before any message can arrive.
const standInReady = next('ready');
const exporterReady = COMPILED ? Promise.resolve({ type: 'exporter-ready', rss: 0 }) : next('exporter-ready');
const exporterUsage = async () => {
  if (compiledChild?.pid) return procUsage(compiledChild.pid);
  const p = next('rss');
  exporterChild?.send({ type: 'rss' });
  const m = await p;
  return { rssMiB: (m.peakRss as number) / 2 ** 20, cpuSeconds: m.cpuSeconds as number };
};
/** Starts the exporter on `config`: the production bundle with a config file, or the tsx child over IPC. */
function startExporter(config: Record<string, unknown>) {
  if (!COMPILED) return void exporterChild?.send({ type: 'start', config, ns: NS });
  // Port's defaults, each limited to this run's namespace, so other objects never enter the figures.
  const only = { query: `.metadata.namespace == "${NS}"` };
  const file = join(tmpdir(), `${NS}-exporter.json`);
  writeFileSync(
    file,
    JSON.stringify({
      ...config,
      includeDefaults: false,
      blueprints: DEFAULT_BLUEPRINTS,
      resources: DEFAULT_RESOURCES.map((r) => ({ ...r, selector: only })),
    }),
  );
  // --image: the image's node flags (deploy/image/images.ts). BENCH_NODE_FLAGS: V8 flags to try on
  // the exporter process on top (e.g. --max-semi-space-size=1).
  const flags = [
    ...(IMAGE ? APPS.exporter.nodeFlags : []),
    ...(process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean),
  ];
  compiledChild = spawn(process.execPath, [...flags, bundleFile, file], {
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      ...(IMAGE ? { MALLOC_ARENA_MAX: '2', NODE_ENV: 'production', NODE_OPTIONS: '' } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}
const exporterRss = async () => (await exporterUsage()).rssMiB;
const stats = () => standInStats(child, next);

/** Retries a call that failed on the network (the shared local apiserver resets connections under load). */
async function retried<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts || (e as { code?: number }).code !== undefined) throw e;
      await new Promise((r) => setTimeout(r, 500 * i));
    }
  }
}

const body = (name: string) => ({
  apiVersion: `${G}/v1alpha1`,
  kind: 'Application',
  metadata: { name, namespace: NS },
  spec: { owner: 'team-bench', image: { repository: `bench/${name}` }, workloads: [{ kind: 'Deployment', name }] },
});

// Wrapped in main(): the root package is CommonJS, where top-level await is unavailable.
async function main(): Promise<void> {
  // The kpromo CRDs (fresh clusters have none; applying them again changes nothing).
  for (const c of CLUSTERS) await applyCrds(kcs[c]);
  const ready = (await standInReady) as unknown as { url: string; clientId: string; clientSecret: string };
  if (IMAGE) {
    const { bundleApp } = await import('../deploy/image/bundle.js');
    const b = await bundleApp({ entry: 'exporter/src/main.ts', name: 'kpromo-exporter.mjs', repoRoot: root });
    writeFileSync(bundleFile, b.code);
    console.log(
      `exporter: the image's one-file bundle (${(b.code.length / 2 ** 20).toFixed(1)} MiB, every npm dependency inside) under plain node with the image's flags and MALLOC_ARENA_MAX=2`,
    );
  } else if (COMPILED) {
    execFileSync(process.execPath, ['--import', 'tsx', join(root, 'scripts/build.ts'), 'exporter'], {
      cwd: root,
      stdio: 'inherit',
    });
    console.log('exporter: production bundle (exporter/dist/kpromo-exporter.mjs) under plain node');
  } else console.log('exporter: TypeScript sources under tsx');
  console.log(`creating ${N} Applications in ${NS} across ${CLUSTERS.join(', ')}…`);
  const t0 = Date.now();
  for (const c of CLUSTERS)
    await kcs[c]
      .makeApiClient(k8s.CoreV1Api)
      .createNamespace({ body: { metadata: { name: NS } } })
      .catch((e) => {
        // --ns: an existing namespace is reused.
        if (!values.ns || (e as { code?: number }).code !== 409) throw e;
      });
  const names = Array.from({ length: N }, (_, i) => ({ cluster: CLUSTERS[i % CLUSTERS.length], name: `app-${i}` }));
  const apis = Object.fromEntries(CLUSTERS.map((c) => [c, kcs[c].makeApiClient(k8s.CustomObjectsApi)]));
  await pool(names, 24, ({ cluster, name }) =>
    retried(() =>
      apis[cluster].createNamespacedCustomObject({
        group: G,
        version: 'v1alpha1',
        namespace: NS,
        plural: 'applications',
        body: body(name),
      }),
    ).catch((e) => {
      // 409: already there (--ns reuse, or a retried create that had gone through).
      if ((e as { code?: number }).code !== 409) throw e;
    }),
  );
  console.log(`created in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const idleRss = ((await exporterReady).rss as number) / 2 ** 20;
  if (!COMPILED) console.log(`exporter process RSS before start (node + tsx + modules): ${idleRss.toFixed(0)} MiB`);
  const config = {
    stateKey: NS,
    clusters: CLUSTERS.map((name) => ({ name, context: name, kubeconfig })),
    port: { baseUrl: ready.url, clientId: ready.clientId, clientSecret: ready.clientSecret },
    resyncIntervalSeconds: 0,
  };
  const start = Date.now();
  startExporter(config);
  for (;;) {
    const s = await stats();
    if ((s.counts.kpromoApplication ?? 0) >= N) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const wall = Date.now() - start;
  const afterSync = await stats();
  const usage = await exporterUsage();
  const syncBulk = afterSync.counts.__bulk ?? 0;
  const syncMin = Math.ceil(N / 20);
  console.log(
    `initial sync: ${N} objects in ${(wall / 1000).toFixed(2)} s, Port calls ${afterSync.calls} (entity bulk calls ${syncBulk}, minimum ${syncMin}: ${(syncBulk / syncMin).toFixed(3)}x), peak RSS ${usage.rssMiB.toFixed(0)} MiB, CPU ${usage.cpuSeconds.toFixed(1)} s (exporter process)`,
  );

  // Steady streams: UPDATES title changes at each rate, each timed from just before the patch.
  const api = (c: string) => apis[c];
  let seq = 0;
  for (const RATE of RATES) {
    await new Promise((r) => setTimeout(r, 1000));
    const before = await stats();
    const cpuBefore = (await exporterUsage()).cpuSeconds;
    const sent = new Map<string, number>();
    const acked: number[] = [];
    const ackAt = new Map<string, number>();
    const t0 = Date.now();
    for (let i = 0; i < UPDATES; i++) {
      const { cluster, name } = names[(seq++ * 7919) % N];
      // Unique per run: objects reused with --ns still carry the titles of earlier runs.
      const title = `lat-${RUN_TAG}-${seq}`;
      // Paced against the start, so a slow patch does not lower the rate.
      const due = t0 + (i * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const at = Date.now();
      sent.set(title, at);
      void api(cluster)
        .patchNamespacedCustomObject(
          {
            group: G,
            version: 'v1alpha1',
            namespace: NS,
            plural: 'applications',
            name,
            body: { spec: { displayName: title } },
          },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        )
        .then(() => {
          ackAt.set(title, Date.now());
          acked.push(Date.now() - at);
        });
    }
    const deadline = Date.now() + 30_000;
    while ([...sent.keys()].some((t) => !landed.has(t)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500));
    const lat = [...sent]
      .filter(([t]) => landed.has(t))
      .map(([t, s]) => landed.get(t)! - s)
      .sort((a, b) => a - b);
    const pct = (p: number, xs = lat) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
    acked.sort((a, b) => a - b);
    // From the apiserver's answer to the patch (the change committed) to the entity in Port.
    const afterAck = [...ackAt]
      .filter(([t]) => landed.has(t))
      .map(([t, a]) => Math.max(0, landed.get(t)! - a))
      .sort((a, b) => a - b);
    const after = await stats();
    const bulk = (after.counts.__bulk ?? 0) - (before.counts.__bulk ?? 0);
    const minimum = Math.ceil(UPDATES / 20);
    const cpu = (await exporterUsage()).cpuSeconds - cpuBefore;
    console.log(
      `updates at ${RATE}/s: ${lat.length}/${UPDATES} landed, latency p50 ${pct(50)} ms, p99 ${pct(99)} ms; entity bulk calls ${bulk} (minimum ${minimum}, ${(bulk / minimum).toFixed(2)}x), Port calls ${after.calls - before.calls}, CPU ${cpu.toFixed(1)} s; apiserver patch answer p50 ${pct(50, acked)} ms, p99 ${pct(99, acked)} ms; from that answer to the entity p50 ${pct(50, afterAck)} ms, p99 ${pct(99, afterAck)} ms`,
    );
  }
  const final = await stats();
  console.log(
    `peak RSS ${(await exporterRss()).toFixed(0)} MiB (exporter process), Port calls total ${final.calls}, spec violations ${final.violationCount}${final.violationCount ? `: ${final.violations.join(' | ')}` : ''}`,
  );

  exporterChild?.send({ type: 'stop' });
  compiledChild?.kill('SIGTERM');
  child.send({ type: 'stop' });
  if (!values.keep)
    for (const c of CLUSTERS)
      await kcs[c]
        .makeApiClient(k8s.CoreV1Api)
        .deleteNamespace({ name: NS })
        .catch(() => undefined);
  else console.log(`kept namespace ${NS} (reuse with --ns ${NS})`);
  process.exit(0);
}

void main();
