import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { componentUsed } from '../cluster/need.js';
import { cacheRoot, crdFiles, runBuildScript, stateDir, versions } from '../cluster/paths.js';
import {
  ensureProcess,
  hasExited,
  isRunning,
  type ManagedProcess,
  readPid,
  sleep,
  stopProcess,
  tail,
} from '../cluster/proc.js';
import { waitFor } from '../kube.js';
import { applyManifest, loadYaml } from '../manifests.js';
import { freePort } from '../registry/registry.js';

/**
 * Upstream Flux (source-controller and kustomize-controller, built from their Go modules by
 * test/flux/build.sh) running as local processes against one harness cluster, as a GitOps agent
 * for the git-delivery tests.
 */
export interface Flux {
  /** source-controller's artifact server (its --storage-adv-addr), what GitRepository artifacts point at. */
  sourceUrl: string;
  /** The single-context kubeconfig both controllers use. */
  kubeconfig: string;
  /** The controllers' log files. */
  logs: { sourceController: string; kustomizeController: string };
  versions: { sourceController: string; kustomizeController: string };
  /** Whether this call started the processes (false: it reused running ones). */
  started: boolean;
  /**
   * Releases this caller's lease; the processes stop once no live lease is left. Test files need
   * not call it: the run's global setup releases the run's lease at the end (see {@link releaseFlux}).
   */
  stop(): Promise<void>;
}

export interface FluxBinaries {
  sourceController: string;
  kustomizeController: string;
  /** CRD files shipped in the two modules (config/crd/bases). */
  crds: string[];
}

const CONTROLLERS = ['source-controller', 'kustomize-controller'] as const;
type Controller = (typeof CONTROLLERS)[number];

function keyDir(name: Controller): string {
  const v = versions();
  const version = name === 'source-controller' ? v.FLUX_SOURCE_VERSION : v.FLUX_KUSTOMIZE_VERSION;
  return join(cacheRoot(), 'flux', `${name}-${version}_r${v.FLUX_BUILD_REV}`);
}

/**
 * Paths of the Flux binaries and CRDs (versions in test/cluster/versions.env); builds them with
 * test/flux/build.sh (minutes, once; needs Go) when absent. Never part of `yarn cluster start`.
 */
export function ensureFluxBinaries(log: (s: string) => void = () => {}): FluxBinaries {
  componentUsed('flux');
  const dirs = Object.fromEntries(CONTROLLERS.map((c) => [c, keyDir(c)])) as Record<Controller, string>;
  const complete = () => CONTROLLERS.every((c) => existsSync(join(dirs[c], 'bin', c)) && crdFiles(dirs[c]).length);
  if (!complete()) {
    const v = versions();
    log(
      `building Flux source-controller ${v.FLUX_SOURCE_VERSION} and kustomize-controller ${v.FLUX_KUSTOMIZE_VERSION} into ${join(cacheRoot(), 'flux')} (first time only; needs Go; several minutes each)…`,
    );
    runBuildScript('../flux/build.sh');
    if (!complete())
      throw new Error(`test/flux/build.sh finished but ${Object.values(dirs).join(', ')} are incomplete`);
  }
  return {
    sourceController: join(dirs['source-controller'], 'bin', 'source-controller'),
    kustomizeController: join(dirs['kustomize-controller'], 'bin', 'kustomize-controller'),
    crds: CONTROLLERS.flatMap((c) => crdFiles(dirs[c])),
  };
}

/** Runtime state: pid files, logs, artifact storage, kubeconfig, ports and leases. */
export const fluxStateDir = () => join(stateDir(), 'flux');

interface State {
  /** What the processes run: binaries, kubeconfig server. A change restarts them. */
  fingerprint: string;
  ports: {
    storage: number;
    sourceMetrics: number;
    sourceHealth: number;
    kustomizeMetrics: number;
    kustomizeHealth: number;
  };
  /** Who uses the running processes: `<run>` → pid that must be alive for the lease to count. */
  leases: Record<string, number>;
}

const NO_PORTS: State['ports'] = {
  storage: 0,
  sourceMetrics: 0,
  sourceHealth: 0,
  kustomizeMetrics: 0,
  kustomizeHealth: 0,
};

const statePath = () => join(fluxStateDir(), 'state.json');
const readState = (): State | undefined => {
  try {
    return JSON.parse(readFileSync(statePath(), 'utf8')) as State;
  } catch {
    return undefined;
  }
};
const writeState = (s: State) => writeFileSync(statePath(), JSON.stringify(s, null, 2));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** A cross-process lock (exclusive-create file holding the owner pid; a dead owner's lock is taken over). */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(fluxStateDir(), { recursive: true });
  const lock = join(fluxStateDir(), 'lock');
  const deadline = Date.now() + 15 * 60_000; // a first start may wait for a build
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx'));
      writeFileSync(lock, String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = readPid(lock);
      if (owner !== undefined && !alive(owner)) rmSync(lock, { force: true });
      else if (Date.now() > deadline)
        throw new Error(`timed out waiting for the Flux lock ${lock} (held by pid ${owner})`);
      else await sleep(200);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/**
 * The lease a caller holds: the test run (KPROMO_TEST_RUN, `<id>:<pid of the vitest main process>`,
 * set by test/globalSetup.ts) or else this process.
 */
function currentLease(): [string, number] {
  const run = process.env.KPROMO_TEST_RUN;
  const pid = Number(run?.split(':').pop());
  return run && Number.isInteger(pid) && pid > 0 ? [run, pid] : [`pid:${process.pid}`, process.pid];
}

function processes(bin: FluxBinaries, kubeconfig: string, ports: State['ports']): Record<Controller, ManagedProcess> {
  const dir = fluxStateDir();
  const env = { KUBECONFIG: kubeconfig, RUNTIME_NAMESPACE: 'flux-system' };
  const common = ['--watch-all-namespaces=true', '--enable-leader-election=false', '--log-encoding=console'];
  return {
    'source-controller': {
      name: 'flux/source-controller',
      bin: bin.sourceController,
      env,
      pidFile: join(dir, 'source-controller.pid'),
      logFile: join(dir, 'source-controller.log'),
      args: [
        `--storage-path=${join(dir, 'storage')}`,
        `--storage-addr=127.0.0.1:${ports.storage}`,
        // What artifact URLs in GitRepository status name; kustomize-controller downloads from it.
        `--storage-adv-addr=127.0.0.1:${ports.storage}`,
        `--metrics-addr=127.0.0.1:${ports.sourceMetrics}`,
        `--health-addr=127.0.0.1:${ports.sourceHealth}`,
        // Keep the artifacts of the last revisions only briefly, as in a cluster.
        '--artifact-retention-ttl=1m',
        ...common,
      ],
    },
    'kustomize-controller': {
      name: 'flux/kustomize-controller',
      bin: bin.kustomizeController,
      env,
      pidFile: join(dir, 'kustomize-controller.pid'),
      logFile: join(dir, 'kustomize-controller.log'),
      args: [
        `--metrics-addr=127.0.0.1:${ports.kustomizeMetrics}`,
        `--health-addr=127.0.0.1:${ports.kustomizeHealth}`,
        // Everything a test applies comes from the local git server.
        '--no-remote-bases=true',
        ...common,
      ],
    },
  };
}

/** Installs (server-side apply, idempotent) the CRDs shipped in the Flux modules; waits until Established. */
export async function installFluxCrds(kc: k8s.KubeConfig, files: readonly string[]): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crds = files.flatMap((f) => loadYaml(f));
  for (const crd of crds) await applyManifest(kc, crd, 'kpromo-test-flux');
  for (const crd of crds) {
    const name = crd.metadata?.name as string;
    await waitFor(`Flux CRD ${name} Established`, async () => {
      const c = await ext.readCustomResourceDefinition({ name });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
}

async function waitReady(p: ManagedProcess, healthPort: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (hasExited(p)) throw new Error(`${p.name} exited; last log lines of ${p.logFile}:\n${tail(p.logFile, 30)}`);
    try {
      if ((await fetch(`http://127.0.0.1:${healthPort}/readyz`, { signal: AbortSignal.timeout(2000) })).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(
    `${p.name} not ready after ${timeoutMs / 1000}s; last log lines of ${p.logFile}:\n${tail(p.logFile, 30)}`,
  );
}

/**
 * Starts Flux's source-controller and kustomize-controller against `context` (default dev) of
 * `kubeconfig`, or reuses the ones already running for the same binaries and cluster (pid files and
 * a lock under {@link fluxStateDir}, so test files, and concurrent runs, share one instance). Builds
 * the binaries first when needed, installs the Flux CRDs, waits for both /readyz endpoints.
 */
export async function startFlux(opts: {
  kubeconfig: string;
  context?: string;
  log?: (s: string) => void;
}): Promise<Flux> {
  const log = opts.log ?? (() => {});
  const bin = ensureFluxBinaries(log);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(opts.kubeconfig);
  kc.setCurrentContext(opts.context ?? 'dev');
  await installFluxCrds(kc, bin.crds);
  const v = versions();
  const [lease, leasePid] = currentLease();
  return withLock(async () => {
    const dir = fluxStateDir();
    mkdirSync(join(dir, 'storage'), { recursive: true });
    // One context only, so nothing depends on current-context or the controllers' context flags.
    const kubeconfig = join(dir, 'kubeconfig');
    const single = new k8s.KubeConfig();
    const ctx = kc.getContextObject(kc.getCurrentContext());
    const cluster = kc.getCurrentCluster();
    const user = kc.getCurrentUser();
    if (!ctx || !cluster || !user)
      throw new Error(`kubeconfig ${opts.kubeconfig} has no complete context ${kc.getCurrentContext()}`);
    single.loadFromOptions({ clusters: [cluster], users: [user], contexts: [ctx], currentContext: ctx.name });
    const config = single.exportConfig();
    // Other binaries, another cluster or new credentials (a cleaned and restarted cluster): restart.
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([bin.sourceController, bin.kustomizeController, config]))
      .digest('hex');
    let state = readState();
    let procs = processes(bin, kubeconfig, state?.ports ?? NO_PORTS);
    const runningOk = state?.fingerprint === fingerprint && CONTROLLERS.every((c) => isRunning(procs[c]));
    let started = false;
    if (!runningOk) {
      // Stop leftovers by their pid files (a crashed run's, or ones started for another fingerprint).
      for (const c of CONTROLLERS) await stopProcess(procs[c]);
      writeFileSync(kubeconfig, config);
      const ports = {
        storage: await freePort(),
        sourceMetrics: await freePort(),
        sourceHealth: await freePort(),
        kustomizeMetrics: await freePort(),
        kustomizeHealth: await freePort(),
      };
      state = { fingerprint, ports, leases: {} };
      procs = processes(bin, kubeconfig, ports);
      for (const c of CONTROLLERS) {
        // One log per start; the previous start's stays beside it.
        if (existsSync(procs[c].logFile)) renameSync(procs[c].logFile, `${procs[c].logFile}.prev`);
        ensureProcess(procs[c]);
      }
      started = true;
      log(
        `started Flux source-controller ${v.FLUX_SOURCE_VERSION} (artifacts on 127.0.0.1:${ports.storage}) and kustomize-controller ${v.FLUX_KUSTOMIZE_VERSION} against ${cluster.server}; logs in ${dir}`,
      );
    }
    const s = state!;
    const p = procs;
    await waitReady(p['source-controller'], s.ports.sourceHealth);
    await waitReady(p['kustomize-controller'], s.ports.kustomizeHealth);
    const sourceUrl = `http://127.0.0.1:${s.ports.storage}`;
    await waitFor('Flux artifact server', async () => (await fetch(sourceUrl)).status < 500, 30_000);
    s.leases[lease] = leasePid;
    writeState(s);
    return {
      sourceUrl,
      kubeconfig,
      logs: {
        sourceController: p['source-controller'].logFile,
        kustomizeController: p['kustomize-controller'].logFile,
      },
      versions: { sourceController: v.FLUX_SOURCE_VERSION, kustomizeController: v.FLUX_KUSTOMIZE_VERSION },
      started,
      stop: () => releaseFlux(lease).then(() => undefined),
    };
  });
}

/**
 * Drops a lease (default: this run's or this process's) and stops both controllers when no live
 * lease remains (`force`: stop them regardless). Returns whether it stopped them. A no-op when Flux
 * never ran, so a run's global teardown can call it unconditionally.
 */
export async function releaseFlux(lease = currentLease()[0], opts: { force?: boolean } = {}): Promise<boolean> {
  if (!existsSync(fluxStateDir())) return false;
  return withLock(async () => {
    const state = readState();
    if (!state && !opts.force) return false;
    if (state) {
      delete state.leases[lease];
      for (const [l, pid] of Object.entries(state.leases)) if (!alive(pid)) delete state.leases[l];
      if (!opts.force && Object.keys(state.leases).length) {
        writeState(state);
        return false;
      }
    }
    // Stopping needs only the pid files (and the binary names, against pid reuse).
    const bin = {
      sourceController: join(keyDir('source-controller'), 'bin', 'source-controller'),
      kustomizeController: join(keyDir('kustomize-controller'), 'bin', 'kustomize-controller'),
      crds: [],
    };
    const procs = processes(bin, join(fluxStateDir(), 'kubeconfig'), NO_PORTS);
    let stopped = false;
    for (const c of CONTROLLERS) if (await stopProcess(procs[c])) stopped = true;
    rmSync(statePath(), { force: true });
    return stopped;
  });
}
