import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { componentUsed } from '../cluster/need.js';
import { cacheRoot, crdFiles, runBuildScript, stateDir, versions } from '../cluster/paths.js';
import {
  describeExit,
  ensureProcess,
  hasExited,
  isRunning,
  type ManagedProcess,
  type ProcessExit,
  readPid,
  sleep,
  stopProcess,
  tail,
} from '../cluster/proc.js';
import { waitFor } from '../kube.js';
import { applyManifest, loadYaml } from '../manifests.js';
import { freePort } from '../registry/registry.js';

/**
 * The upstream Argo Rollouts controller (built from its Go module by test/argo/build.sh) running as a
 * local process against one harness cluster, in namespaced mode: it reconciles the Rollouts of one
 * namespace only, so test files never see each other's.
 */
export interface ArgoRollouts {
  /** ARGO_ROLLOUTS_VERSION of test/cluster/versions.env. */
  version: string;
  namespace: string;
  /** The controller's log file. */
  logFile: string;
  /** Whether this call started the process (false: it returned the one already running for this namespace). */
  started: boolean;
  /** Stops the controller (idempotent); later calls of {@link startArgoRollouts} start a new one. */
  stop(): Promise<void>;
}

export interface ArgoRolloutsBinaries {
  controller: string;
  /** CRD files shipped in the module (manifests/crds: Rollout, AnalysisTemplate, AnalysisRun, …). */
  crds: string[];
}

const keyDir = () => {
  const v = versions();
  return join(cacheRoot(), 'argo-rollouts', `argo-rollouts-${v.ARGO_ROLLOUTS_VERSION}_r${v.ARGO_BUILD_REV}`);
};

/**
 * Paths of the Argo Rollouts controller and its CRDs (ARGO_ROLLOUTS_VERSION in
 * test/cluster/versions.env); builds them with test/argo/build.sh (about 15 minutes cold on 2 cores,
 * mostly module downloads; needs Go) when absent. Never part of `yarn cluster start`.
 */
export function ensureArgoRolloutsBinaries(log: (s: string) => void = () => {}): ArgoRolloutsBinaries {
  componentUsed('argo');
  const dir = keyDir();
  const controller = join(dir, 'bin', 'rollouts-controller');
  if (!existsSync(controller) || !crdFiles(dir).length) {
    log(
      `building the Argo Rollouts controller ${versions().ARGO_ROLLOUTS_VERSION} into ${dir} (first time only; needs Go)…`,
    );
    runBuildScript('../argo/build.sh');
    if (!existsSync(controller) || !crdFiles(dir).length)
      throw new Error(`test/argo/build.sh finished but ${dir} is incomplete`);
  }
  return { controller, crds: crdFiles(dir) };
}

/** Installs (server-side apply, idempotent) the CRDs shipped in the module; waits until Established. */
export async function installArgoRolloutsCrds(kc: k8s.KubeConfig, files: readonly string[]): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crds = files.flatMap((f) => loadYaml(f));
  for (const crd of crds) await applyManifest(kc, crd, 'kpromo-test-argo-rollouts');
  for (const crd of crds) {
    const name = crd.metadata?.name as string;
    await waitFor(`Argo Rollouts CRD ${name} Established`, async () => {
      const c = await ext.readCustomResourceDefinition({ name });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
}

/** Runtime state: pid files, logs and kubeconfigs, one set per namespace. */
export const argoRolloutsStateDir = () => join(stateDir(), 'argo-rollouts');

/** Controllers this process started, by `kubeconfig|context|namespace`. */
const running = new Map<string, Promise<ArgoRollouts>>();
/** Pid files of the controllers this process started, stopped when it exits (a crashed test included). */
const owned = new Set<ManagedProcess>();
let exitHook = false;

/**
 * Starts the Argo Rollouts controller against `context` (default dev) of `kubeconfig`, watching
 * `namespace` only (`--namespaced`), with leader election off and its metrics/healthz ports on free
 * local ports. Idempotent per test run: a second call for the same namespace returns the running
 * controller. Builds the binary first when needed, installs the CRDs, waits for /healthz.
 */
export function startArgoRollouts(opts: {
  kubeconfig: string;
  namespace: string;
  context?: string;
  log?: (s: string) => void;
}): Promise<ArgoRollouts> {
  const key = `${opts.kubeconfig}|${opts.context ?? 'dev'}|${opts.namespace}`;
  let p = running.get(key);
  if (!p) {
    p = start(opts, key);
    running.set(key, p);
    p.catch(() => running.delete(key));
  } else {
    p = p.then((a) => ({ ...a, started: false }));
  }
  return p;
}

async function start(
  opts: { kubeconfig: string; namespace: string; context?: string; log?: (s: string) => void },
  key: string,
): Promise<ArgoRollouts> {
  const log = opts.log ?? (() => {});
  const bin = ensureArgoRolloutsBinaries(log);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(opts.kubeconfig);
  kc.setCurrentContext(opts.context ?? 'dev');
  await installArgoRolloutsCrds(kc, bin.crds);

  const dir = argoRolloutsStateDir();
  mkdirSync(dir, { recursive: true });
  // One context only, so nothing depends on the kubeconfig's current-context.
  const ctx = kc.getContextObject(kc.getCurrentContext());
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!ctx || !cluster || !user)
    throw new Error(`kubeconfig ${opts.kubeconfig} has no complete context ${kc.getCurrentContext()}`);
  const single = new k8s.KubeConfig();
  single.loadFromOptions({
    clusters: [cluster],
    users: [user],
    contexts: [{ ...ctx, namespace: opts.namespace }],
    currentContext: ctx.name,
  });
  const kubeconfig = join(dir, `${opts.namespace}.kubeconfig`);
  writeFileSync(kubeconfig, single.exportConfig());

  const pidFile = join(dir, `${opts.namespace}.pid`);
  // A controller left behind for this namespace by a crashed earlier run.
  await stopProcess({ pidFile, bin: bin.controller }, 2_000);
  // Two attempts: a CI run once saw the controller exit at start with an empty log (cause unknown;
  // a port taken between freePort and its bind is one candidate), and the second start gets fresh
  // ports. A second failure is reported with both exits.
  const failures: string[] = [];
  let proc: ManagedProcess | undefined;
  for (let attempt = 1; attempt <= 2 && !proc; attempt++) {
    const candidate = await launch(bin.controller, kubeconfig, opts.namespace, pidFile, failures);
    if (candidate) proc = candidate;
    else if (attempt === 1)
      log(`Argo Rollouts for ${opts.namespace} did not start (${failures[0]}); starting it again`);
  }
  if (!proc) throw new Error(`argo-rollouts/${opts.namespace} did not start twice:\n${failures.join('\n')}`);
  const version = versions().ARGO_ROLLOUTS_VERSION;
  log(
    `started Argo Rollouts ${version} for namespace ${opts.namespace} against ${cluster.server}; log ${proc.logFile}`,
  );
  let stopped: Promise<void> | undefined;
  const started = proc;
  return {
    version,
    namespace: opts.namespace,
    logFile: started.logFile,
    started: true,
    stop: () => {
      stopped ??= (async () => {
        running.delete(key);
        await stopProcess(started);
        owned.delete(started);
        rmSync(kubeconfig, { force: true });
      })();
      return stopped;
    },
  };
}

/**
 * Starts one controller process on fresh metrics/healthz ports and waits up to 60 s for /healthz.
 * Returns the process when healthy; when it exits first, pushes how it ended (exit code or signal,
 * last log lines) to `failures` and returns undefined. Not healthy in time is thrown.
 */
async function launch(
  controller: string,
  kubeconfig: string,
  namespace: string,
  pidFile: string,
  failures: string[],
): Promise<ManagedProcess | undefined> {
  const [metricsPort, healthzPort] = [await freePort(), await freePort()];
  const proc: ManagedProcess = {
    name: `argo-rollouts/${namespace}`,
    bin: controller,
    pidFile,
    logFile: join(argoRolloutsStateDir(), `${namespace}.log`),
    // Notifications read their ConfigMap/Secret from the controller's own namespace: this one.
    env: { POD_NAMESPACE: namespace },
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--namespace=${namespace}`,
      '--namespaced',
      '--leader-elect=false',
      `--metricsPort=${metricsPort}`,
      `--healthzPort=${healthzPort}`,
      '--loglevel=info',
      '--logformat=text',
    ],
  };
  rmSync(proc.logFile, { force: true });
  let exit: ProcessExit | undefined;
  ensureProcess(proc, (e) => {
    exit = e;
  });
  owned.add(proc);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const p of owned) {
        const pid = readPid(p.pidFile);
        if (pid && isRunning(p)) process.kill(pid, 'SIGKILL');
      }
    });
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exit || hasExited(proc)) {
      owned.delete(proc);
      failures.push(
        `${proc.name} exited (${describeExit(exit)}; ports ${metricsPort}/${healthzPort}); last log lines of ${proc.logFile}:\n${tail(proc.logFile, 30) || '(empty)'}`,
      );
      return undefined;
    }
    try {
      if ((await fetch(`http://127.0.0.1:${healthzPort}/healthz`, { signal: AbortSignal.timeout(2000) })).ok)
        return proc;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(
        `${proc.name} not healthy after 60s; last log lines of ${proc.logFile}:\n${tail(proc.logFile, 30)}`,
      );
    await sleep(200);
  }
}
