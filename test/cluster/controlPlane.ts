import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { binariesDir, defaultKubeconfigPath, ensureBinaries, HARNESS_DIR, stateDir } from './paths.js';
import { ensureCa, ensureCert, type Pki } from './pki.js';
import { ensureProcess, isRunning, type ManagedProcess, readPid, sleep, stopProcess, tail } from './proc.js';

export const DEFAULT_CLUSTERS = ['dev', 'stable', 'prod'] as const;

export interface ClusterInfo {
  name: string;
  context: string;
  server: string;
  port: number;
}

export interface ControlPlane {
  kubeconfigPath: string;
  clusters: ClusterInfo[];
}

export interface StartOptions {
  clusters?: readonly string[];
  /** First port; etcd uses base..base+1, cluster i uses base+10*(i+1)..+3. */
  basePort?: number;
  log?: (msg: string) => void;
  /** Where certs, etcd data, logs, pids and the kubeconfig live (default: stateDir()). */
  stateDir?: string;
  /**
   * kube-controller-manager's client QPS (burst twice that); default KPROMO_KCM_QPS, else the
   * upstream default (20). Large clusters raise it (Kubernetes' own load tests do): at 20, 500
   * Deployments rolling out at once wait on it, not on whoever changed them. Applies when the
   * process starts; a running one keeps its flags (`yarn cluster stop` first).
   */
  controllerManagerQps?: number;
}

/** The controller-manager QPS asked for (option, then KPROMO_KCM_QPS); undefined keeps upstream's default. */
export function controllerManagerQps(opts: StartOptions): number | undefined {
  const raw = opts.controllerManagerQps ?? process.env.KPROMO_KCM_QPS;
  if (raw === undefined || raw === '') return undefined;
  const qps = Number(raw);
  if (!Number.isInteger(qps) || qps < 1 || qps > 10_000)
    throw new Error(`KPROMO_KCM_QPS / controllerManagerQps must be an integer 1-10000 (got ${JSON.stringify(raw)})`);
  return qps;
}

function basePort(opts: StartOptions): number {
  return opts.basePort ?? Number(process.env.KPROMO_PORT_BASE ?? 17400);
}

function clusterNames(opts: StartOptions): string[] {
  const env = process.env.KPROMO_CLUSTERS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return [...(opts.clusters ?? env ?? DEFAULT_CLUSTERS)];
}

interface Layout {
  root: string;
  pki: Pki;
  bin: string;
  etcd: ManagedProcess & { port: number };
  clusters: Array<{
    info: ClusterInfo;
    dir: string;
    procs: ManagedProcess[];
    adminKubeconfig: string;
  }>;
}

function layout(opts: StartOptions, bin: string): Layout {
  const root = opts.stateDir ?? stateDir();
  const base = basePort(opts);
  mkdirSync(root, { recursive: true });
  const pki = ensureCa(join(root, 'pki'));
  const etcdPort = base;
  const etcd = {
    name: 'etcd',
    bin: join(bin, 'etcd'),
    port: etcdPort,
    pidFile: join(root, 'etcd.pid'),
    logFile: join(root, 'etcd.log'),
    args: [
      '--name=kpromo',
      `--data-dir=${join(root, 'etcd-data')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPort + 1}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPort + 1}`,
      `--initial-cluster=kpromo=http://127.0.0.1:${etcdPort + 1}`,
      '--listen-metrics-urls=',
      '--log-level=warn',
      '--quota-backend-bytes=4294967296',
      // tmpfs-like durability is enough for a local test control plane.
      '--unsafe-no-fsync',
    ],
  };
  const admin = ensureCert(pki, 'admin', { cn: 'kpromo-admin', org: 'system:masters' });
  const kcmQps = controllerManagerQps(opts);
  const clusters = clusterNames(opts).map((name, i) => {
    const port = base + 10 * (i + 1);
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    const serving = ensureCert(pki, `apiserver-${name}`, {
      cn: `kube-apiserver-${name}`,
      sans: [
        'IP:127.0.0.1',
        'DNS:localhost',
        'DNS:kubernetes',
        'DNS:kubernetes.default',
        'DNS:kubernetes.default.svc',
        'IP:10.96.0.1',
      ],
      server: true,
    });
    const server = `https://127.0.0.1:${port}`;
    const adminKubeconfig = join(dir, 'admin.kubeconfig');
    writeFileSync(adminKubeconfig, kubeconfigYaml([{ name, server }], pki.caCert, admin, name));
    const p = (n: string, bin2: string, args: string[]): ManagedProcess => ({
      name: `${name}/${n}`,
      bin: join(bin, bin2),
      args,
      pidFile: join(dir, `${n}.pid`),
      logFile: join(dir, `${n}.log`),
    });
    const procs = [
      p('kube-apiserver', 'kube-apiserver', [
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        `--etcd-prefix=/registry-${name}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${port}`,
        `--tls-cert-file=${serving.cert}`,
        `--tls-private-key-file=${serving.key}`,
        `--client-ca-file=${pki.caCert}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${pki.saPub}`,
        `--service-account-signing-key-file=${pki.saKey}`,
        '--authorization-mode=RBAC',
        '--service-cluster-ip-range=10.96.0.0/16',
        '--allow-privileged=true',
        '--enable-priority-and-fairness=false',
        '--profiling=false',
        '--v=0',
      ]),
      p('kube-controller-manager', 'kube-controller-manager', [
        `--kubeconfig=${adminKubeconfig}`,
        `--authentication-kubeconfig=${adminKubeconfig}`,
        `--authorization-kubeconfig=${adminKubeconfig}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${port + 1}`,
        '--leader-elect=false',
        `--service-account-private-key-file=${pki.saKey}`,
        `--root-ca-file=${pki.caCert}`,
        // node-lifecycle stays on: it lifts the not-ready taint that admission puts on new (kwok) nodes.
        '--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-persistentvolume-binder,-attachdetach',
        '--profiling=false',
        ...(kcmQps ? [`--kube-api-qps=${kcmQps}`, `--kube-api-burst=${2 * kcmQps}`] : []),
      ]),
      p('kube-scheduler', 'kube-scheduler', [
        `--kubeconfig=${adminKubeconfig}`,
        `--authentication-kubeconfig=${adminKubeconfig}`,
        `--authorization-kubeconfig=${adminKubeconfig}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${port + 2}`,
        '--leader-elect=false',
        '--profiling=false',
      ]),
      p('kwok', 'kwok', [
        `--kubeconfig=${adminKubeconfig}`,
        `--config=${join(bin, 'kwok-stages.yaml')}`,
        // A Job pod whose command is `false` fails (job checks' failure path); the file says why.
        `--config=${join(HARNESS_DIR, 'kwok-job-outcome.yaml')}`,
        '--manage-all-nodes=false',
        '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
        `--server-address=127.0.0.1:${port + 3}`,
        '--node-ip=127.0.0.1',
        // Renew a node Lease (as kubelets do); without it node-lifecycle marks the node NotReady.
        '--node-lease-duration-seconds=40',
      ]),
    ];
    return { info: { name, context: name, server, port }, dir, procs, adminKubeconfig };
  });
  return { root, pki, bin, etcd, clusters };
}

function kubeconfigYaml(
  clusters: Array<{ name: string; server: string }>,
  caFile: string,
  admin: { cert: string; key: string },
  current: string,
): string {
  const b64 = (f: string) => readFileSync(f).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': current,
    clusters: clusters.map((c) => ({
      name: c.name,
      cluster: { server: c.server, 'certificate-authority-data': b64(caFile) },
    })),
    users: [
      { name: 'kpromo-admin', user: { 'client-certificate-data': b64(admin.cert), 'client-key-data': b64(admin.key) } },
    ],
    contexts: clusters.map((c) => ({ name: c.name, context: { cluster: c.name, user: 'kpromo-admin' } })),
  });
}

function httpsGet(url: string, pki: Pki): Promise<{ status: number; body: string }> {
  const admin = { cert: join(pki.dir, 'admin.crt'), key: join(pki.dir, 'admin.key') };
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca: readFileSync(pki.caCert), cert: readFileSync(admin.cert), key: readFileSync(admin.key), timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  logFile?: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch {
      // not up yet
    }
    await sleep(250);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000}s waiting for ${what}${logFile ? `; last log lines of ${logFile}:\n${tail(logFile)}` : ''}`,
  );
}

const FAKE_NODE = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name,
    labels: {
      type: 'kwok',
      'kubernetes.io/hostname': name,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
    },
    annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
  },
  status: {
    // Generous: scale tests and benchmarks run thousands of (simulated) pods on this one node.
    allocatable: { cpu: '4096', memory: '16Ti', pods: '20000' },
    capacity: { cpu: '4096', memory: '16Ti', pods: '20000' },
  },
});

async function apiRequest(server: string, pki: Pki, method: string, path: string, body?: unknown): Promise<number> {
  const admin = { cert: join(pki.dir, 'admin.crt'), key: join(pki.dir, 'admin.key') };
  return new Promise((resolve, reject) => {
    const req = request(
      `${server}${path}`,
      {
        method,
        ca: readFileSync(pki.caCert),
        cert: readFileSync(admin.cert),
        key: readFileSync(admin.key),
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    if (body) req.write(JSON.stringify(body));
    req.end();
  });
}

/**
 * Starts (or reuses) etcd and, per cluster, kube-apiserver, kube-controller-manager, kube-scheduler
 * and kwok with one fake node; writes one kubeconfig with a context per cluster. Idempotent.
 */
export async function ensureClusters(opts: StartOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? (() => {});
  const bin = ensureBinaries(log);
  const l = layout(opts, bin);
  if (ensureProcess(l.etcd)) log(`started etcd on 127.0.0.1:${l.etcd.port}`);
  await waitUntil(
    'etcd',
    async () => (await fetch(`http://127.0.0.1:${l.etcd.port}/health`)).ok,
    30_000,
    l.etcd.logFile,
  );
  for (const c of l.clusters) {
    const [apiserver, ...rest] = c.procs;
    if (ensureProcess(apiserver)) log(`started ${apiserver.name} on ${c.info.server}`);
    for (const p of rest) if (ensureProcess(p)) log(`started ${p.name}`);
  }
  for (const c of l.clusters) {
    await waitUntil(
      `${c.info.name} kube-apiserver /readyz`,
      async () => (await httpsGet(`${c.info.server}/readyz`, l.pki)).status === 200,
      120_000,
      c.procs[0].logFile,
    );
    // Started alongside the apiserver, controller-manager, scheduler or kwok may have exited before
    // it was ready (kube-controller-manager fails fast loading its request-header CA): start again
    // whichever is not running, now that the apiserver answers.
    for (const p of c.procs.slice(1)) if (ensureProcess(p)) log(`restarted ${p.name} once ${c.info.name} was ready`);
    const nodeName = `kwok-${c.info.name}-0`;
    const status = await apiRequest(c.info.server, l.pki, 'POST', '/api/v1/nodes', FAKE_NODE(nodeName));
    if (status !== 201 && status !== 409)
      throw new Error(`creating fake node ${nodeName} in ${c.info.name} failed: HTTP ${status}`);
    await waitUntil(
      `${c.info.name} node ${nodeName} Ready (kwok)`,
      async () => {
        const r = await httpsGet(`${c.info.server}/api/v1/nodes/${nodeName}`, l.pki);
        const node = JSON.parse(r.body) as { status?: { conditions?: Array<{ type: string; status: string }> } };
        return node.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ?? false;
      },
      60_000,
      c.procs[3].logFile,
    );
    await waitUntil(
      `${c.info.name} default ServiceAccount (controller-manager)`,
      async () =>
        (await httpsGet(`${c.info.server}/api/v1/namespaces/default/serviceaccounts/default`, l.pki)).status === 200,
      60_000,
      c.procs[1].logFile,
    );
  }
  const kubeconfigPath = opts.stateDir ? join(opts.stateDir, 'kubeconfig') : defaultKubeconfigPath();
  const admin = { cert: join(l.pki.dir, 'admin.crt'), key: join(l.pki.dir, 'admin.key') };
  writeFileSync(
    kubeconfigPath,
    kubeconfigYaml(
      l.clusters.map((c) => ({ name: c.info.name, server: c.info.server })),
      l.pki.caCert,
      admin,
      l.clusters[0].info.name,
    ),
  );
  return { kubeconfigPath, clusters: l.clusters.map((c) => c.info) };
}

export function clustersStatus(opts: StartOptions = {}): Array<{ process: string; running: boolean }> {
  // Only where the binaries would be: asking whether anything runs never builds anything.
  const bin = binariesDir();
  const l = layout(opts, bin);
  return [l.etcd, ...l.clusters.flatMap((c) => c.procs)].map((p) => ({ process: p.name, running: isRunning(p) }));
}

/** The pid of a running harness process (`etcd`, `<cluster>/kube-apiserver`, …); undefined when it does not run. */
export function runningPid(component: string, opts: StartOptions = {}): number | undefined {
  const l = layout(opts, ensureBinaries());
  const p = [l.etcd, ...l.clusters.flatMap((c) => c.procs)].find((x) => x.name === component);
  return p && isRunning(p) ? readPid(p.pidFile) : undefined;
}

/**
 * The client QPS the running kube-controller-manager of `cluster` was started with (its command
 * line; 20, upstream's default, without the flag): KPROMO_KCM_QPS as it was then, which a later
 * change does not reach. Undefined when it does not run.
 */
export function runningControllerManagerQps(cluster: string, opts: StartOptions = {}): number | undefined {
  const pid = runningPid(`${cluster}/kube-controller-manager`, opts);
  if (!pid) return undefined;
  const flag = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .find((a) => a.startsWith('--kube-api-qps='));
  return flag ? Number(flag.slice('--kube-api-qps='.length)) : 20;
}

/** Stops every harness process (clusters first, etcd last). Idempotent. */
export async function stopClusters(opts: StartOptions = {}): Promise<number> {
  const root = opts.stateDir ?? stateDir();
  if (!existsSync(root)) return 0;
  const bin = ensureBinaries();
  const l = layout(opts, bin);
  let stopped = 0;
  for (const c of l.clusters) {
    for (const p of [...c.procs].reverse()) if (await stopProcess(p)) stopped++;
  }
  if (await stopProcess(l.etcd)) stopped++;
  return stopped;
}

/** Stops everything and deletes all state (certs, etcd data, logs). */
export async function cleanClusters(opts: StartOptions = {}): Promise<void> {
  await stopClusters(opts);
  rmSync(opts.stateDir ?? stateDir(), { recursive: true, force: true });
}

/**
 * Fault injection: stops one harness process (SIGTERM, or SIGKILL with `kill`) and starts it again,
 * waiting until every apiserver is ready. `component` is `etcd` or `<cluster>/kube-apiserver` etc.
 */
export async function restartComponent(
  component: string,
  opts: StartOptions & { kill?: boolean; downMs?: number } = {},
): Promise<{ downMs: number }> {
  const bin = ensureBinaries();
  const l = layout(opts, bin);
  const all = [l.etcd, ...l.clusters.flatMap((c) => c.procs)];
  const p = all.find((x) => x.name === component);
  if (!p) throw new Error(`unknown component ${component}; one of ${all.map((x) => x.name).join(', ')}`);
  const t0 = Date.now();
  await stopProcess(p, opts.kill ? 0 : 10_000);
  if (opts.downMs) await sleep(opts.downMs);
  ensureProcess(p);
  if (p === l.etcd)
    await waitUntil('etcd', async () => (await fetch(`http://127.0.0.1:${l.etcd.port}/health`)).ok, 60_000, p.logFile);
  for (const c of l.clusters)
    await waitUntil(
      `${c.info.name} kube-apiserver /readyz`,
      async () => {
        // A restarted component that exited at once (e.g. its port not yet released by the old
        // process) is started again rather than waited for in vain.
        if (ensureProcess(p)) console.warn(`[cluster] ${p.name} had exited after its restart; started it again`);
        return (await httpsGet(`${c.info.server}/readyz`, l.pki)).status === 200;
      },
      120_000,
      c.procs[0].logFile,
    );
  return { downMs: Date.now() - t0 };
}
