/**
 * kpromo's exporter and Port's own Kubernetes exporter (port-k8s-exporter, Go) side by side: the
 * same N Deployments on one local cluster, the same mapping (Port's published default for
 * Deployments, limited to this run's namespace), each against its own fresh Port stand-in that
 * validates every call against Port's OpenAPI spec. Runs alternate (kpromo, Go, Go, kpromo, …) so
 * neither always goes first on a warmer apiserver. Per run it prints the initial sync (wall time,
 * Port calls, peak RSS and CPU seconds from /proc), then event-to-entity latency, Port calls and CPU
 * under steady streams of label changes, one per rate.
 *
 *   yarn tsx bench/exporterVsPort.ts [--n 2000] [--updates 200] [--rate 10,200] [--runs 2] [--go PATH]
 *
 * kpromo's exporter runs as the container image runs it (the one-file bundle, the image's node flags,
 * MALLOC_ARENA_MAX=2), given Port's config file unchanged (the `port-k8s-exporter` dialect).
 *
 * The Go exporter is not in any package registry this machine can reach (the Go module proxy refuses
 * github.com/port-labs/port-k8s-exporter), so it is not built by the test harness: build it from a
 * checkout of its repository and pass the binary (`--go`, or $PORT_K8S_EXPORTER):
 *
 *   git clone https://github.com/port-labs/port-k8s-exporter && cd port-k8s-exporter && git checkout v0.7.9
 *   go build -o port-k8s-exporter .      # cgo (librdkafka ships inside confluent-kafka-go)
 *
 * It runs with its defaults except what a benchmark must pin: no default resources, no HTTP log
 * shipping, no metrics port, a polling rate of an hour (its integration config does not change), and
 * `sendRawDataExamples: false` in the seeded integration (the examples route is not in Port's spec).
 * Port's spec documents no route that creates an integration, so the stand-in is seeded with one
 * holding the same mapping; calls the Go exporter makes to routes the spec lacks are answered 404 and
 * listed under "violations" (kpromo's exporter must show none).
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultKubeconfigPath, kubeConfigFor } from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { APPS } from '../deploy/image/images.js';
import { messageWaiter, pool, standInStats } from './childMessages.js';
import { procUsage } from './procUsage.js';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '2000' },
    updates: { type: 'string', default: '200' },
    rate: { type: 'string', default: '10,200' },
    runs: { type: 'string', default: '2' },
    go: { type: 'string' },
    cluster: { type: 'string', default: 'dev' },
    only: { type: 'string', default: 'kpromo,go' },
    ns: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const N = Number(values.n);
const UPDATES = Number(values.updates);
const RATES = values.rate!.split(',').map(Number);
const RUNS = Number(values.runs);
const CLUSTER = values.cluster!;
const NS = values.ns ?? `exp-vs-${Math.random().toString(36).slice(2, 7)}`;
const RUN_TAG = Date.now().toString(36);
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const FIXTURES = join(root, 'exporter/test/fixtures/port-k8s-exporter');
const GO_BIN =
  values.go ??
  process.env.PORT_K8S_EXPORTER ??
  join(homedir(), '.cache/kube-promotions/port-k8s-exporter/v0.7.9/port-k8s-exporter');
const kubeconfigPath = process.env.KUBECONFIG ?? defaultKubeconfigPath();
const kc = kubeConfigFor(CLUSTER, kubeconfigPath);

type Which = 'kpromo' | 'go';

/** Port's default Deployment mapping (the vendored fixture), limited to this run's namespace. */
function portConfig() {
  const app = YAML.parse(readFileSync(join(FIXTURES, 'appConfig.yaml'), 'utf8')) as {
    createMissingRelatedEntities?: boolean;
    resources: Array<{ kind: string; selector: { query: string } }>;
  };
  const deployments = app.resources.find((r) => r.kind === 'apps/v1/deployments')!;
  return {
    createMissingRelatedEntities: app.createMissingRelatedEntities ?? true,
    resources: [{ ...deployments, selector: { query: `.metadata.namespace == "${NS}"` } }],
  };
}

/** A Port stand-in in its own process, seeded with Port's default blueprints and the integration. */
async function startStandIn(config: ReturnType<typeof portConfig>) {
  const child = fork(join(here, 'exporterStandIn.ts'), { execArgv: ['--import', 'tsx'] });
  children.add(child);
  const landed = new Map<string, number>();
  const { onMessage, next } = messageWaiter((m) => {
    if (m.type === 'landed') landed.set(m.title as string, m.at as number);
  });
  child.on('message', onMessage);
  const ready = (await next('ready')) as unknown as { url: string; clientId: string; clientSecret: string };
  const seeded = next('seeded');
  child.send({
    type: 'seed',
    blueprints: JSON.parse(readFileSync(join(FIXTURES, 'blueprints.json'), 'utf8')),
    integration: {
      installationId: NS,
      identifier: NS,
      title: NS,
      installationAppType: 'K8S EXPORTER',
      changelogDestination: { type: 'POLLING' },
      // Port answers with where the integration's logs go; the Go exporter dereferences it (its HTTP
      // log shipping is off here, so nothing is sent there).
      logAttributes: { ingestUrl: `${ready.url}/v1/integration/${NS}/logs`, ingestId: NS },
      config: { ...config, sendRawDataExamples: false },
    },
  });
  await seeded;
  const stats = () => standInStats(child, next);
  return { ...ready, landed, stats, stop: () => child.send({ type: 'stop' }) };
}

/** A kubeconfig whose current context is the benchmark's cluster: both exporters read the current one. */
function kubeconfigFile(): string {
  const file = join(tmpdir(), `${NS}-kubeconfig.yaml`);
  const doc = YAML.parse(readFileSync(kubeconfigPath, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, YAML.stringify({ ...doc, 'current-context': CLUSTER }));
  return file;
}

/** Every process started, killed when the benchmark ends however it ends. */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
let bundleFile = '';
/** The image's node flags; BENCH_EXPORTER_FLAGS replaces them (to weigh another V8 setting; "" for none). */
const KPROMO_FLAGS =
  process.env.BENCH_EXPORTER_FLAGS !== undefined
    ? process.env.BENCH_EXPORTER_FLAGS.split(/\s+/).filter(Boolean)
    : [...APPS.exporter.nodeFlags];
function startExporter(which: Which, standIn: { url: string; clientId: string; clientSecret: string }): ChildProcess {
  const configFile = join(tmpdir(), `${NS}-${which}-config.yaml`);
  // The Go exporter reads --create-default-resources-origin before parsing flags (v0.7.9,
  // pkg/config/utils.go), so the flag never applies; its config file's key does. K8S: no feature-flag
  // lookup (GET /v1/organization) for resources it is told not to create anyway.
  const goOnly = which === 'go' ? { createPortResourcesOrigin: 'K8S' } : {};
  writeFileSync(configFile, YAML.stringify({ ...portConfig(), sendRawDataExamples: false, ...goOnly }));
  const env = {
    ...process.env,
    KUBECONFIG: kubeconfigFile(),
    CLUSTER_NAME: CLUSTER,
    PORT_CLIENT_ID: standIn.clientId,
    PORT_CLIENT_SECRET: standIn.clientSecret,
    PORT_BASE_URL: standIn.url,
    STATE_KEY: NS,
  };
  if (which === 'kpromo')
    return spawn(process.execPath, [...KPROMO_FLAGS, bundleFile, configFile], {
      env: { ...env, LOG_LEVEL: 'warn', MALLOC_ARENA_MAX: '2', NODE_ENV: 'production', NODE_OPTIONS: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  return spawn(
    GO_BIN,
    [
      `--config=${configFile}`,
      `--state-key=${NS}`,
      `--port-base-url=${standIn.url}`,
      `--port-client-id=${standIn.clientId}`,
      `--port-client-secret=${standIn.clientSecret}`,
      '--create-default-resources=false',
      '--http-logging-enabled=false',
      '--metrics-enabled=false',
      '--event-listener-polling-rate=3600',
      '--logging-level=error',
    ],
    // Its log (zap, JSON on stdout) is kept for a failed run.
    { env, stdio: ['ignore', openSync(goLog, 'w'), 'inherit'] },
  );
}
const goLog = join(tmpdir(), `${NS}-port-k8s-exporter.log`);

const pct = (xs: number[], p: number) =>
  xs.length ? xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : Number.NaN;

let seq = 0;
async function runOnce(which: Which, names: string[], apps: k8s.AppsV1Api) {
  const config = portConfig();
  const standIn = await startStandIn(config);
  const t0 = Date.now();
  const proc = startExporter(which, standIn);
  children.add(proc);
  let exited = false;
  proc.on('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    const s = await standIn.stats();
    if ((s.counts.workload ?? 0) >= N) break;
    if (exited || Date.now() > deadline)
      throw new Error(
        `${which}: ${s.counts.workload ?? 0}/${N} entities after ${(Date.now() - t0) / 1000} s${which === 'go' ? `; its log (${goLog}) ends:\n${readFileSync(goLog, 'utf8').trimEnd().split('\n').slice(-5).join('\n')}` : ''}; stand-in: ${s.violations.join(' | ')}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
  const wall = Date.now() - t0;
  const afterSync = await standIn.stats();
  const sync = procUsage(proc.pid!);
  const bulk = afterSync.counts.__bulk ?? 0;
  console.log(
    `${which}: initial sync of ${N} Deployments ${(wall / 1000).toFixed(2)} s (from process start), Port calls ${afterSync.calls} (bulk ${bulk}, minimum ${Math.ceil(N / 20)}), peak RSS ${sync.rssMiB.toFixed(0)} MiB, CPU ${sync.cpuSeconds.toFixed(2)} s`,
  );
  // Let the Go exporter's last partial batch and any start-up calls settle before the streams.
  await new Promise((r) => setTimeout(r, 3000));
  for (const rate of RATES) {
    const before = await standIn.stats();
    const cpuBefore = procUsage(proc.pid!).cpuSeconds;
    const sent = new Map<string, number>();
    /** When the apiserver answered each patch: the change is committed from then on. */
    const answered = new Map<string, number>();
    const start = Date.now();
    const patches: Promise<unknown>[] = [];
    for (let i = 0; i < UPDATES; i++) {
      const name = names[(seq * 7919) % N];
      const marker = `lat-${RUN_TAG}-${++seq}`;
      // Paced against the start, so a slow patch does not lower the rate.
      const wait = start + (i * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      sent.set(marker, Date.now());
      patches.push(
        apps
          .patchNamespacedDeployment(
            { name, namespace: NS, body: { metadata: { labels: { 'bench-lat': marker } } } },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          )
          .then(() => answered.set(marker, Date.now())),
      );
    }
    await Promise.allSettled(patches);
    const until = Date.now() + 30_000;
    while ([...sent.keys()].some((m) => !standIn.landed.has(m)) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    // Calls made after the last change landed (a deadline flush, a trailing batch) count too.
    await new Promise((r) => setTimeout(r, 2500));
    const lat = [...sent]
      .filter(([m]) => standIn.landed.has(m))
      .map(([m, at]) => standIn.landed.get(m)! - at)
      .sort((a, b) => a - b);
    // The apiserver's share: from the patch to its answer (the exporter cannot see a change before).
    const api = [...answered].map(([m, at]) => at - sent.get(m)!).sort((a, b) => a - b);
    const after = await standIn.stats();
    const others = Object.entries(after.routes)
      .map(([r, n]) => [r, n - (before.routes[r] ?? 0)] as const)
      .filter(([r, n]) => n > 0 && !r.endsWith('/entities/bulk'))
      .map(([r, n]) => `${r} x${n}`);
    console.log(
      `${which}: ${UPDATES} changes at ${rate}/s: ${lat.length} landed, latency p50 ${pct(lat, 50)} ms, p99 ${pct(lat, 99)} ms (the apiserver's answer to the patch p50 ${pct(api, 50)} ms, p99 ${pct(api, 99)} ms); Port calls ${after.calls - before.calls} (bulk ${(after.counts.__bulk ?? 0) - (before.counts.__bulk ?? 0)}${others.length ? `; other calls: ${others.join(', ')}` : ''}), CPU ${(procUsage(proc.pid!).cpuSeconds - cpuBefore).toFixed(2)} s`,
    );
  }
  const end = await standIn.stats();
  console.log(
    `${which}: peak RSS ${procUsage(proc.pid!).rssMiB.toFixed(0)} MiB, Port calls total ${end.calls}, spec violations ${end.violationCount}${end.violationCount ? ` (${end.violations.join(' | ')})` : ''}`,
  );
  // SIGTERM first: an exporter run with --cpu-prof writes its profile as it exits.
  const gone = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
  proc.kill('SIGKILL');
  standIn.stop();
}

async function main(): Promise<void> {
  const which = values.only!.split(',') as Which[];
  if (which.includes('go') && !existsSync(GO_BIN))
    throw new Error(
      `no Go exporter binary at ${GO_BIN}: build it (see the header of bench/exporterVsPort.ts) and pass --go PATH`,
    );
  if (which.includes('kpromo')) {
    const { bundleApp } = await import('../deploy/image/bundle.js');
    const b = await bundleApp({ entry: 'exporter/src/main.ts', name: 'kpromo-exporter.mjs', repoRoot: root });
    bundleFile = join(tmpdir(), `kpromo-exporter-vs-${process.pid}.mjs`);
    writeFileSync(bundleFile, b.code);
    console.log(
      `kpromo: the image's one-file bundle under node ${process.version} ${KPROMO_FLAGS.join(' ') || '(no flags)'}, MALLOC_ARENA_MAX=2`,
    );
  }
  if (which.includes('go')) console.log(`go: ${GO_BIN}`);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } }).catch((e) => {
    if (!values.ns || (e as { code?: number }).code !== 409) throw e;
  });
  const names = Array.from({ length: N }, (_, i) => `svc-${i}`);
  const t = Date.now();
  await pool(names, 16, (name) =>
    apps
      .createNamespacedDeployment({
        namespace: NS,
        body: {
          metadata: { name, namespace: NS, labels: { app: name } },
          spec: {
            // No pods: the benchmark is about the exporters, not the scheduler.
            replicas: 0,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name: 'main', image: `registry.local/shop/${name}:v1.0.0` }] },
            },
          },
        },
      })
      .catch((e) => {
        if ((e as { code?: number }).code !== 409) throw e;
      }),
  );
  console.log(`${N} Deployments in ${NS} on ${CLUSTER} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  try {
    for (let r = 0; r < RUNS; r++) {
      const order = r % 2 === 0 ? which : [...which].reverse();
      for (const w of order) await runOnce(w, names, apps);
    }
  } finally {
    if (!values.keep) await core.deleteNamespace({ name: NS }).catch(() => undefined);
    else console.log(`kept namespace ${NS} (reuse with --ns ${NS})`);
  }
  process.exit(0);
}

void main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
